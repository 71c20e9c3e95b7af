"""Recurrence rules no person means are refused, naming the part at fault, in the tools and
in `import`; a series stored before they were checked is shown once, not expanded; dates at
the edge of datetime and zone names too long for a path are worded errors."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast
from zoneinfo import ZoneInfo

import pytest
from fastmcp import Client
from icalendar import Calendar, Event
from pydantic import ValidationError

from calendar_server.calls import BERLIN, HOSTILE
from fakes.tool_calls import call, call_error
from mcp_calendar.ics_reader import ImportProblems, read_events
from mcp_calendar.local import row
from mcp_calendar.settings import CalendarSettings
from mcp_calendar.store import CalendarStore, StoredCalendar

pytestmark = pytest.mark.anyio


def ics(*events: str) -> bytes:
    body = "".join(
        f"BEGIN:VEVENT\r\nUID:{n}@test\r\nSUMMARY:Event {n}\r\n{lines}END:VEVENT\r\n"
        for n, lines in enumerate(events, start=1)
    )
    return (
        f"BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\n{body}END:VCALENDAR\r\n".encode()
    )


def series(rule: str, start: str = "20260301T080000Z") -> str:
    return f"DTSTART:{start}\r\nDURATION:PT30M\r\nRRULE:{rule}\r\n"


@pytest.mark.parametrize(("rule", "named"), HOSTILE)
async def test_a_rule_no_person_means_is_refused_naming_the_part(
    client: Client[Any], rule: str, named: str
) -> None:
    refused = await call_error(
        client, "propose_event_add", title="Flood", start="2026-03-20T10:00", recurrence=rule
    )

    assert refused.startswith(f"The recurrence {rule} cannot be used: ")
    assert named in refused


async def test_rules_people_use_are_still_proposed(client: Client[Any]) -> None:
    for rule in (
        "FREQ=HOURLY;INTERVAL=2",  # medication
        "FREQ=DAILY;BYHOUR=8,20",
        "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29",  # a leap-day birthday: every four years
        "FREQ=MONTHLY;BYDAY=FR;BYMONTHDAY=13",
        "FREQ=MONTHLY;BYDAY=-1FR;COUNT=12",
    ):
        proposal = await call(
            client, "propose_event_add", title="Fine", start="2026-03-20T10:00", recurrence=rule
        )
        assert proposal["payload"]["rule"] == rule


async def test_an_import_skips_events_with_such_rules_naming_each_rule_part() -> None:
    text = ics(
        series("FREQ=WEEKLY;BYDAY=TU"),
        *(series(rule) for rule, _ in HOSTILE),
        "DTSTART:00010101T000000Z\r\n",
        "DTSTART:99991231T230000Z\r\n",
    )

    read = read_events(text, "personal", ZoneInfo(BERLIN))

    lines = [f"{skipped.where}: {skipped.reason}" for skipped in read.skipped]
    assert [row.uid for row in read.rows] == ["1@test"]
    assert len(lines) == len(HOSTILE) + 2
    for n, (line, (_, named)) in enumerate(zip(lines, HOSTILE, strict=False), start=2):
        assert line.startswith(f"UID {n}@test: its RRULE cannot be used: ")
        assert named in line
    assert lines[-2:] == [
        f"UID {len(HOSTILE) + 2}@test: DTSTART is outside the years 1900–2199",
        f"UID {len(HOSTILE) + 3}@test: DTSTART is outside the years 1900–2199",
    ]


async def test_an_import_skips_a_series_of_more_rdates_than_a_count_may_give() -> None:
    first = datetime(2026, 3, 1, tzinfo=UTC)
    dates = [f"{first + timedelta(minutes=15 * n):%Y%m%dT%H%M%SZ}" for n in range(5001)]
    many = ics(f"DTSTART:20260301T000000Z\r\nRDATE:{','.join(dates[:5001])}\r\n")
    enough = ics(f"DTSTART:20260301T000000Z\r\nRDATE:{','.join(dates[:5000])}\r\n")

    refused = read_events(many, "personal", ZoneInfo(BERLIN))
    kept = read_events(enough, "personal", ZoneInfo(BERLIN))

    assert [(s.where, s.reason) for s in refused.skipped] == [
        ("UID 1@test", "it has more than 5000 RDATEs")
    ]
    assert [row.uid for row in kept.rows] == ["1@test"]


async def test_a_time_zone_too_long_for_a_path_is_a_worded_import_problem() -> None:
    text = ics(f"DTSTART;TZID={'x' * 1_000_000}:20260317T170000\r\n")

    with pytest.raises(ImportProblems) as refused:
        read_events(text, "personal", ZoneInfo(BERLIN))

    assert refused.value.lines == ["a TZID cannot be read (File name too long)"]


async def test_a_flooding_series_stored_by_an_older_version_is_shown_once_not_expanded(
    client: Client[Any], settings: CalendarSettings
) -> None:
    # What an older version accepted: written as its import wrote it, unchecked.
    flood = ics(series("FREQ=MINUTELY", "20260301T000000Z"), series("FREQ=DAILY;INTERVAL=0"))
    components = [cast(Event, c) for c in Calendar.from_ical(flood).walk("VEVENT")]
    store = CalendarStore(settings.db_path)
    try:
        written = (
            await store.import_rows(
                StoredCalendar("personal", "Personal", writable=True),
                [row("personal", [c]) for c in components],
                at=0,
            )
        ).changed
    finally:
        await store.aclose()

    march = await call(client, "get_events", start="2026-03-01", end="2026-03-31")
    day = await call(client, "get_events", start="2026-03-20")
    calendars = await call(client, "list_calendars")

    assert written == 2
    assert [(e["title"], e["start"]) for e in march["events"]] == [
        ("Event 1", "2026-03-01T01:00:00+01:00"),
        ("Event 2", "2026-03-01T09:00:00+01:00"),
    ]
    assert day["events"] == []
    assert calendars["calendars"][0]["id"] == "personal"


@pytest.mark.parametrize("start", ["0001-01-01", "9999-12-31", "9999-12-31T23:00"])
async def test_a_date_at_the_edge_of_datetime_is_a_worded_error(
    client: Client[Any], start: str
) -> None:
    read = await call_error(client, "get_events", start=start)
    proposed = await call_error(client, "propose_event_add", title="Edge", start=start)

    for refused in (read, proposed):
        assert refused == f"{start!r} is outside the years 1900–2199 this calendar holds."


def test_a_zone_setting_too_long_for_a_path_is_a_worded_settings_error(tmp_path: Path) -> None:
    with pytest.raises(ValidationError) as refused:
        CalendarSettings(timezone="x" * 1_000_000, data_dir=tmp_path)

    [error] = refused.value.errors()
    assert error["msg"] == f"Value error, '{'x' * 60}…' is not an IANA zone; use e.g. Europe/Berlin"
