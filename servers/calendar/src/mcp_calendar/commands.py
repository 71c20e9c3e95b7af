"""``clawmesh calendar auth|import|export``: the calendar's operator commands. In a
container: ``docker compose exec calendar python -m mcp_calendar import ...``.

    clawmesh calendar import FILE [--calendar ID] [--read-only] [--json]
        an .ics file event by event (ics.py): each one skipped is named with its reason;
        importing it again changes nothing; events stored in another calendar move to ID.
        Exit 0 when events were imported (even with some skipped), 1 when none could be,
        2 when the database cannot be used
    clawmesh calendar export [FILE] [--calendar ID]
        the calendar(s) as .ics (default: stdout, private as the database)
    clawmesh calendar auth [--headless]
        the one-time Google consent (auth.py): the token file in $CALENDAR_CREDENTIALS_DIR
"""

from __future__ import annotations

import importlib
import json
import re
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Annotated, TypeVar
from zoneinfo import ZoneInfo

import anyio
from cyclopts import App, Parameter

from mcp_calendar.ics_files import Imported, export_calendar, import_file
from mcp_calendar.ics_reader import ImportProblems, read_events
from mcp_calendar.settings import CalendarSettings
from meshkit.command import CliError, Json, guarded, run, settings_of
from meshkit.private import private_file, private_output
from meshkit.storage import StorageFailed, StorageUnavailable

T = TypeVar("T")
CALENDAR_ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,59}")
MAX_PROBLEMS = 20  # listed before "and N more"

app = App(name="calendar", help="The calendar's .ics import and export, and Google's consent.")
Calendar = Annotated[str | None, Parameter(help="a calendar id: a-z, 0-9, - and _ (holidays)")]


@app.command(name="import")
def import_(
    file: Path,
    /,
    *,
    calendar: Calendar = None,
    read_only: Annotated[bool, Parameter(negative=(), help="the tools may only read it")] = False,
    as_json: Json = False,
) -> None:
    """Import an .ics file event by event (make import-calendar).

    Valid events are imported, each one that is not is skipped and named with the reason;
    events already in another calendar move to --calendar. Exit status: 0 when events were
    imported (even with some skipped), 1 when none could be, 2 when the database cannot be
    used."""

    def run() -> None:
        settings = settings_of(CalendarSettings)
        target = _calendar(calendar) or settings.default_calendar
        try:
            text = file.read_bytes()
        except OSError as error:
            raise CliError(f"cannot read {file}: {error.strerror}", "check the path") from None
        try:
            read = read_events(text, target, ZoneInfo(settings.timezone))
        except ImportProblems as problems:
            raise _nothing(file, problems.lines) from None
        if not read.rows:
            lines = [f"{s.where}: {s.reason}" for s in read.skipped] or ["it holds no events"]
            raise _nothing(file, _limited(lines) + _limited(read.warnings, "warning: "))
        done = _stored(
            "import",
            lambda: anyio.run(
                lambda: import_file(settings, text, target, writable=not read_only, at=time.time())
            ),
        )
        if as_json:
            print(json.dumps({
                "calendar": done.calendar, "imported": done.changed, "unchanged": done.unchanged,
                "moved_from": done.moved_from, "warnings": done.warnings,
                "skipped": [f"{s.where}: {s.reason}" for s in done.skipped],
            }))  # fmt: skip
            return
        print("\n".join(summary(done)))

    guarded(run, as_json=as_json)


@app.command
def export(file: Path | None = None, /, *, calendar: Calendar = None) -> None:
    """Write the calendar(s) as one .ics file (default: stdout), as private as the database."""

    def run() -> None:
        settings = settings_of(CalendarSettings)
        chosen = _calendar(calendar)
        data = _stored("export", lambda: anyio.run(export_calendar, settings, chosen))
        if file is None:
            private_output(sys.stdout)  # "> backup.ics" too: as private as the database
            sys.stdout.buffer.write(data)
            return
        try:
            private_file(file)  # a calendar is as private as the database it came from
            file.write_bytes(data)
        except OSError as error:
            raise CliError(f"cannot write {file}: {error.strerror}", "check the path") from None

    guarded(run, as_json=False)


@app.command
def auth(
    *,
    headless: Annotated[bool, Parameter(negative=(), help="no browser here: open it elsewhere")] = (
        False
    ),
    port: Annotated[int, Parameter(help="the loopback port, 1024-65535")] = 8765,
    client: Annotated[Path | None, Parameter(help="the OAuth client file")] = None,
    token: Annotated[Path | None, Parameter(help="where the token goes")] = None,
) -> None:
    """Authorise clawmesh to use your Google Calendar (CALENDAR_BACKEND=google): writes the
    token file the server reads."""

    def run() -> None:
        settings = settings_of(CalendarSettings)
        # Google's consent flow (google-auth-oauthlib, requests) loads for this command only.
        google = importlib.import_module("mcp_calendar.auth")
        try:
            google.authorize(settings, headless=headless, port=port, client=client, token=token)
        except google.AuthFailed as error:
            raise CliError(f"auth: {error}", "then run clawmesh calendar auth again") from None

    guarded(run, as_json=False)


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


def _calendar(calendar: str | None) -> str | None:
    if calendar is not None and not CALENDAR_ID.fullmatch(calendar):
        raise CliError(
            f"--calendar {calendar!r} is not a calendar id",
            "use lowercase letters, digits, - and _ (e.g. holidays)",
            code=2,
        )
    return calendar


def _stored(command: str, work: Callable[[], T]) -> T:
    """``work()``; a database that cannot be used is one line (exit 2)."""
    try:
        return work()
    except StorageUnavailable as error:  # "cannot use the database X: why; what to do"
        what, _, fix = str(error).rpartition("; ")
        raise CliError(what or fix, fix if what else "see the server's log", code=2) from None
    except StorageFailed:  # the store logged the fault in one line
        raise CliError(f"nothing was {command}ed", "see the line above") from None


def _nothing(path: Path, lines: Iterable[str]) -> CliError:
    for line in lines:
        print(line if line.startswith("  ") else f"  {line}", file=sys.stderr)
    return CliError(f"{path}: nothing was imported", "the lines above say why")


def _limited(lines: list[str], prefix: str = "") -> list[str]:
    shown = [f"  {prefix}{line}" for line in lines[:MAX_PROBLEMS]]
    more = len(lines) - MAX_PROBLEMS
    return shown + ([f"  and {more} more"] if more > 0 else [])


def main(argv: Sequence[str]) -> None:
    """``python -m mcp_calendar auth|import|export ...``, in the server's container."""
    run(app, argv, prog="python -m mcp_calendar")
