"""What a chat's import says (``imports.py``): the proposal's summary and folded detail, the
refusals of a file that cannot be imported, and the result's line for the user. Times are
words in the user's zone (``times.words``)."""

from __future__ import annotations

import logging
from zoneinfo import ZoneInfo

from mcp_calendar import edits, expansion, times
from mcp_calendar.ics_reader import Read
from mcp_calendar.local import parse
from mcp_calendar.store import EventRow, StoredEvent, Written

logger = logging.getLogger(__name__)

MAX_DETAIL = 4000  # Proposal.detail's bound
MAX_LINE = 240  # one line of the detail
MAX_LISTED = 10  # events, skips and repairs each, before "… and N more"
MORE_ROOM = 24  # what "… and N more" takes
MAX_TITLE = 100
NOTHING = "Nothing was imported."


def imported(calendar: str, written: Written, skipped: int) -> str:
    """What the tap did, e.g. "Imported 12 events into personal (2 skipped)."."""
    notes = []
    if written.unchanged:
        notes.append(f"{written.unchanged} already there")
    notes += [f"{n} moved from {c}" for c, n in sorted(written.moved.items())]
    notes += [f"{n} left in the read-only {c}" for c, n in sorted(written.left.items())]
    if skipped:
        notes.append(f"{skipped} skipped")
    said = f" ({', '.join(notes)})" if notes else ""
    if written.changed:
        return f"Imported {events(written.changed)} into {calendar}{said}."
    return f"Nothing new to import into {calendar}{said}."


def summary(rows: list[EventRow], calendar: str, tz: ZoneInfo) -> str:
    """How many events it imports into which calendar; for one event, its title and time."""
    if len(rows) != 1:
        return f"Import {events(len(rows))} into {calendar}?"
    [row] = rows
    title = _title(row.title)
    name = f"“{title}”" if title else "an untitled event"
    when = _when(row, tz, zone=True)
    return f"Import {name}{f' ({when})' if when else ''} into {calendar}?"


def detail(placed: Written, read: Read, calendar: str, tz: ZoneInfo) -> str | None:
    """The events to import (more than one), those there already or left where they are,
    and the reading's skips and repairs: each list cut with "… and N more"."""
    out = _Lines()
    count = len(placed.rows)
    if count > 1:
        first = sorted(placed.rows, key=lambda r: (r.starts_at, r.title))[:MAX_LISTED]
        listed = [f"“{_title(r.title) or 'untitled'}” {_when(r, tz) or ''}".rstrip() for r in first]
        out.listing(f"Events ({count}, times in {tz.key}):", listed, count)
    if placed.unchanged:
        out.add(f"Unchanged, in {calendar} already: {placed.unchanged}")
    for where, moved in sorted(placed.moved.items()):
        out.add(f"Moving here from {where}: {moved}")
    for where, left in sorted(placed.left.items()):
        out.add(f"Left in the read-only calendar {where}: {left}")
    skipped = [f"{s.where}: {s.reason}" for s in read.skipped]
    out.listing(f"Skipped, cannot be read ({len(skipped)}):", skipped, len(skipped))
    repaired = read.warnings
    out.listing(f"Repaired while reading ({len(repaired)}):", repaired, len(repaired))
    return out.text()


class _Lines:
    """Lines within MAX_DETAIL characters, each addition leaving room for a closing
    "… and N more"."""

    def __init__(self) -> None:
        self._lines: list[str] = []
        self._left = MAX_DETAIL

    def add(self, line: str) -> bool:
        """Add the line (cut to MAX_LINE); False when it no longer fits."""
        text = _cut(line, MAX_LINE)
        if len(text) + 1 + MORE_ROOM > self._left:
            return False
        self._lines.append(text)
        self._left -= len(text) + 1
        return True

    def listing(self, header: str, items: list[str], total: int) -> None:
        """The header and up to MAX_LISTED of ``total`` items, then "… and N more"."""
        if not total or not self.add(header):
            return
        shown = 0
        for item in items[:MAX_LISTED]:
            if not self.add(f"• {item}"):
                break
            shown += 1
        if total > shown:
            more = f"… and {total - shown} more"
            self._lines.append(more)  # add() kept room for it
            self._left -= len(more) + 1

    def text(self) -> str | None:
        return "\n".join(self._lines) or None


def _when(row: EventRow, tz: ZoneInfo, *, zone: bool = False) -> str | None:
    """The event's first time in words in ``tz`` ("repeating from …" for a series)."""
    stored = StoredEvent(
        row.uid, row.calendar, 0, list(row.components.values()), list(row.zones.values())
    )
    try:
        components = parse(stored)
        master = edits.master_of(components)
        first = expansion.occurrence(stored, master, master)
    except (ValueError, StopIteration):  # read once already: words are not worth failing for
        logger.info("import: no words for the time of %s", row.uid, exc_info=True)
        return None
    said = times.words(first.start, first.end, tz)
    if first.all_day:
        said = f"{said.removesuffix(' (all day)')}, all day"
    elif zone:
        said = f"{said}, {tz.key}"
    return f"repeating from {said}" if "RRULE" in master or "RDATE" in master else said


def _title(title: str) -> str:
    return _cut(title, MAX_TITLE)


def _cut(text: str, most: int) -> str:
    """On one line, at most ``most`` characters."""
    line = " ".join(text.split())
    return line if len(line) <= most else f"{line[: most - 1]}…"


def events(count: int) -> str:
    return f"{count} event{'' if count == 1 else 's'}"


def not_ics(lines: list[str]) -> str:
    first = lines[0] if lines else ""
    why = _cut(first.removeprefix("not an iCalendar file: "), 200)
    if first.startswith("not an iCalendar file"):
        return f"This file is not an iCalendar (.ics) file ({why}). {NOTHING}"
    return f"This file cannot be read as an iCalendar (.ics) file: {why}. {NOTHING}"


def no_events(read: Read) -> str:
    if not read.skipped:
        return f"This iCalendar file holds no events. {NOTHING}"
    first = read.skipped[0]
    more = len(read.skipped) - 1
    said = _cut(f"{first.where}: {first.reason}", 300) + (f" (and {more} more)" if more else "")
    return f"No event in this file can be imported: {said}. {NOTHING}"


def nothing_new(calendar: str, placed: Written) -> str:
    said = []
    if placed.unchanged:
        one = placed.unchanged == 1
        said.append(
            f"{events(placed.unchanged)} {'is' if one else 'are'} in {calendar} already, "
            f"as the file has {'it' if one else 'them'}"
        )
    said += [
        f"{events(n)} {'is' if n == 1 else 'are'} in the read-only calendar {where}"
        for where, n in sorted(placed.left.items())
    ]
    return f"Nothing to import: {'; '.join(said)}."
