"""``python -m mcp_calendar import FILE [--calendar ID] [--read-only]`` and ``export [FILE]
[--calendar ID]``: the local calendar's ``.ics`` files (``ics_files``) for the operator.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from zoneinfo import ZoneInfo

import anyio

from mcp_calendar.ics_files import Imported, export_calendar, import_file
from mcp_calendar.ics_reader import ImportProblems, read_events
from mcp_calendar.settings import CalendarSettings
from meshkit.private import private_file, private_output
from meshkit.settings import fail, load_dotenv, load_settings
from meshkit.storage import StorageFailed, StorageUnavailable

CALENDAR_ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,59}")
MAX_PROBLEMS = 20  # listed before "and N more"


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


IMPORT_HELP = (
    "Import an .ics file event by event: valid events are imported, each one that is not "
    "is skipped and named with the reason. Events already in another calendar move to "
    "--calendar. Exit status: 0 when events were imported (even with some skipped), 1 when "
    "none could be, 2 when the database cannot be used."
)


def _main(argv: Sequence[str], command: str, now: float) -> int:
    load_dotenv()
    settings = load_settings(CalendarSettings)
    parser = argparse.ArgumentParser(
        prog=f"python -m mcp_calendar {command}",
        description=IMPORT_HELP if command == "import" else None,
    )
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
        return _write_export(settings, args)
    try:
        text = args.file.read_bytes()
    except OSError as error:
        print(f"cannot read {args.file}: {error.strerror}", file=sys.stderr)
        return 1
    try:
        read = read_events(text, args.calendar, ZoneInfo(settings.timezone))
    except ImportProblems as problems:
        _nothing(args.file, problems.lines)
        return 1
    if not read.rows:
        lines = [f"{s.where}: {s.reason}" for s in read.skipped] or ["it holds no events"]
        _nothing(args.file, _limited(lines) + _limited(read.warnings, "warning: "))
        return 1
    done = anyio.run(_import, settings, text, args, now)
    for line in summary(done):
        print(line)
    return 0


def summary(done: Imported) -> list[str]:
    """What an import did, for the person who ran it: one line, then what was skipped."""
    events = "event" if done.changed == 1 else "events"
    line = (
        f"imported {done.changed} {events} ({done.unchanged} unchanged) into calendar "
        f"{done.calendar}"
    )
    moved = ", ".join(f"moved {n} from calendar {c}" for c, n in sorted(done.moved_from.items()))
    lines = [f"{line}; {moved}" if moved else line]
    if done.skipped:
        count = len(done.skipped)
        lines.append(f"skipped {count} event{'' if count == 1 else 's'}:")
        lines += _limited([f"{s.where}: {s.reason}" for s in done.skipped])
    return lines + _limited(done.warnings, "warning: ")


def _limited(lines: list[str], prefix: str = "") -> list[str]:
    shown = [f"  {prefix}{line}" for line in lines[:MAX_PROBLEMS]]
    more = len(lines) - MAX_PROBLEMS
    return shown + ([f"  and {more} more"] if more > 0 else [])


def _write_export(settings: CalendarSettings, args: argparse.Namespace) -> int:
    data = anyio.run(export_calendar, settings, args.calendar)
    if args.file is None:
        private_output(sys.stdout)  # "> backup.ics" too: as private as the database
        sys.stdout.buffer.write(data)
        return 0
    try:
        private_file(args.file)  # a calendar is as private as the database it came from
        args.file.write_bytes(data)
    except OSError as error:
        print(f"cannot write {args.file}: {error.strerror}", file=sys.stderr)
        return 1
    return 0


async def _import(
    settings: CalendarSettings, text: bytes, args: argparse.Namespace, now: float
) -> Imported:
    return await import_file(settings, text, args.calendar, writable=not args.read_only, at=now)


def _nothing(path: Path, lines: Iterable[str]) -> None:
    print(f"{path}: nothing was imported:", file=sys.stderr)
    for line in lines:
        print(line if line.startswith("  ") else f"  {line}", file=sys.stderr)
