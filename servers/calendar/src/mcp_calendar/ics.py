"""``.ics`` files in and out of the local calendar (``python -m mcp_calendar import|export``).

Import checks every event of the file first (a property that does not parse, no start,
an end before the start, a recurrence rule dateutil cannot expand, a changed occurrence
without its series) and imports nothing when one fails, naming each with its place in
the file. Events are keyed by UID: importing the same file again changes nothing, and a
newer export of the same calendar updates the events that changed. A floating time
(no zone) is read in ``CALENDAR_TIMEZONE``; a zone that is not an IANA name is kept as
the UTC instant. Export writes the stored components with their VTIMEZONEs.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, cast
from zoneinfo import ZoneInfo

import anyio
from dateutil.rrule import rrulestr
from icalendar import Calendar, Event

from mcp_calendar import edits, rules, times
from mcp_calendar.local import parse, row
from mcp_calendar.settings import CalendarSettings
from mcp_calendar.store import CalendarStore, EventRow, StoredCalendar
from meshkit.private import private_file
from meshkit.settings import fail, load_dotenv, load_settings
from meshkit.storage import StorageFailed, StorageUnavailable

CALENDAR_ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,59}")
MAX_PROBLEMS = 20  # listed before "and N more"
_TIMES = ("DTSTART", "DTEND", "RECURRENCE-ID")


class ImportProblems(Exception):
    """The file cannot be imported; ``lines`` says why, one problem a line."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


@dataclass(frozen=True)
class Imported:
    changed: int
    unchanged: int
    calendar: str


def read_events(text: bytes, calendar: str, tz: ZoneInfo) -> list[EventRow]:
    """Every event of an iCalendar file as rows to store; ImportProblems on any bad one."""
    try:
        parsed = Calendar.from_ical(text)
    except ValueError as error:
        raise ImportProblems([f"not an iCalendar file: {error}"]) from None
    except OSError as error:  # a TZID too long for a zoneinfo path
        raise ImportProblems([f"a TZID cannot be read ({error.strerror})"]) from None
    problems: list[str] = []
    series: dict[str, list[Event]] = {}
    for number, component in enumerate(parsed.walk("VEVENT"), start=1):
        event = cast(Event, component)
        name = f"event {number} (“{event.get('SUMMARY', 'untitled')}”)"
        problem = _problem(event)
        if problem:
            problems.append(f"{name}: {problem}")
            continue
        _normalize(event, tz)
        series.setdefault(str(event["UID"]), []).append(event)
    for uid, components in series.items():
        masters = [c for c in components if "RECURRENCE-ID" not in c]
        if len(masters) != 1:
            what = "no series for its changed occurrences" if not masters else "a repeated UID"
            problems.append(f"UID {uid}: {what}")
    if problems:
        more = len(problems) - MAX_PROBLEMS
        raise ImportProblems(problems[:MAX_PROBLEMS] + ([f"and {more} more"] if more > 0 else []))
    return [row(calendar, components) for components in series.values()]


def _problem(event: Event) -> str | None:
    if event.errors:
        prop, message = event.errors[0]
        return f"{prop} does not parse ({message})"
    if "UID" not in event:
        return "no UID"
    if "DTSTART" not in event:
        return "no start (DTSTART)"
    return _time_problem(event) or _rule_problem(event)


def _time_problem(event: Event) -> str | None:
    for name in _TIMES:
        if name in event and not times.supported(event.decoded(name)):
            return f"{name} is outside the years {times.FIRST_YEAR}–{times.LAST_YEAR}"
    if "DTEND" in event:
        start, end = event.decoded("DTSTART"), event.decoded("DTEND")
        if isinstance(start, datetime) != isinstance(end, datetime):
            return "start and end are not both dates or both times"
        if _utc(end) < _utc(start):
            return "it ends before it starts"
    return None


def _rule_problem(event: Event) -> str | None:
    """A rule no person means (rules.py), checked before dateutil runs it."""
    if "RRULE" not in event:
        return None
    rule: Any = event["RRULE"]
    if isinstance(rule, list):
        return "more than one RRULE"
    start = event.decoded("DTSTART")
    refused = rules.problem(rule, start)
    if refused is not None:
        return f"its RRULE cannot be used: {refused}"
    try:
        rrulestr(edits.rule_text(event), dtstart=_naive(start))
    except (ValueError, TypeError) as error:
        return f"its RRULE cannot be expanded ({error})"
    return None


def _normalize(event: Event, tz: ZoneInfo) -> None:
    """Floating times in ``tz``; zones that are no IANA name as UTC instants."""
    for name in _TIMES:
        if name in event:
            value = event.decoded(name)
            if _unzoned(value):
                event.pop(name)
                event.add(name.lower(), _zoned(value, tz))
    if "EXDATE" in event:
        dates = [d.dt for d in edits.exdates(event)]
        if any(_unzoned(d) for d in dates):
            event.pop("EXDATE")
            for moment in dates:
                event.add("exdate", _zoned(moment, tz) if _unzoned(moment) else moment)


def _unzoned(value: object) -> bool:
    return isinstance(value, datetime) and not isinstance(value.tzinfo, ZoneInfo)


def _zoned(value: datetime, tz: ZoneInfo) -> datetime:
    return value.replace(tzinfo=tz) if value.tzinfo is None else value.astimezone(UTC)


def _utc(moment: datetime | date) -> datetime:
    if isinstance(moment, datetime):
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return datetime.combine(moment, datetime.min.time(), tzinfo=UTC)


def _naive(moment: datetime | date) -> datetime:
    if isinstance(moment, datetime):
        return moment
    return datetime.combine(moment, datetime.min.time())


async def import_file(
    settings: CalendarSettings, text: bytes, calendar: str, *, writable: bool, at: float
) -> Imported:
    rows = read_events(text, calendar, ZoneInfo(settings.timezone))
    store = _store(settings)
    try:
        target = StoredCalendar(calendar, calendar.capitalize(), writable=writable)
        changed = await store.write_all(target, rows, at)
    finally:
        await store.aclose()
    return Imported(changed=changed, unchanged=len(rows) - changed, calendar=calendar)


async def export_calendar(settings: CalendarSettings, calendar: str | None) -> bytes:
    store = _store(settings)
    try:
        events = await store.events_between(float("-inf"), float("inf"))
    finally:
        await store.aclose()
    out = Calendar()
    out.add("prodid", "-//clawmesh//mcp_calendar//EN")
    out.add("version", "2.0")
    for event in events:
        if calendar is None or event.calendar == calendar:
            for component in parse(event):
                out.add_component(component)
    out.add_missing_timezones()
    data: bytes = out.to_ical()
    return data


def _store(settings: CalendarSettings) -> CalendarStore:
    """The calendar's database, checked as the server checks it: StorageUnavailable (one
    line for the operator) when it is damaged or DATA_DIR cannot be written."""
    store = CalendarStore(settings.db_path, max_bytes=settings.max_db_bytes)
    store.verify()
    return store


def main(argv: Sequence[str], command: str, now: float) -> int:
    """``import FILE [--calendar ID] [--read-only]`` or ``export [FILE] [--calendar ID]``;
    a database that cannot be used stops it with one line (exit 2)."""
    try:
        return _main(argv, command, now)
    except StorageUnavailable as error:
        fail(str(error))
    except StorageFailed:  # the store logged the fault in one line
        print(f"nothing was {command}ed", file=sys.stderr)
        return 1


def _main(argv: Sequence[str], command: str, now: float) -> int:
    load_dotenv()
    settings = load_settings(CalendarSettings)
    parser = argparse.ArgumentParser(prog=f"python -m mcp_calendar {command}")
    if command == "import":
        parser.add_argument("file", type=Path, help="an iCalendar (.ics) file")
        parser.add_argument("--calendar", default=settings.default_calendar)
        parser.add_argument(
            "--read-only", action="store_true", help="the tools may read it, never change it"
        )
    else:
        parser.add_argument("file", nargs="?", type=Path, help="where to write (default: stdout)")
        parser.add_argument("--calendar", default=None, help="one calendar (default: all)")
    args = parser.parse_args(list(argv))
    if args.calendar is not None and not CALENDAR_ID.fullmatch(args.calendar):
        parser.error("--calendar takes lowercase letters, digits, - and _ (e.g. holidays)")
    if command == "export":
        data = anyio.run(export_calendar, settings, args.calendar)
        if args.file is None:
            sys.stdout.buffer.write(data)
            return 0
        try:
            private_file(args.file)  # a calendar is as private as the database it came from
            args.file.write_bytes(data)
        except OSError as error:
            print(f"cannot write {args.file}: {error.strerror}", file=sys.stderr)
            return 1
        return 0
    try:
        text = args.file.read_bytes()
    except OSError as error:
        print(f"cannot read {args.file}: {error.strerror}", file=sys.stderr)
        return 1
    try:
        done = anyio.run(_import, settings, text, args, now)
    except ImportProblems as problems:
        _report(args.file, problems.lines)
        return 1
    print(
        f"imported {done.changed} events ({done.unchanged} unchanged) into calendar {done.calendar}"
    )
    return 0


async def _import(
    settings: CalendarSettings, text: bytes, args: argparse.Namespace, now: float
) -> Imported:
    return await import_file(settings, text, args.calendar, writable=not args.read_only, at=now)


def _report(path: Path, lines: Iterable[str]) -> None:
    print(f"{path}: nothing was imported:", file=sys.stderr)
    for line in lines:
        print(f"  {line}", file=sys.stderr)
