"""A read's cost does not grow with the years a series has run: a series is expanded from
shortly before the range asked (its start moved forward by whole periods of its rule), and
gives there exactly what recurring-ical-events gives from its own start."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
import recurring_ical_events  # type: ignore[import-untyped]
from fastmcp import Client
from icalendar import Calendar

from calendar_server.calls import BERLIN
from fakes.tool_calls import call
from mcp_calendar.ics_files import import_file
from mcp_calendar.settings import CalendarSettings

pytestmark = pytest.mark.anyio

# (start, rule): weekly meetings, monthly and yearly dates, hourly medication, each long
# running; with EXDATEs, a moved occurrence, all-day dates and a DST zone among them.
SERIES = [
    ("20050103T093000", "FREQ=WEEKLY;BYDAY=MO,TH"),
    ("19990131T180000", "FREQ=MONTHLY"),  # the 31st: only the months that have one
    ("19990131T180000", "FREQ=MONTHLY;INTERVAL=5;BYMONTHDAY=-1"),
    ("20110615T120000", "FREQ=MONTHLY;BYDAY=2TU,-1FR"),
    ("19960229T070000", "FREQ=YEARLY"),  # the 29th of February
    ("19900325T020000", "FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU"),
    ("20120101T001500", "FREQ=HOURLY;INTERVAL=7"),
    ("20100102T060000", "FREQ=DAILY;INTERVAL=3;BYHOUR=6,18"),
    ("20000104T100000", "FREQ=WEEKLY;INTERVAL=2;WKST=SU;BYDAY=TU,SU"),
    ("20011231T083000", "FREQ=DAILY;UNTIL=20260330T000000Z"),
    ("19930704", "FREQ=YEARLY"),
    ("20070301", "FREQ=WEEKLY;INTERVAL=3"),
]
WINDOWS = [("2026-03-23", "2026-04-06"), ("2031-10-20", "2031-11-03"), ("2099-12-25", "2100-01-08")]


def series_file() -> bytes:
    events = []
    for n, (start, rule) in enumerate(SERIES):
        if "T" in start:
            first = f"DTSTART;TZID={BERLIN}:{start}\r\nDURATION:PT45M\r\n"
            moved = (
                f"BEGIN:VEVENT\r\nUID:s{n}@test\r\nSUMMARY:Series {n} (moved)\r\n"
                f"RECURRENCE-ID;TZID={BERLIN}:{start}\r\n"
                f"DTSTART;TZID={BERLIN}:20260325T213000\r\nDURATION:PT45M\r\nEND:VEVENT\r\n"
            )
        else:
            first, moved = f"DTSTART;VALUE=DATE:{start}\r\n", ""
        events.append(
            f"BEGIN:VEVENT\r\nUID:s{n}@test\r\nSUMMARY:Series {n}\r\n{first}RRULE:{rule}\r\n"
            f"EXDATE;TZID={BERLIN}:20260330T093000\r\nEND:VEVENT\r\n{moved}"
        )
    body = "".join(events)
    return (
        f"BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\n{body}END:VCALENDAR\r\n".encode()
    )


def expected(text: bytes, first: str, last: str) -> list[tuple[str, str]]:
    """What recurring-ical-events gives for the file itself, walking each rule from its
    start: (title, start) in the calendar's zone."""
    zone = ZoneInfo(BERLIN)
    low = datetime.combine(date.fromisoformat(first), datetime.min.time(), zone)
    high = datetime.combine(date.fromisoformat(last), datetime.min.time(), zone)
    found = recurring_ical_events.of(Calendar.from_ical(text)).between(low, high + timedelta(1))
    return sorted((str(e["SUMMARY"]), _shown(e.decoded("DTSTART"), zone)) for e in found)


def _shown(moment: date, zone: ZoneInfo) -> str:
    if isinstance(moment, datetime):
        return moment.astimezone(zone).isoformat()
    return moment.isoformat()


async def test_series_read_years_after_they_began_give_what_their_rules_give(
    client: Client[Any], settings: CalendarSettings
) -> None:
    text = series_file()
    await import_file(settings, text, "personal", writable=True, at=0)

    for first, last in WINDOWS:
        found = await call(client, "get_events", start=first, end=last, timezone=BERLIN)
        shown = sorted((e["title"], e["start"]) for e in found["events"])
        assert len(found["events"]) < 200  # every one shown
        assert shown == expected(text, first, last), (first, last)


async def test_an_hourly_series_begun_in_1900_reads_a_day_of_2026_in_full(
    client: Client[Any], settings: CalendarSettings
) -> None:
    # dateutil walks an hourly rule hour by hour from its start: 1.1 million hours, seconds
    # of CPU each, past a read's budget, where the day holds 24 occurrences of each.
    text = b"".join(
        b"BEGIN:VEVENT\r\nUID:%d@test\r\nSUMMARY:Pill %d\r\nDURATION:PT5M\r\n"
        b"DTSTART;TZID=Europe/Berlin:19000101T00%02d00\r\nRRULE:FREQ=HOURLY\r\nEND:VEVENT\r\n"
        % (n, n, n)
        for n in range(2)
    )
    await import_file(
        settings,
        b"BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\n%sEND:VCALENDAR\r\n" % text,
        "personal",
        writable=True,
        at=0,
    )

    found = await call(client, "get_events", start="2026-03-17", timezone=BERLIN)

    assert [e["start"] for e in found["events"]][:4] == [
        "2026-03-17T00:00:00+01:00",
        "2026-03-17T00:01:00+01:00",
        "2026-03-17T01:00:00+01:00",
        "2026-03-17T01:01:00+01:00",
    ]
    assert len(found["events"]) == 48
