"""`python -m mcp_calendar import|export`: event by event (what is valid is imported, what
is not is named with its reason), re-import safe by UID, events moved by --calendar, and an
export that imports back to the same calendar. Files as Exchange and Google write them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from icalendar import Calendar

from calendar_server.calls import day
from fakes.tool_calls import call
from mcp_calendar.ics_files import import_file
from mcp_calendar.settings import CalendarSettings

pytestmark = pytest.mark.anyio

FAMILY = """\
BEGIN:VCALENDAR
VERSION:2.0
PRODID:-//Example Corp.//Family//EN
BEGIN:VTIMEZONE
TZID:Europe/Berlin
BEGIN:STANDARD
DTSTART:19701025T030000
TZOFFSETFROM:+0200
TZOFFSETTO:+0100
RRULE:FREQ=YEARLY;BYMONTH=10;BYDAY=-1SU
END:STANDARD
BEGIN:DAYLIGHT
DTSTART:19700329T020000
TZOFFSETFROM:+0100
TZOFFSETTO:+0200
RRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU
END:DAYLIGHT
END:VTIMEZONE
BEGIN:VEVENT
UID:swim-1@example.com
SUMMARY:Swimming
DTSTART;TZID=Europe/Berlin:20260317T170000
DTEND;TZID=Europe/Berlin:20260317T180000
RRULE:FREQ=WEEKLY;BYDAY=TU
EXDATE;TZID=Europe/Berlin:20260324T170000
END:VEVENT
BEGIN:VEVENT
UID:swim-1@example.com
RECURRENCE-ID;TZID=Europe/Berlin:20260331T170000
SUMMARY:Swimming (late)
DTSTART;TZID=Europe/Berlin:20260331T190000
DTEND;TZID=Europe/Berlin:20260331T200000
END:VEVENT
BEGIN:VEVENT
UID:dentist-7@example.com
SUMMARY:Dentist
DTSTART:20260317T140000Z
DTEND:20260317T144500Z
LOCATION:Main St 4
END:VEVENT
BEGIN:VEVENT
UID:camp@example.com
SUMMARY:School camp
DTSTART;VALUE=DATE:20260318
DTEND;VALUE=DATE:20260321
END:VEVENT
BEGIN:VEVENT
UID:floating@example.com
SUMMARY:Breakfast
DTSTART:20260317T080000
DTEND:20260317T083000
END:VEVENT
END:VCALENDAR
"""
BROKEN = """\
BEGIN:VCALENDAR
VERSION:2.0
PRODID:-//test//EN
BEGIN:VEVENT
UID:ok@example.com
SUMMARY:Fine
DTSTART:20260317T140000Z
END:VEVENT
BEGIN:VEVENT
UID:bad-1@example.com
SUMMARY:Backwards
DTSTART:20260317T140000Z
DTEND:20260317T130000Z
RRULE:FREQ=WEEKLY
END:VEVENT
BEGIN:VEVENT
UID:bad-2@example.com
SUMMARY:Garbled
DTSTART:2026-03-17 soon
END:VEVENT
BEGIN:VEVENT
SUMMARY:No uid
DTSTART:20260317T140000Z
END:VEVENT
BEGIN:VEVENT
UID:orphan@example.com
RECURRENCE-ID:20260317T140000Z
SUMMARY:Orphan
DTSTART:20260317T150000Z
END:VEVENT
END:VCALENDAR
"""


def run(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [Path(sys.executable).with_name("clawmesh"), "calendar", *args],
        env={
            **os.environ,
            "DATA_DIR": str(data_dir),
            "CALENDAR_TIMEZONE": "Europe/Berlin",
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def family(tmp_path: Path) -> Path:
    path = tmp_path / "family.ics"
    path.write_text(FAMILY.replace("\n", "\r\n"), encoding="utf-8")
    return path


async def test_an_imported_file_is_read_with_its_series_exceptions_and_zones(
    family: Path, client: Client[Any], tmp_path: Path
) -> None:
    done = run(tmp_path / "data", "import", str(family))

    assert (done.returncode, done.stdout, done.stderr) == (
        0,
        "imported 4 events (0 unchanged) into calendar personal\n",
        "",
    )
    assert await day(client, "2026-03-17", end="2026-03-31") == [
        ("Breakfast", "2026-03-17T08:00:00+01:00", "2026-03-17T08:30:00+01:00"),  # floating
        ("Dentist", "2026-03-17T15:00:00+01:00", "2026-03-17T15:45:00+01:00"),
        ("Swimming", "2026-03-17T17:00:00+01:00", "2026-03-17T18:00:00+01:00"),
        ("School camp", "2026-03-18", "2026-03-20"),
        ("Swimming (late)", "2026-03-31T19:00:00+02:00", "2026-03-31T20:00:00+02:00"),
    ]


async def test_importing_the_same_file_again_changes_nothing(family: Path, tmp_path: Path) -> None:
    run(tmp_path / "data", "import", str(family))

    again = run(tmp_path / "data", "import", str(family))

    assert again.stdout == "imported 0 events (4 unchanged) into calendar personal\n"


async def test_a_file_with_bad_events_imports_the_rest_naming_each_skipped_one(
    tmp_path: Path, client: Client[Any]
) -> None:
    path = tmp_path / "broken.ics"
    path.write_text(BROKEN.replace("\n", "\r\n"), encoding="utf-8")

    done = run(tmp_path / "data", "import", str(path))
    again = run(tmp_path / "data", "import", str(path))

    assert (done.returncode, done.stderr) == (0, "")
    lines = done.stdout.splitlines()
    assert lines[:4] == [
        "imported 3 events (0 unchanged) into calendar personal",
        "skipped 2 events:",
        "  UID bad-1@example.com: it ends before it starts",
        "  UID bad-2@example.com: DTSTART does not parse (Wrong datetime format: 2026-03-17 soon)",
    ]
    derived = lines[4].removeprefix("  warning: event 4 (“No uid”): it has no UID: it was given ")
    assert derived.endswith("@import.clawmesh")
    assert lines[5:] == [
        "  warning: UID orphan@example.com: changed occurrences without their series: "
        "imported as single events"
    ]
    assert again.stdout.splitlines()[0] == (
        "imported 0 events (3 unchanged) into calendar personal"  # the derived UID is stable
    )
    assert await day(client, "2026-03-17") == [
        ("Fine", "2026-03-17T15:00:00+01:00", "2026-03-17T15:00:00+01:00"),
        ("No uid", "2026-03-17T15:00:00+01:00", "2026-03-17T15:00:00+01:00"),
        ("Orphan", "2026-03-17T16:00:00+01:00", "2026-03-17T16:00:00+01:00"),
    ]


def test_a_file_of_which_nothing_can_be_imported_exits_1_naming_why(tmp_path: Path) -> None:
    only_bad = tmp_path / "bad.ics"
    only_bad.write_text(
        calendar(
            event(
                "UID:bad-1@example.com",
                "DTSTART:20260317T140000Z",
                "DTEND:20260317T130000Z",
                "RRULE:FREQ=WEEKLY",
            ),
            event("UID:bad-2@example.com", "DTSTART:2026-03-17 soon"),
        )
    )
    no_calendar = tmp_path / "notes.ics"
    no_calendar.write_text("Dear diary,\ntoday nothing happened.\n")

    bad = run(tmp_path / "data", "import", str(only_bad))
    notes = run(tmp_path / "data", "import", str(no_calendar))
    helped = run(tmp_path / "data", "import", "--help")

    assert (bad.returncode, bad.stdout) == (1, "")
    assert bad.stderr.splitlines() == [
        "  UID bad-1@example.com: it ends before it starts",
        "  UID bad-2@example.com: DTSTART does not parse (Wrong datetime format: 2026-03-17 soon)",
        f"Error: {only_bad}: nothing was imported - the lines above say why",
    ]
    assert (notes.returncode, notes.stdout) == (1, "")
    assert notes.stderr.splitlines() == [
        "  not an iCalendar file: it holds no BEGIN:VCALENDAR",
        f"Error: {no_calendar}: nothing was imported - the lines above say why",
    ]
    assert "Exit status: 0 when events were imported (even with some skipped), 1 when none" in (
        " ".join(helped.stdout.split())
    )


def test_a_skipped_event_without_uid_is_named_by_its_place_not_a_derived_uid(
    tmp_path: Path,
) -> None:
    # icalendar's tests/calendars/issue_82_expected_output.ics: no UID, no DTSTART.
    path = tmp_path / "no-uid.ics"
    path.write_text(
        calendar(
            event("UID:fine@example.com", "SUMMARY:Fine", "DTSTART:20260317T140000Z"),
            event("SUMMARY:Nothing to show", "DTSTAMP:20260301T100000Z"),
        )
    )

    done = run(tmp_path / "data", "import", str(path))

    assert done.stdout.splitlines()[1:] == [
        "skipped 1 event:",
        "  event 2 (“Nothing to show”): no start (DTSTART)",
    ]  # and no warning of a UID given to an event that was not imported


def test_a_missing_file_and_a_bad_calendar_name_get_one_line(tmp_path: Path) -> None:
    missing = run(tmp_path / "data", "import", str(tmp_path / "nope.ics"))
    bad_name = run(tmp_path / "data", "import", str(tmp_path / "nope.ics"), "--calendar", "My Cal")

    assert (missing.returncode, missing.stderr) == (
        1,
        f"Error: cannot read {tmp_path / 'nope.ics'}: No such file or directory - check the path\n",
    )
    assert bad_name.returncode == 2
    assert bad_name.stderr.splitlines() == [
        "Error: --calendar 'My Cal' is not a calendar id - use lowercase letters, digits, - and _ "
        "(e.g. holidays)"
    ]


async def test_an_export_imports_back_to_the_same_calendar(
    family: Path, tmp_path: Path, client: Client[Any]
) -> None:
    run(tmp_path / "data", "import", str(family), "--calendar", "family", "--read-only")
    exported = tmp_path / "out.ics"
    assert run(tmp_path / "data", "export", str(exported)).returncode == 0

    other = tmp_path / "other"
    again = run(other, "import", str(exported), "--calendar", "family")
    shown = await call(client, "get_events", start="2026-03-16", end="2026-04-30")
    writable = await call(client, "list_calendars")

    assert again.stdout == "imported 4 events (0 unchanged) into calendar family\n"
    assert "BEGIN:VTIMEZONE" in exported.read_text()
    assert {"id": "family", "name": "Family", "writable": False} in writable["calendars"]
    reexported = run(other, "export").stdout
    assert sorted(_events(reexported)) == sorted(_events(exported.read_text()))
    assert len(shown["events"]) == 9  # 4 events, a weekly series of 6 in range less 1


def _events(text: str) -> list[str]:
    """The VEVENT blocks of an export, each as its text."""
    blocks = text.replace("\r\n", "\n").split("BEGIN:VEVENT")[1:]
    return [block.split("END:VEVENT")[0] for block in blocks]


FLOATING_SERIES = b"""BEGIN:VCALENDAR\r
VERSION:2.0\r
PRODID:-//test//EN\r
BEGIN:VEVENT\r
UID:piano@example.com\r
SUMMARY:Piano\r
DTSTART:20260318T160000\r
DTEND:20260318T164500\r
RRULE:FREQ=WEEKLY;COUNT=3\r
EXDATE:20260325T160000\r
END:VEVENT\r
END:VCALENDAR\r
"""


async def test_a_floating_series_and_its_exceptions_are_read_in_the_calendars_zone(
    client: Client[Any], settings: CalendarSettings
) -> None:
    await import_file(settings, FLOATING_SERIES, "personal", writable=True, at=0)

    assert await day(client, "2026-03-16", end="2026-04-30") == [
        ("Piano", "2026-03-18T16:00:00+01:00", "2026-03-18T16:45:00+01:00"),
        ("Piano", "2026-04-01T16:00:00+02:00", "2026-04-01T16:45:00+02:00"),
    ]


def test_an_import_into_a_damaged_database_stops_with_one_line(
    family: Path, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / "calendar.sqlite3").write_bytes(b"not a database, only garbage " * 300)

    done = run(data_dir, "import", str(family))
    export = run(data_dir, "export")

    for result in (done, export):
        assert (result.returncode, result.stdout) == (2, "")
        assert result.stderr.splitlines() == [
            f"Error: cannot use the database {data_dir / 'calendar.sqlite3'}: the file is not a "
            "SQLite database - restore the file from a backup, or move it aside to start with "
            "an empty one"
        ]


DATA = Path(__file__).parent / "exports"


async def test_an_exchange_all_day_series_with_a_utc_until_keeps_its_last_day(
    client: Client[Any], settings: CalendarSettings
) -> None:
    # UNTIL=20260326T230000Z: the start of Fri 27 March in Berlin (the zone of the file's
    # VTIMEZONE), Exchange's last day; imported by a calendar in New York.
    text = (DATA / "exchange_allday_until.ics").read_bytes()
    elsewhere = settings.model_copy(update={"timezone": "America/New_York"})

    done = await import_file(elsewhere, text, "personal", writable=True, at=0)

    assert (done.changed, done.skipped, done.warnings) == (1, [], [])
    assert await day(client, "2026-03-20", end="2026-04-05") == [
        ("Trade fair", f"2026-03-{n}", f"2026-03-{n}") for n in range(23, 28)
    ]


async def test_a_google_export_keeps_a_date_until_day_and_a_lone_changed_occurrence(
    tmp_path: Path, client: Client[Any]
) -> None:
    done = run(tmp_path / "data", "import", str(DATA / "google_family.ics"))

    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == [
        "imported 2 events (0 unchanged) into calendar personal",
        "  warning: UID 5f2c8d1e9a3b4c7d8e0f1a2b3c@google.com: changed occurrences without "
        "their series: imported as single events",
    ]
    assert await day(client, "2026-03-16", end="2026-04-12") == [
        ("Choir", "2026-03-17T18:30:00+01:00", "2026-03-17T19:30:00+01:00"),
        ("Design review", "2026-03-19T10:00:00+01:00", "2026-03-19T11:00:00+01:00"),
        ("Choir", "2026-03-24T18:30:00+01:00", "2026-03-24T19:30:00+01:00"),
        ("Choir", "2026-03-31T18:30:00+02:00", "2026-03-31T19:30:00+02:00"),
        ("Choir", "2026-04-07T18:30:00+02:00", "2026-04-07T19:30:00+02:00"),  # UNTIL's day
    ]


def calendar(*events: str) -> str:
    return (
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\n"
        + "".join(events)
        + "END:VCALENDAR\r\n"
    )


def event(*lines: str) -> str:
    return "BEGIN:VEVENT\r\n" + "".join(f"{line}\r\n" for line in lines) + "END:VEVENT\r\n"


async def test_several_calendars_repeated_uids_and_bad_stamps_import_with_warnings(
    client: Client[Any], settings: CalendarSettings
) -> None:
    text = calendar(
        event("UID:piano@x", "SEQUENCE:2", "SUMMARY:Piano (moved)", "DTSTART:20260318T150000Z"),
        event("UID:piano@x", "SEQUENCE:0", "SUMMARY:Piano", "DTSTART:20260318T140000Z"),
    ) + calendar(
        event("UID:gym@x", "DTSTAMP:yesterday", "SUMMARY:Gym", "DTSTART:20260318T170000Z"),
    )

    done = await import_file(settings, text.encode(), "personal", writable=True, at=0)

    assert (done.changed, done.skipped) == (2, [])
    assert done.warnings == [
        "event 3 (“Gym”): its DTSTAMP does not parse and was left out",
        "UID piano@x: 2 copies of the event: the highest SEQUENCE was kept",
    ]
    assert await day(client, "2026-03-18") == [
        ("Piano (moved)", "2026-03-18T16:00:00+01:00", "2026-03-18T16:00:00+01:00"),
        ("Gym", "2026-03-18T18:00:00+01:00", "2026-03-18T18:00:00+01:00"),
    ]


TRACEBACKS_BEFORE = calendar(
    event(
        "UID:two-rules@x",
        "SUMMARY:Two rules",
        "DTSTART:20260316T090000Z",
        "RRULE:FREQ=WEEKLY;COUNT=2",
        "RRULE:FREQ=MONTHLY;COUNT=2",
    ),
    event(
        "UID:end-and-duration@x",
        "SUMMARY:Both ends",
        "DTSTART:20260316T100000Z",
        "DTEND:20260316T110000Z",
        "DURATION:PT2H",
    ),
    event(
        "UID:two-starts@x",
        "SUMMARY:Two starts",
        "DTSTART:20260316T120000Z",
        "DTSTART:20260316T130000Z",
    ),
    "BEGIN:VTIMEZONE\r\nTZID:Custom A\r\nTZID:Custom B\r\nBEGIN:STANDARD\r\n"
    "DTSTART:19700101T000000\r\nTZOFFSETFROM:+0300\r\nTZOFFSETTO:+0300\r\nEND:STANDARD\r\n"
    "END:VTIMEZONE\r\n",
    event("UID:custom@x", "SUMMARY:Custom", "DTSTART;TZID=Custom A:20260316T170000"),
)


async def test_inputs_that_gave_tracebacks_are_imported_or_skipped_in_one_line_each(
    tmp_path: Path, client: Client[Any]
) -> None:
    path = tmp_path / "odd.ics"
    path.write_text(TRACEBACKS_BEFORE)

    done = run(tmp_path / "data", "import", str(path))

    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == [
        "imported 3 events (0 unchanged) into calendar personal",
        "skipped 1 event:",
        "  UID two-starts@x: it has more than one DTSTART",
        "  warning: a VTIMEZONE names more than one TZID: the first was used",
        "  warning: event 1 (“Two rules”): it has 2 RRULEs: the first is its rule, the dates "
        "of the others were added as RDATEs",
        "  warning: event 2 (“Both ends”): it has both DTEND and DURATION: DTEND was used",
    ]
    assert await day(client, "2026-03-16") == [
        ("Two rules", "2026-03-16T10:00:00+01:00", "2026-03-16T10:00:00+01:00"),
        ("Both ends", "2026-03-16T11:00:00+01:00", "2026-03-16T12:00:00+01:00"),
        ("Custom", "2026-03-16T15:00:00+01:00", "2026-03-16T15:00:00+01:00"),
    ]


async def test_a_series_with_several_rrules_fires_on_the_dates_of_each(
    tmp_path: Path, client: Client[Any]
) -> None:
    # recurring-ical-events' test calendars: Cyrus IMAP (Fastmail) writes the same RRULE
    # twice; multiple_rrule.ics adds a second, monthly one (RFC 5545 allows several).
    calendars = Path(sys.modules["recurring_ical_events"].__file__ or "").parent / "test"
    for name in ("duplicated_rrule", "multiple_rrule"):
        text = (calendars / "calendars" / f"{name}.ics").read_text()
        text = text.replace("UID:56cdc4dc", f"UID:{name}").replace("My repeating event", name)
        (tmp_path / f"{name}.ics").write_text(text)

    done = [
        run(tmp_path / "data", "import", str(tmp_path / f"{n}.ics"))
        for n in ("duplicated_rrule", "multiple_rrule")
    ]
    found = await call(
        client, "get_events", start="2023-01-01", end="2023-04-01", timezone="Europe/London"
    )

    assert [d.returncode for d in done] == [0, 0]
    days = {
        name: [e["start"][:10] for e in found["events"] if e["title"] == name]
        for name in ("duplicated_rrule", "multiple_rrule")
    }
    assert len(days["duplicated_rrule"]) == 12  # Thursdays 12 Jan to 30 Mar, once each
    assert sorted(set(days["multiple_rrule"]) - set(days["duplicated_rrule"])) == [
        "2023-02-13",  # the second rule's Mondays
        "2023-03-13",
    ]


async def test_a_single_event_that_ends_before_it_starts_has_them_swapped(
    tmp_path: Path, client: Client[Any]
) -> None:
    # recurring-ical-events' end_before_start_event.ics, as SabreDAV (Nextcloud) wrote it.
    calendars = Path(sys.modules["recurring_ical_events"].__file__ or "").parent / "test"
    path = calendars / "calendars" / "end_before_start_event.ics"

    done = run(tmp_path / "data", "import", str(path))

    assert done.stdout.splitlines() == [
        "imported 1 event (0 unchanged) into calendar personal",
        "  warning: event 1 (“test1”): it ends before it starts: its start and end were swapped",
    ]
    assert await day(client, "2019-03-04") == [
        ("test1", "2019-03-04T08:00:00+01:00", "2019-03-04T08:30:00+01:00")
    ]


async def test_an_end_of_another_type_than_the_start_is_made_the_starts_type(
    tmp_path: Path, client: Client[Any]
) -> None:
    # recurring-ical-events' issue_201_mixed_datetime_and_date.ics: a DATE start, a UTC end.
    calendars = Path(sys.modules["recurring_ical_events"].__file__ or "").parent / "test"
    path = calendars / "calendars" / "issue_201_mixed_datetime_and_date.ics"

    done = run(tmp_path / "data", "import", str(path))

    assert done.stdout.splitlines()[0] == "imported 1 event (0 unchanged) into calendar personal"
    assert "the end was made the start's type" in done.stdout
    assert await day(client, "2023-08-16") == [("Congés", "2023-07-24", "2023-08-16")]


FLOATING_UNTIL = b"""BEGIN:VCALENDAR\r
VERSION:2.0\r
PRODID:-//test//EN\r
BEGIN:VEVENT\r
UID:violin@example.com\r
SUMMARY:Violin\r
DTSTART:20260318T160000\r
DTEND:20260318T164500\r
RRULE:FREQ=WEEKLY;UNTIL=20260401T160000\r
END:VEVENT\r
END:VCALENDAR\r
"""


async def test_a_floating_series_with_a_floating_until_exports_and_imports_back(
    tmp_path: Path, client: Client[Any]
) -> None:
    path = tmp_path / "violin.ics"
    path.write_bytes(FLOATING_UNTIL)
    first = run(tmp_path / "first", "import", str(path))
    exported = tmp_path / "out.ics"
    run(tmp_path / "first", "export", str(exported))

    again = run(tmp_path / "data", "import", str(exported))

    assert first.returncode == 0
    assert (again.returncode, again.stdout) == (
        0,
        "imported 1 event (0 unchanged) into calendar personal\n",
    )
    assert "UNTIL=20260401T140000Z" in exported.read_text()  # 16:00 in Berlin, as UTC
    assert [start for _, start, _ in await day(client, "2026-03-16", end="2026-04-12")] == [
        "2026-03-18T16:00:00+01:00",
        "2026-03-25T16:00:00+01:00",
        "2026-04-01T16:00:00+02:00",
    ]


async def test_importing_into_another_calendar_moves_the_events_and_says_so(
    family: Path, tmp_path: Path, client: Client[Any]
) -> None:
    run(tmp_path / "data", "import", str(family))

    moved = run(tmp_path / "data", "import", str(family), "--calendar", "family")
    listed = await call(client, "get_events", start="2026-03-17", calendar="family")
    left = await call(client, "get_events", start="2026-03-17", calendar="personal")

    assert moved.stdout == (
        "imported 4 events (0 unchanged) into calendar family; moved 4 from calendar personal\n"
    )
    assert len(listed["events"]) == 3
    assert left["events"] == []


async def test_an_export_writes_the_vtimezone_the_file_gave(family: Path, tmp_path: Path) -> None:
    run(tmp_path / "data", "import", str(family))

    exported = Calendar.from_ical(run(tmp_path / "data", "export").stdout)

    assert exported.walk("VTIMEZONE") == Calendar.from_ical(FAMILY).walk("VTIMEZONE")


async def test_a_local_until_ends_the_series_and_the_latest_change_of_an_occurrence_wins(
    client: Client[Any], settings: CalendarSettings
) -> None:
    text = calendar(
        event(
            "UID:yoga@x",
            "SUMMARY:Yoga",
            "DTSTART;TZID=Europe/Berlin:20260316T070000",
            "DTEND;TZID=Europe/Berlin:20260316T080000",
            "RRULE:FREQ=DAILY;UNTIL=20260318T070000",  # local, beside a TZID start
        ),
        event(
            "UID:yoga@x",
            "SEQUENCE:3",
            "SUMMARY:Yoga (late)",
            "RECURRENCE-ID;TZID=Europe/Berlin:20260317T070000",
            "DTSTART;TZID=Europe/Berlin:20260317T090000",
        ),
        event(
            "UID:yoga@x",
            "SEQUENCE:1",
            "SUMMARY:Yoga (early)",
            "RECURRENCE-ID;TZID=Europe/Berlin:20260317T070000",
            "DTSTART;TZID=Europe/Berlin:20260317T060000",
        ),
    )

    done = await import_file(settings, text.encode(), "personal", writable=True, at=0)

    assert (done.changed, done.skipped) == (1, [])
    assert done.warnings == [
        "UID yoga@x: an occurrence is changed more than once: the highest SEQUENCE was kept"
    ]
    assert [(t, s) for t, s, _ in await day(client, "2026-03-16", end="2026-03-22")] == [
        ("Yoga", "2026-03-16T07:00:00+01:00"),
        ("Yoga (late)", "2026-03-17T09:00:00+01:00"),
        ("Yoga", "2026-03-18T07:00:00+01:00"),
    ]


ICALENDAR_CALENDARS = Path(sys.modules["icalendar"].__file__ or "").parent / "tests" / "calendars"


async def test_a_stray_line_and_a_file_cut_short_still_import_what_they_hold(
    tmp_path: Path, client: Client[Any], settings: CalendarSettings
) -> None:
    # A stray "X" line between components (icalendar's test calendar from its issue 104),
    # and Google's export cut off inside its second event (a download that broke off).
    stray = (ICALENDAR_CALENDARS / "issue_104_broken_calendar.ics").read_bytes()
    google = (DATA / "google_family.ics").read_bytes()
    cut = google[: google.index(b"ORGANIZER")]

    first = await import_file(settings, stray, "personal", writable=True, at=0)
    second = await import_file(settings, cut, "personal", writable=True, at=0)

    assert first.warnings[0] == "lines that are no iCalendar content line were left out"
    assert second.warnings[0] == (
        "the file ends before END:VCALENDAR: it was read up to its last whole event"
    )
    assert (first.changed, second.changed) == (1, 1)
    assert [title for title, *_ in await day(client, "2014-04-01")] == ["Broken Eevnt"]
    assert [title for title, *_ in await day(client, "2026-03-17")] == ["Choir"]
