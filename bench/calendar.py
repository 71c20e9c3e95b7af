"""Latency of the calendar's tools on a full local calendar, in-process (fastmcp's
in-memory client: the server's own cost, no transport).

uv run python -m bench.calendar [--events 500] [--series 30] [--iterations 30]

The calendar holds ``--events`` single events over the year ahead and ``--series`` weekly
series, written with the server's own import (one .ics). Every call expands the series it
needs with recurring-ical-events; a proposal looks the event up among a year of occurrences.
Medians and 90th percentiles, in milliseconds.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
from fastmcp import Client

from mcp_calendar.ics_files import import_file
from mcp_calendar.server import build_server
from mcp_calendar.settings import CalendarSettings

START = datetime(2026, 3, 16, 8, tzinfo=UTC)


def calendar_file(events: int, series: int) -> bytes:
    lines = ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//bench//EN"]
    for n in range(events):
        start = START + timedelta(hours=7 * n + 1)
        lines += [
            "BEGIN:VEVENT",
            f"UID:single-{n}@bench",
            f"SUMMARY:Appointment {n}",
            f"DTSTART;TZID=Europe/Berlin:{start:%Y%m%dT%H0000}",
            "DURATION:PT45M",
            "END:VEVENT",
        ]
    for n in range(series):
        start = START - timedelta(days=n)
        lines += [
            "BEGIN:VEVENT",
            f"UID:series-{n}@bench",
            f"SUMMARY:Weekly {n}",
            f"DTSTART;TZID=Europe/Berlin:{start:%Y%m%d}T{8 + n % 9:02d}0000",
            "DURATION:PT30M",
            "RRULE:FREQ=WEEKLY",
            "END:VEVENT",
        ]
    return ("\r\n".join([*lines, "END:VCALENDAR"]) + "\r\n").encode()


async def main(events: int, series: int, iterations: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        settings = CalendarSettings(
            timezone="Europe/Berlin",
            data_dir=Path(tmp),
        )
        await import_file(settings, calendar_file(events, series), "personal", writable=True, at=0)
        calls: dict[str, tuple[str, dict[str, Any]]] = {
            "get_events (a day)": ("get_events", {"start": "2026-04-01"}),
            "get_events (a week)": ("get_events", {"start": "2026-04-01", "end": "2026-04-07"}),
            "search_events (a year)": ("search_events", {"query": "weekly 7"}),
            "find_free_time (a week)": (
                "find_free_time",
                {"duration_minutes": 60, "start": "2026-04-01", "end": "2026-04-07"},
            ),
            "propose_event_move": (
                "propose_event_move",
                {"event": "Appointment 321", "start": "2026-06-01T10:00"},
            ),
        }
        clock = START.timestamp
        async with Client(build_server(settings, clock=clock)) as client:
            print(f"{events} events, {series} weekly series; {iterations} calls each")
            print(f"{'call':<28}{'median ms':>10}{'p90 ms':>10}")
            for label, (tool, arguments) in calls.items():
                times = []
                for _ in range(iterations):
                    began = time.perf_counter()
                    await client.call_tool(tool, arguments)
                    times.append((time.perf_counter() - began) * 1000)
                p90 = statistics.quantiles(times, n=10)[-1]
                print(f"{label:<28}{statistics.median(times):>10.1f}{p90:>10.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=500)
    parser.add_argument("--series", type=int, default=30)
    parser.add_argument("--iterations", type=int, default=30)
    args = parser.parse_args()
    anyio.run(main, args.events, args.series, args.iterations)
