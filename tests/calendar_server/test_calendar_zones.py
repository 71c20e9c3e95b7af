"""Time zones as Outlook, Exchange and other producers write them: Windows names read as
their IANA zone, custom VTIMEZONEs with their own rules (per file: never mixed), a TZID
that names nothing read in the calendar's zone and said so, and times that keep their wall
clock in their zone across a DST change. A VTIMEZONE whose parts change the offset more
often than a zone does is refused in one line at import, and an event stored in one is left
out of reads and counted in /health."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, cast
from zoneinfo import ZoneInfo

import httpx2
import pytest
from fastmcp import Client
from icalendar import Calendar, Event

from calendar_server.calls import add, approve, propose
from fakes.clock import Clock
from fakes.tool_calls import call
from mcp_calendar.ics_files import export_calendar, import_file
from mcp_calendar.ics_reader import read_events
from mcp_calendar.local import row
from mcp_calendar.server import build_server
from mcp_calendar.settings import CalendarSettings
from mcp_calendar.store import CalendarStore, StoredCalendar

pytestmark = pytest.mark.anyio

DATA = Path(__file__).parent / "exports"
LIBRARIES = Path(sys.modules["icalendar"].__file__ or "").parent.parent
RECURRING_CALENDARS = LIBRARIES / "recurring_ical_events" / "test" / "calendars"
NEW_YORK = "America/New_York"


def run(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcp_calendar", *args],
        env={**os.environ, "DATA_DIR": str(data_dir), "CALENDAR_TIMEZONE": "Europe/Berlin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


async def events(client: Client[Any], start: str, end: str, zone: str) -> list[Any]:
    found = await call(client, "get_events", start=start, end=end, timezone=zone)
    return [(e["title"], e["start"], e["end"], e.get("event_timezone")) for e in found["events"]]


async def test_a_weekly_outlook_meeting_stays_at_11_after_the_us_dst_change_without_its_cancelled_dates(  # noqa: E501
    client: Client[Any], tmp_path: Path
) -> None:
    done = run(tmp_path / "data", "import", str(DATA / "outlook_eastern_weekly.ics"))

    shown = await events(client, "2026-02-23", "2026-05-10", NEW_YORK)

    assert (done.returncode, done.stdout, done.stderr) == (
        0,
        "imported 1 event (0 unchanged) into calendar personal\n",
        "",
    )
    days = ["02-26", "03-05", "03-12", "03-26", "04-09", "04-16", "04-23", "04-30"]
    offsets = ["-05:00", "-05:00"] + ["-04:00"] * 6  # the US changes clocks on 8 March
    assert shown == [
        (
            "Team sync",
            f"2026-{day}T11:00:00{offset}",
            f"2026-{day}T12:00:00{offset}",
            NEW_YORK,
        )
        for day, offset in zip(days, offsets, strict=True)
    ]


async def test_an_exchange_w_europe_calendar_is_read_in_berlin_time(
    client: Client[Any], settings: CalendarSettings
) -> None:
    # Exchange Server 2010: VTIMEZONE "W. Europe Standard Time", a daily series with a
    # floating UNTIL and an EXDATE in UTC (recurring-ical-events' test calendar issue 27).
    text = (RECURRING_CALENDARS / "issue_27_t1.ics").read_bytes()

    done = await import_file(settings, text, "personal", writable=True, at=0)
    shown = await events(client, "2020-04-25", "2020-05-02", "Europe/Berlin")

    assert (done.changed, done.skipped) == (1, [])
    assert [start for _, start, _, _ in shown] == [
        "2020-04-26T14:00:00+02:00",
        "2020-04-28T14:00:00+02:00",  # 27 April is cancelled (EXDATE 12:00Z)
    ]


async def test_a_posix_tzid_is_read_as_its_iana_zone_not_the_files_vtimezone(
    client: Client[Any], settings: CalendarSettings
) -> None:
    # icalendar's test calendar timezone_rdate.ics: TZID=posix/Europe/Vaduz with its
    # VTIMEZONE. icalendar knows no "posix/" name, so it reads the file's rules and keeps
    # them for that TZID in the process: the time was right, its zone named "UTC".
    text = (LIBRARIES / "icalendar" / "tests" / "calendars" / "timezone_rdate.ics").read_bytes()

    done = await import_file(settings, text, "personal", writable=True, at=0)
    shown = await events(client, "2012-02-13", "2012-02-14", "Europe/Berlin")

    assert done.changed == 1
    assert shown == [("", "2012-02-13T10:00:00+01:00", "2012-02-13T10:00:00+01:00", "Europe/Vaduz")]


CUSTOM_ELSEWHERE = """\
BEGIN:VTIMEZONE\r
TZID:Customized Time Zone\r
BEGIN:STANDARD\r
DTSTART:16010101T000000\r
TZOFFSETFROM:+0530\r
TZOFFSETTO:+0530\r
END:STANDARD\r
END:VTIMEZONE\r
"""


def _custom_variant() -> bytes:
    """The same Outlook file from a user whose custom zone is +05:30 all year."""
    text = (DATA / "outlook_custom_zone.ics").read_bytes().decode()
    head, rest = text.split("BEGIN:VTIMEZONE", 1)
    _, tail = rest.split("END:VTIMEZONE\r\n", 1)
    tail = tail.replace("UID:0400", "UID:0500").replace("Stand-up", "Stand-up (Pune)")
    return (head + CUSTOM_ELSEWHERE + tail).encode()


async def test_a_custom_vtimezone_uses_its_own_rules_and_two_files_with_one_tzid_never_mix(
    client: Client[Any], settings: CalendarSettings
) -> None:
    first = (DATA / "outlook_custom_zone.ics").read_bytes()
    await import_file(settings, first, "personal", writable=True, at=0)
    await import_file(settings, _custom_variant(), "personal", writable=True, at=0)

    shown = await events(client, "2026-03-01", "2026-04-10", "UTC")

    # Its DST starts on the 2nd Sunday of March (8 March), unlike Berlin's (29 March).
    ours = [s for title, s, _, _ in shown if title == "Stand-up"]
    assert ours == [
        "2026-03-02T08:00:00+00:00",
        *(f"2026-{day}T07:00:00+00:00" for day in ("03-09", "03-16", "03-23", "03-30", "04-06")),
    ]
    theirs = [s for title, s, _, _ in shown if title == "Stand-up (Pune)"]
    assert theirs == [
        f"2026-{day}T03:30:00+00:00"
        for day in ("03-02", "03-09", "03-16", "03-23", "03-30", "04-06")
    ]
    assert {zone for *_, zone in shown} == {"Customized Time Zone"}


async def test_an_export_keeps_a_custom_vtimezone_and_imports_back_to_the_same_times(
    tmp_path: Path, client: Client[Any]
) -> None:
    run(tmp_path / "first", "import", str(DATA / "outlook_custom_zone.ics"))
    exported = tmp_path / "out.ics"
    assert run(tmp_path / "first", "export", str(exported)).returncode == 0

    again = run(tmp_path / "data", "import", str(exported))
    shown = await events(client, "2026-03-01", "2026-04-10", "UTC")

    original = (DATA / "outlook_custom_zone.ics").read_text()  # \n line ends, as exported
    vtimezone = original[original.index("BEGIN:VTIMEZONE") : original.index("END:VTIMEZONE")]
    assert vtimezone in exported.read_text()
    assert again.stdout == "imported 1 event (0 unchanged) into calendar personal\n"
    assert [s for _, s, _, _ in shown][:2] == [
        "2026-03-02T08:00:00+00:00",
        "2026-03-09T07:00:00+00:00",
    ]


UNKNOWN_ZONE = b"""BEGIN:VCALENDAR\r
VERSION:2.0\r
PRODID:-//Example//Hand-written//EN\r
BEGIN:VEVENT\r
UID:mars@example.com\r
SUMMARY:Call with the rover team\r
DTSTART;TZID=Mars/Olympus_Mons:20260320T150000\r
DTEND;TZID=Mars/Olympus_Mons:20260320T160000\r
END:VEVENT\r
BEGIN:VEVENT\r
UID:planning@example.com\r
SUMMARY:Planning\r
DTSTART;TZID=W. Europe Standard Time:20260323T090000\r
DTEND;TZID=W. Europe Standard Time:20260323T100000\r
END:VEVENT\r
BEGIN:VEVENT\r
UID:allday@example.com\r
SUMMARY:Offsite\r
DTSTART;TZID=W. Europe Standard Time;VALUE=DATE:20260323\r
DTEND;TZID=W. Europe Standard Time;VALUE=DATE:20260324\r
END:VEVENT\r
END:VCALENDAR\r
"""


async def test_a_tzid_that_names_nothing_is_read_in_the_calendars_zone_and_said_so(
    tmp_path: Path, client: Client[Any]
) -> None:
    path = tmp_path / "unknown.ics"
    path.write_bytes(UNKNOWN_ZONE)

    done = run(tmp_path / "data", "import", str(path))
    shown = await events(client, "2026-03-20", "2026-03-25", "Europe/Berlin")

    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == [
        "imported 3 events (0 unchanged) into calendar personal",
        "  warning: the time zone “Mars/Olympus_Mons” is unknown and the file does not "
        "define it: its times were read in Europe/Berlin (CALENDAR_TIMEZONE)",
    ]
    assert shown == [
        (
            "Call with the rover team",
            "2026-03-20T15:00:00+01:00",
            "2026-03-20T16:00:00+01:00",
            "Europe/Berlin",
        ),
        ("Offsite", "2026-03-23", "2026-03-23", None),  # VALUE=DATE: all day
        (
            "Planning",  # a Windows name without its VTIMEZONE
            "2026-03-23T09:00:00+01:00",
            "2026-03-23T10:00:00+01:00",
            "Europe/Berlin",
        ),
    ]


async def test_floating_times_are_read_in_the_files_x_wr_timezone(
    client: Client[Any], settings: CalendarSettings
) -> None:
    # X-WR-TIMEZONE:Europe/Brussels and floating times (recurring-ical-events' issue 86),
    # imported by a calendar whose own zone is New York's.
    text = (RECURRING_CALENDARS / "issue_86_x_wr_timezone_without_time_zone_in_dt.ics").read_bytes()
    elsewhere = settings.model_copy(update={"timezone": NEW_YORK})

    done = await import_file(elsewhere, text, "personal", writable=True, at=0)
    shown = await events(client, "2021-09-16", "2021-09-18", "Europe/Brussels")

    assert (done.changed, done.skipped, done.warnings) == (1, [], [])
    assert shown == [
        ("Summary", "2021-09-16T21:00:00+02:00", "2021-09-16T22:45:00+02:00", "Europe/Brussels")
    ]


async def test_moving_the_rest_of_a_custom_zone_series_keeps_both_halves_in_that_zone(
    client: Client[Any], clock: Clock, settings: CalendarSettings, tmp_path: Path
) -> None:
    first = (DATA / "outlook_custom_zone.ics").read_bytes()
    await import_file(settings, first, "personal", writable=True, at=0)

    proposal = await propose(
        client,
        "propose_event_move",
        event="stand-up",
        occurrence="2026-03-16",
        scope="following",
        start="2026-03-16T08:00:00Z",  # 10:00 in the custom zone, an hour later
    )
    await approve(client, clock, proposal)
    shown = await events(client, "2026-03-01", "2026-04-10", "UTC")
    exported = await export_calendar(settings, None)

    assert [(s, zone) for _, s, _, zone in shown] == [
        ("2026-03-02T08:00:00+00:00", "Customized Time Zone"),
        ("2026-03-09T07:00:00+00:00", "Customized Time Zone"),
        *(
            (f"2026-{day}T08:00:00+00:00", "Customized Time Zone")
            for day in ("03-16", "03-23", "03-30", "04-06")
        ),
    ]
    assert exported.count(b"BEGIN:VTIMEZONE") == 1


def test_a_historic_vtimezone_part_that_does_not_parse_is_left_out(tmp_path: Path) -> None:
    # Prague's VTIMEZONE with its 1850 mean time written "+5744" (+00:57:44), as in
    # icalendar's test calendar parsing_error_in_UTC_offset.ics, with an event using it.
    historic = LIBRARIES / "icalendar" / "tests" / "calendars" / "parsing_error_in_UTC_offset.ics"
    text = historic.read_text().replace(
        "END:VTIMEZONE\n",
        "END:VTIMEZONE\nBEGIN:VEVENT\nUID:opera@example.com\nSUMMARY:Opera\n"
        "DTSTART;TZID=Europe/Prague:20260320T190000\nEND:VEVENT\n",
    )
    path = tmp_path / "prague.ics"
    path.write_text(text)

    done = run(tmp_path / "data", "import", str(path))

    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == [
        "imported 1 event (0 unchanged) into calendar personal",
        "  warning: a VTIMEZONE part whose offset does not parse was left out",
    ]


def zone(tzid: str, *parts: str) -> str:
    """A VTIMEZONE of ``parts`` (each a STANDARD or DAYLIGHT part's own lines)."""
    body = "".join(parts)
    return f"BEGIN:VTIMEZONE\r\nTZID:{tzid}\r\n{body}END:VTIMEZONE\r\n"


def part(name: str, start: str, offsets: tuple[str, str], *lines: str) -> str:
    more = "".join(f"{line}\r\n" for line in lines)
    return (
        f"BEGIN:{name}\r\nDTSTART:{start}\r\nTZOFFSETFROM:{offsets[0]}\r\n"
        f"TZOFFSETTO:{offsets[1]}\r\n{more}END:{name}\r\n"
    )


def every(rule: str, tzid: str = "Custom/Flapping") -> str:
    """A zone whose two parts both repeat by ``rule``."""
    return zone(
        tzid,
        part("STANDARD", "19700101T000000", ("+0200", "+0100"), f"RRULE:{rule}"),
        part("DAYLIGHT", "19700101T003000", ("+0100", "+0200"), f"RRULE:{rule}"),
    )


def in_zone(tzid: str, uid: str, title: str, vtimezone: str, start: str = "20260317") -> bytes:
    return (
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Example//Hand-written//EN\r\n"
        f"{vtimezone}BEGIN:VEVENT\r\nUID:{uid}\r\nSUMMARY:{title}\r\n"
        f"DTSTART;TZID={tzid}:{start}T100000\r\nDTEND;TZID={tzid}:{start}T110000\r\n"
        "END:VEVENT\r\nEND:VCALENDAR\r\n"
    ).encode()


REFUSED_ZONES = [
    (every("FREQ=HOURLY"), "its STANDARD part repeats FREQ=HOURLY, where a zone changes"),
    (every("FREQ=MINUTELY"), "its STANDARD part repeats FREQ=MINUTELY, where a zone changes"),
    (every("FREQ=MONTHLY;BYDAY=SU"), "it changes its offset more than 12 times in 1970"),
    (
        every("FREQ=YEARLY;INTERVAL=0"),
        "its STANDARD rule cannot be used: INTERVAL=0 must be a whole number from 1 to 1000",
    ),
    (
        zone(
            "Custom/Flapping",
            part("STANDARD", "19700101T000000", ("+0200", "+0100")),
            part(
                "DAYLIGHT",
                "19700102T000000",
                ("+0100", "+0200"),
                "RDATE:"
                + ",".join(f"{1990 + n // 10}{n % 10 + 1:02d}01T000000" for n in range(2100)),
            ),
        ),
        "it changes its offset more than 2000 times before 2200",
    ),
]


@pytest.mark.parametrize(("vtimezone", "named"), REFUSED_ZONES)
async def test_a_zone_that_changes_more_often_than_a_zone_does_is_refused_in_one_line(
    tmp_path: Path, client: Client[Any], vtimezone: str, named: str
) -> None:
    path = tmp_path / "flapping.ics"
    path.write_bytes(in_zone("Custom/Flapping", "flap@example.com", "Dentist", vtimezone))

    done = run(tmp_path / "data", "import", str(path))  # a deadline: 60 s
    shown = await events(client, "2026-03-17", "2026-03-17", "Europe/Berlin")
    exported = run(tmp_path / "data", "export").stdout

    assert (done.returncode, done.stderr) == (0, "")
    [summary, warning] = done.stdout.splitlines()
    assert summary == "imported 1 event (0 unchanged) into calendar personal"
    assert warning.startswith(f"  warning: the time zone “Custom/Flapping” is refused: {named}")
    assert warning.endswith("; its times were read in Europe/Berlin (CALENDAR_TIMEZONE)")
    assert shown == [
        ("Dentist", "2026-03-17T10:00:00+01:00", "2026-03-17T11:00:00+01:00", "Europe/Berlin")
    ]
    assert "Custom/Flapping" not in exported


async def test_zones_as_producers_write_them_are_used_with_their_own_rules() -> None:
    # Outlook's zones start in 1601; tzurl.org's and Apple's name every historic change.
    outlook = (DATA / "outlook_custom_zone.ics").read_bytes()
    history = "".join(
        part(
            "DAYLIGHT" if n % 2 else "STANDARD",
            f"{1916 + n // 2}0{3 + n % 2 * 6}01T020000",
            ("+0100", "+0200") if n % 2 else ("+0200", "+0100"),
        )
        for n in range(180)
    )
    historic = in_zone(
        "Custom/Historic", "old@example.com", "Old", zone("Custom/Historic", history)
    )

    for text in (outlook, historic):
        read = read_events(text, "personal", ZoneInfo("Europe/Berlin"))
        assert read.warnings == []
        assert read.rows[0].zones != {}


async def test_an_event_stored_in_such_a_zone_by_an_older_version_is_left_out_and_counted(
    settings: CalendarSettings, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    # What the base commit's import stored: the event, and its zone kept for its reads.
    flapping = every("FREQ=HOURLY;INTERVAL=2")
    text = in_zone("Custom/Flapping", "flap@example.com", "Flapping", flapping)
    [component] = Calendar.from_ical(text).walk("VEVENT")
    stored = replace(row("personal", [cast(Event, component)]), zones={"Custom/Flapping": flapping})
    store = CalendarStore(settings.db_path, max_bytes=settings.max_db_bytes)
    store.verify()
    try:
        await store.import_rows(
            StoredCalendar("personal", "Personal", writable=True), [stored], at=0
        )
    finally:
        await store.aclose()
    server = build_server(settings, clock=clock)
    transport = httpx2.ASGITransport(app=server.http_app())
    async with (
        Client(server) as client,
        httpx2.AsyncClient(transport=transport, base_url="http://calendar") as http,
    ):
        await add(client, clock, title="Checkup", start="2026-03-17T15:00")
        with caplog.at_level(logging.WARNING, logger="mcp_calendar"):
            shown = await events(client, "2026-03-17", "2026-03-17", "Europe/Berlin")
        health = (await http.get("/health")).json()
        exported = await export_calendar(settings, None)

    assert [title for title, *_ in shown] == ["Checkup"]
    assert health["details"] == {
        "calendar": "reads skip 1 event that cannot be expanded (named in the log)"
    }
    [line] = [r.getMessage() for r in caplog.records if "flap@example.com" in r.getMessage()]
    assert (
        "its time zone 'Custom/Flapping' is refused: its STANDARD part repeats FREQ=HOURLY" in line
    )
    assert b"UID:flap@example.com" in exported  # a backup keeps it as it was stored
