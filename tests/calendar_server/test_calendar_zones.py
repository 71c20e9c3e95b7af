"""Time zones as Outlook, Exchange and other producers write them: Windows names read as
their IANA zone, custom VTIMEZONEs with their own rules (per file: never mixed), a TZID
that names nothing read in the calendar's zone and said so, and times that keep their wall
clock in their zone across a DST change."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from calendar_server.calls import approve, propose
from fakes.clock import Clock
from fakes.tool_calls import call
from mcp_calendar.ics import export_calendar, import_file
from mcp_calendar.settings import CalendarSettings

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
