"""`python -m mcp_calendar import|export`: every event checked first, re-import safe by UID,
and an export that imports back to the same calendar."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from calendar_server.calls import day
from fakes.tool_calls import call
from mcp_calendar.ics import import_file
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
        [sys.executable, "-m", "mcp_calendar", *args],
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


async def test_a_file_with_bad_events_is_refused_whole_naming_each(
    tmp_path: Path, client: Client[Any]
) -> None:
    path = tmp_path / "broken.ics"
    path.write_text(BROKEN.replace("\n", "\r\n"), encoding="utf-8")

    done = run(tmp_path / "data", "import", str(path))

    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        f"{path}: nothing was imported:",
        "  event 2 (“Backwards”): it ends before it starts",
        "  event 3 (“Garbled”): DTSTART does not parse (Wrong datetime format: 2026-03-17 soon)",
        "  event 4 (“No uid”): no UID",
        "  UID orphan@example.com: no series for its changed occurrences",
    ]
    assert await day(client, "2026-03-17") == []


def test_a_missing_file_and_a_bad_calendar_name_get_one_line(tmp_path: Path) -> None:
    missing = run(tmp_path / "data", "import", str(tmp_path / "nope.ics"))
    bad_name = run(tmp_path / "data", "import", str(tmp_path / "nope.ics"), "--calendar", "My Cal")

    assert (missing.returncode, missing.stderr) == (
        1,
        f"cannot read {tmp_path / 'nope.ics'}: No such file or directory\n",
    )
    assert bad_name.returncode == 2
    assert bad_name.stderr.splitlines()[-1].endswith(
        "--calendar takes lowercase letters, digits, - and _ (e.g. holidays)"
    )


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
            f"configuration error: cannot use the database {data_dir / 'calendar.sqlite3'}: "
            "the file is not a SQLite database; restore the file from a backup, or move it "
            "aside to start with an empty one"
        ]
