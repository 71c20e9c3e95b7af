"""Reading an ``.ics`` file event by event, as rows for the local calendar (``ics_files``
imports and exports them, ``commands`` is ``clawmesh calendar import|export``).

The reader goes event by event: what is valid is imported, each event that is not is skipped
and named (its UID, or its place in the file) with the reason, and what was repaired is
said in a warning. Only a file that is no iCalendar at all is refused whole. It accepts
what real producers write: several VCALENDARs in one file; an ``UNTIL`` whose type differs
from ``DTSTART`` (Exchange's ``UNTIL=…Z`` on all-day series, Google's date ``UNTIL`` on
timed ones, local ones: made ``DTSTART``'s type); changed occurrences whose series is not
in the file (Google invitations: single events); repeated UIDs and overrides (the highest
``SEQUENCE`` wins); an event without UID (one derived from its content, the same on every
import); a property that does not parse other than a time or rule (dropped); ``DTEND``
beside ``DURATION`` (``DTEND`` kept); an empty ``RRULE`` (a single event); a single event
that ends before it starts (SabreDAV: start and end swapped); a ``DTEND`` of another type
than ``DTSTART`` (made ``DTSTART``'s type); several ``RRULE``s (RFC 5545
allows them: a repeated one is used once, the dates of the others, when each has an end,
become ``RDATE``s: one series follows one rule); a VTIMEZONE with two TZIDs (the first) or
a sub-component whose offset does not parse (left out); stray lines that are no content
line (left out); a file cut short (read up to its last whole event).

Zones (``zones.py``): IANA and Windows names become IANA zones, a custom ``VTIMEZONE``
is kept with the event and its own rules used, a ``TZID`` that names nothing is read in
the file's ``X-WR-TIMEZONE`` if it has one, else ``CALENDAR_TIMEZONE`` (a warning says
so), floating times too. Times keep their wall clock in their zone, never a fixed UTC
instant. Events are keyed by UID: importing the same file again changes nothing, a newer
export updates what changed, and ``--calendar X`` moves events stored in another calendar
into X (the summary says how many, from where).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import re
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from itertools import islice
from typing import Any, cast
from zoneinfo import ZoneInfo

from dateutil.rrule import rrulestr
from icalendar import Calendar, Component, Event, Timezone

from mcp_calendar import edits, rules, times, zones
from mcp_calendar.expansion import instant
from mcp_calendar.local import row
from mcp_calendar.store import EventRow

logger = logging.getLogger(__name__)

MAX_EXTRA_DATES = 1000  # a second RRULE's dates kept as RDATEs
_TIMES = ("DTSTART", "DTEND", "RECURRENCE-ID")
_SINGLE = ("UID", "DTSTART", "DTEND", "DURATION", "RECURRENCE-ID")  # once per event
_ONCE = ("SUMMARY", "LOCATION", "DESCRIPTION", "TRANSP", "SEQUENCE", "STATUS")  # the first
# A property among these that does not parse skips the event; any other is dropped.
_WHEN = frozenset({"DTSTART", "DTEND", "DURATION", "RRULE", "RDATE", "EXDATE", "RECURRENCE-ID"})
_NO_CALENDAR = "not an iCalendar file: it holds no BEGIN:VCALENDAR"
_CONTENT_LINE = re.compile(rb"^[A-Za-z0-9-]+[;:]|^\s*$")
_TZID_LINE = re.compile(rb"^TZID[;:]", re.IGNORECASE)
_OFFSET_LINE = re.compile(rb"^TZOFFSET(FROM|TO)[;:]", re.IGNORECASE)
_OFFSET = re.compile(rb"^TZOFFSET(FROM|TO)[^:]*:[+-]([01]\d|2[0-3])[0-5]\d([0-5]\d)?\s*$", re.I)


class ImportProblems(Exception):
    """The file is no iCalendar at all; ``lines`` says why, one problem a line."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


@dataclass(frozen=True)
class Skipped:
    where: str  # "UID abc" or "event 3 (“Title”)"
    reason: str


@dataclass(frozen=True)
class Read:
    """A file's events as rows to store, the events skipped, and what was repaired."""

    rows: list[EventRow]
    skipped: list[Skipped]
    warnings: list[str]


def read_events(text: bytes, calendar: str, tz: ZoneInfo) -> Read:
    """Every event of an iCalendar file as rows to store, and those that cannot be;
    ImportProblems when the file is no iCalendar at all."""
    reader = _Reader(tz)
    for top in _parse(text, reader.warnings):
        reader.read(top)
    return reader.result(calendar)


def _parse(text: bytes, warnings: list[str]) -> list[Component]:
    """The file's VCALENDARs (or bare VEVENTs). Lines that are no content line are left out
    and a file cut short is read up to its last whole event, each said in a warning."""
    if b"BEGIN:VCALENDAR" not in text.upper() and b"BEGIN:VEVENT" not in text.upper():
        raise ImportProblems([_NO_CALENDAR])
    text = _sound_vtimezones(text, warnings)
    try:
        tops = _tops(text)
    except ValueError as error:
        kept = b"".join(line for line in _logical_lines(text) if _CONTENT_LINE.match(line))
        if kept == text:
            raise ImportProblems([f"not an iCalendar file: {error}"]) from None
        warnings.append("lines that are no iCalendar content line were left out")
        text = kept
        tops = _tops(text)
    if not tops and b"END:VCALENDAR" not in text.upper():
        with contextlib.suppress(ValueError):
            tops = _tops(_closed(text))
        if tops:
            warnings.append(
                "the file ends before END:VCALENDAR: it was read up to its last whole event"
            )
    if not tops:
        raise ImportProblems(["not an iCalendar file: no VCALENDAR in it ends (END:VCALENDAR)"])
    return tops


def _closed(text: bytes) -> bytes:
    """A file cut short, up to its last whole component, and ended there."""
    lines = _logical_lines(text)
    open_: list[bytes] = []
    whole = 0  # lines up to the last one where only the VCALENDAR was open
    for number, line in enumerate(lines, start=1):
        head = line.strip().upper()
        if head.startswith(b"BEGIN:"):
            open_.append(head[6:])
        elif head.startswith(b"END:") and open_:
            open_.pop()
        if len(open_) <= 1:
            whole = number
    kept = b"".join(lines[:whole]).rstrip()
    return kept + b"\r\n" + b"".join(b"END:" + name + b"\r\n" for name in open_[:1])


def _tops(text: bytes) -> list[Component]:
    try:
        found = Calendar.from_ical(text, multiple=True)
    except OSError as error:  # a TZID too long for a zoneinfo path
        raise ImportProblems([f"a TZID cannot be read ({error.strerror})"]) from None
    return [c for c in found if c.name in ("VCALENDAR", "VEVENT")]


def _sound_vtimezones(text: bytes, warnings: list[str]) -> bytes:
    """VTIMEZONEs icalendar can read: one TZID each (the first), and no sub-component whose
    offset does not parse (a historic one, e.g. Prague's 1850 "+5744" for +00:57:44)."""
    upper = text.upper()
    if b"BEGIN:VTIMEZONE" not in upper:
        return text
    out: list[bytes] = []
    part: list[bytes] | None = None  # the STANDARD/DAYLIGHT sub-component being read
    depth, seen = 0, False
    for line in _logical_lines(text):
        head = line.strip().upper()
        if head == b"BEGIN:VTIMEZONE":
            depth, seen = 1, False
        elif depth == 1 and head.startswith(b"BEGIN:"):
            depth, part = 2, [line]
            continue
        elif depth == 2 and part is not None:
            part.append(line)
            if head.startswith(b"END:"):
                depth = 1
                if all(_OFFSET.match(p) for p in part if _OFFSET_LINE.match(p)):
                    out.extend(part)
                else:
                    warnings.append("a VTIMEZONE part whose offset does not parse was left out")
                part = None
            continue
        elif depth == 1 and head.startswith(b"END:"):
            depth = 0
        elif depth == 1 and _TZID_LINE.match(line):
            if seen:
                warnings.append("a VTIMEZONE names more than one TZID: the first was used")
                continue
            seen = True
        out.append(line)
    return b"".join(out)


def _logical_lines(text: bytes) -> list[bytes]:
    """Content lines with their folded continuations joined (each keeps its own ending)."""
    lines: list[bytes] = []
    for line in text.splitlines(keepends=True):
        if lines and line[:1] in (b" ", b"\t"):
            lines[-1] += line
        else:
            lines.append(line)
    return lines


@dataclass(frozen=True)
class _Here:
    """A VCALENDAR's zones: where floating times are read (and why), and its producer's."""

    tz: ZoneInfo
    source: str
    producer: tzinfo


class _Reader:
    """Events checked one by one, then grouped by UID into what the store writes."""

    def __init__(self, tz: ZoneInfo) -> None:
        self.tz = tz
        self.number = 0
        self.events: dict[str, list[tuple[int, Event]]] = {}
        self.originals: dict[str, str] = {}  # TZID -> the file's VTIMEZONE, for exports
        self.skipped: list[Skipped] = []
        self.skipped_uids: set[str] = set()
        self.warnings: list[str] = []
        self.unknown: set[str] = set()

    def read(self, top: Component) -> None:
        texts: list[str] = []
        refused: dict[str, str] = {}
        for zone in top.walk("VTIMEZONE"):
            text = cast(Timezone, zone).to_ical().decode()
            tzid = tzid_of(text)
            why = zones.refusal(text)
            if why is not None and tzid is not None and zones.iana(tzid) is None:
                refused.setdefault(tzid, why)  # neither used nor kept for exports
                continue
            texts.append(text)
            if tzid is not None:
                self.originals.setdefault(tzid, text)
        find = zones.lookup(texts)
        given = zones.iana(str(top.get("X-WR-TIMEZONE", "")))  # Google's, Apple's
        defined = {find(t) for t in map(tzid_of, texts) if t is not None} - {None}
        only = next(iter(defined)) if len(defined) == 1 else None
        here = _Here(
            given or self.tz,
            "the file's X-WR-TIMEZONE" if given else "CALENDAR_TIMEZONE",
            producer=given or only or self.tz,  # Exchange gives its mailbox's zone
        )
        for tzid, why in refused.items():
            if tzid not in self.unknown:  # said once per file, as an unknown zone is
                self.unknown.add(tzid)
                self.warnings.append(
                    f"the time zone “{tzid}” is refused: {why}; its times were read in "
                    f"{here.tz.key} ({here.source})"
                )
        for component in top.walk("VEVENT"):
            self.number += 1
            event = cast(Event, component)
            name = f"event {self.number} (“{_summary(event)}”)"
            uid = event.get("UID")  # the file's: a derived one names nothing the user has
            try:
                problem = self._prepare(event, name, find, here)
            except Exception as error:
                logger.info("import: %s cannot be read", name, exc_info=True)
                problem = f"it cannot be read ({type(error).__name__}: {error})"
            if problem is not None:
                where = f"UID {uid}" if isinstance(uid, str) else name
                self.skipped.append(Skipped(where, problem))
                if isinstance(uid, str):
                    self.skipped_uids.add(str(uid))
                continue
            if uid is None:
                self.warnings.append(f"{name}: it has no UID: it was given {event['UID']}")
            self.events.setdefault(str(event["UID"]), []).append((self.number, event))

    def _prepare(self, event: Event, name: str, find: zones.Lookup, here: _Here) -> str | None:
        """Repair what can be (warned), or why the event is skipped; floating times and
        unknown zones are read in ``here.tz`` (the file's zone, else the calendar's)."""
        problem = self._repair(event, name)
        if problem is not None:
            return problem
        tz, source = here.tz, here.source
        for tzid in sorted(zones.retime(event, find, tz) - self.unknown):
            self.unknown.add(tzid)
            self.warnings.append(
                f"the time zone “{tzid}” is unknown and the file does not define it: its "
                f"times were read in {tz.key} ({source})"
            )
        _floating(event, tz)
        self._end_type(event, name)
        self._swap_ends(event, name)
        problem = _time_problem(event) or self._one_rule(event, name, tz, here.producer)
        problem = problem or _rule_problem(event)
        if problem is None and "RRULE" in event:
            _until(event, tz, here.producer)
            problem = _expand_problem(event)
        return problem

    def _end_type(self, event: Event, name: str) -> None:
        """A DTEND of another type than DTSTART made DTSTART's type (as ``UNTIL``): a time
        becomes its day (the next one when it is past midnight), a day its midnight in the
        start's zone."""
        if "DTEND" not in event:
            return
        start, end = event.decoded("DTSTART"), event.decoded("DTEND")
        if isinstance(start, datetime) == isinstance(end, datetime):
            return
        if isinstance(end, datetime):
            day = end.date() + (timedelta(days=1) if end.time() != time() else timedelta())
            event.pop("DTEND")
            event.add("dtend", day)
        else:
            event.pop("DTEND")
            event.add("dtend", datetime.combine(end, time(), start.tzinfo))
        self.warnings.append(
            f"{name}: its start and end are not both days or both times: "
            "the end was made the start's type"
        )

    def _swap_ends(self, event: Event, name: str) -> None:
        """A single event whose DTEND is before its DTSTART (SabreDAV/Nextcloud wrote one):
        the two swapped, as recurring-ical-events reads it. A series keeps its start (its
        EXDATEs and overrides name it) and is skipped."""
        if "DTEND" not in event or "RRULE" in event or "RDATE" in event:
            return
        start, end = event.decoded("DTSTART"), event.decoded("DTEND")
        mixed = isinstance(start, datetime) != isinstance(end, datetime)
        if mixed or instant(end) >= instant(start):
            return
        event["DTSTART"], event["DTEND"] = event["DTEND"], event["DTSTART"]
        self.warnings.append(f"{name}: it ends before it starts: its start and end were swapped")

    def _one_rule(self, event: Event, name: str, tz: tzinfo, producer: tzinfo) -> str | None:
        """Several RRULEs (RFC 5545 allows them; Cyrus writes one twice) as one series:
        a repeated rule once, the dates of the others (each with an end) as RDATEs."""
        found: Any = event.get("RRULE")
        if not isinstance(found, list):
            return None
        distinct = list({rule.to_ical(): rule for rule in found}.values())
        event["RRULE"] = distinct[0]
        if len(distinct) == 1:
            self.warnings.append(f"{name}: it has the same RRULE {len(found)} times: one was used")
            return None
        dates: list[datetime | date] = []
        for rule in distinct[1:]:
            problem = _rule_dates(event.decoded("DTSTART"), rule, tz, producer, dates)
            if problem is not None:
                return problem
        if len(dates) > MAX_EXTRA_DATES:
            return f"it has more than one RRULE, and the others give over {MAX_EXTRA_DATES} dates"
        event.add("rdate", sorted(set(dates)))
        self.warnings.append(
            f"{name}: it has {len(distinct)} RRULEs: the first is its rule, the dates of the "
            "others were added as RDATEs"
        )
        return None

    def _repair(self, event: Event, name: str) -> str | None:
        """Properties that do not parse or come twice, a missing UID: repaired and warned,
        or why the event is skipped."""
        for prop, message in event.errors:
            if prop is not None and prop.upper() in _WHEN:
                return f"{prop} does not parse ({message})"
            if prop is not None:
                event.pop(prop, None)
            self.warnings.append(f"{name}: {_what(prop)} does not parse and was left out")
        for prop in _SINGLE:
            if isinstance(event.get(prop), list):
                return f"it has more than one {prop}"
        for prop in _ONCE:
            found = event.get(prop)
            if isinstance(found, list):
                event[prop] = found[0]
                self.warnings.append(f"{name}: it has more than one {prop}: the first was used")
        if "RRULE" in event and not isinstance(event["RRULE"], list) and not event["RRULE"]:
            event.pop("RRULE")
            self.warnings.append(f"{name}: its RRULE is empty: it was read as a single event")
        if "UID" not in event:
            event.add("uid", _derived_uid(event))  # said once the event is imported
        if "DTSTART" not in event:
            return "no start (DTSTART)"
        if "DTEND" in event and "DURATION" in event:
            event.pop("DURATION")
            self.warnings.append(f"{name}: it has both DTEND and DURATION: DTEND was used")
        return None

    def result(self, calendar: str) -> Read:
        rows: list[EventRow] = []
        for uid, found in self.events.items():
            components = self._components(uid, found)
            for group in components:
                try:
                    made = row(calendar, group)
                except Exception as error:
                    logger.info("import: UID %s cannot be stored", uid, exc_info=True)
                    self.skipped.append(Skipped(f"UID {uid}", f"it cannot be read ({error})"))
                    continue
                given = {t: self.originals[t] for t in zones.tzids(group) if t in self.originals}
                rows.append(replace(made, zones={**given, **made.zones}))
        return Read(rows, self.skipped, self.warnings)

    def _components(self, uid: str, found: list[tuple[int, Event]]) -> list[list[Event]]:
        """The event's components (one group), or its orphaned overrides as singles."""
        masters = [e for n, e in found if "RECURRENCE-ID" not in e]
        overrides: dict[str, list[Event]] = {}
        for _, event in found:
            if "RECURRENCE-ID" in event:
                overrides.setdefault(edits.component_rid(event), []).append(event)
        if len(masters) > 1:
            self.warnings.append(
                f"UID {uid}: {len(masters)} copies of the event: the highest SEQUENCE was kept"
            )
        kept = [_latest(each) for each in overrides.values()]
        if any(len(each) > 1 for each in overrides.values()):
            self.warnings.append(
                f"UID {uid}: an occurrence is changed more than once: the highest SEQUENCE was kept"
            )
        if masters:
            return [[_latest(masters), *kept]]
        if uid in self.skipped_uids:
            self.skipped.extend(
                Skipped(f"UID {uid}", "a changed occurrence of a series that was skipped")
                for _ in kept
            )
            return []
        self.warnings.append(
            f"UID {uid}: changed occurrences without their series: imported as single events"
        )
        return [[_single(event, uid if len(kept) == 1 else None)] for event in kept]


def _what(prop: str | None) -> str:
    return "a line" if prop is None else f"its {prop}"


def _summary(event: Event) -> str:
    found = event.get("SUMMARY", "untitled")
    return str(found[0] if isinstance(found, list) else found)


def tzid_of(text: str) -> str | None:
    try:
        return str(Timezone.from_ical(text)["TZID"])
    except Exception:
        return None


def _derived_uid(event: Event) -> str:
    """The same UID for the same event on every import (DTSTAMP, the export time, aside)."""
    lines = [
        line
        for line in event.to_ical().splitlines()
        if not line.upper().startswith((b"DTSTAMP", b"UID"))
    ]
    digest = hashlib.sha256(b"\n".join(lines)).hexdigest()
    return f"{digest[:32]}@import.clawmesh"


def _latest(events: list[Event]) -> Event:
    """The copy with the highest SEQUENCE; among equals, the last in the file (as
    ``edits.deduplicate`` keeps them for every reader)."""
    return max(reversed(events), key=edits.sequence)


def _single(override: Event, uid: str | None) -> Event:
    """A changed occurrence whose series is not here, as a single event."""
    rid = edits.component_rid(override)
    override.pop("RECURRENCE-ID")
    if uid is None:
        edits.rename([override], f"{override['UID']}_R{rid}")
    return override


def _time_problem(event: Event) -> str | None:
    for name in _TIMES:
        if name in event and not times.supported(event.decoded(name)):
            return f"{name} is outside the years {times.FIRST_YEAR}–{times.LAST_YEAR}"
    for name in ("RDATE", "EXDATE"):
        if name in event and not all(_when(m) for m in zones.moments(event[name])):
            return f"its {name} holds a value that is no date, time or period (e.g. VALUE=TIME)"
    if "DTEND" in event:
        start, end = event.decoded("DTSTART"), event.decoded("DTEND")
        if isinstance(start, datetime) != isinstance(end, datetime):
            return "start and end are not both dates or both times"
        if instant(end) < instant(start):
            return "it ends before it starts"
    return None


def _when(moment: object) -> bool:
    if isinstance(moment, tuple):
        return len(moment) == 2 and isinstance(moment[0], datetime | date)  # a period
    return isinstance(moment, datetime | date)


def _rule_dates(
    start: datetime | date, rule: Any, tz: tzinfo, producer: tzinfo, dates: list[Any]
) -> str | None:
    """Add the dates of a further RRULE (one with an end) to ``dates``, or say why not."""
    if "COUNT" not in rule and "UNTIL" not in rule:
        return "it has more than one RRULE, one without end: a series here follows one rule"
    refused = rules.problem(rule, start)
    if refused is not None:
        return f"its RRULE cannot be used: {refused}"
    alone = Event()
    alone.add("dtstart", start)
    alone["RRULE"] = rule
    _until(alone, tz, producer)
    timed = isinstance(start, datetime)
    try:
        expanded = rrulestr(edits.rule_text(alone), dtstart=start if timed else _naive(start))
        moments = list(islice(expanded, MAX_EXTRA_DATES + 1))
    except (ValueError, TypeError) as error:
        return f"its RRULE cannot be expanded ({error})"
    dates += [moment if timed else moment.date() for moment in moments]
    return None


def _rule_problem(event: Event) -> str | None:
    """A rule no person means (rules.py), checked before dateutil runs it, or more RDATEs
    than a series holds."""
    if "RDATE" in event and len(zones.moments(event["RDATE"])) > rules.MAX_DATES:
        return f"it has more than {rules.MAX_DATES} RDATEs"
    if "RRULE" not in event:
        return None
    rule: Any = event["RRULE"]
    if isinstance(rule, list):
        return "it has more than one RRULE: a series here follows one rule"
    start = event.decoded("DTSTART")
    refused = rules.problem(rule, start)
    if refused is not None:
        return f"its RRULE cannot be used: {refused}"
    return None


def _expand_problem(event: Event) -> str | None:
    start = event.decoded("DTSTART")
    try:
        rrulestr(
            edits.rule_text(event), dtstart=start if isinstance(start, datetime) else _naive(start)
        )
    except (ValueError, TypeError) as error:
        return f"its RRULE cannot be expanded ({error})"
    return None


def _until(event: Event, tz: tzinfo, producer: tzinfo) -> None:
    """UNTIL made DTSTART's type (RFC 5545): a date for a date, else a UTC time. A date
    UNTIL on a timed series keeps that whole day; a floating one is read in DTSTART's zone;
    a UTC one on an all-day series is the day it starts in the producer's zone (Exchange
    writes the last day's local midnight in UTC)."""
    rule: Any = event["RRULE"]
    if "UNTIL" not in rule:
        return
    start = event.decoded("DTSTART")
    until = rule["UNTIL"][0]
    rule["UNTIL"] = [_until_like(until, start, tz, producer)]


def _until_like(until: date, start: date, tz: tzinfo, producer: tzinfo) -> date:
    if not isinstance(start, datetime):
        if isinstance(until, datetime):
            return (until.astimezone(producer) if until.tzinfo else until).date()
        return until
    zone = start.tzinfo or tz
    if not isinstance(until, datetime):
        until = datetime.combine(until, time(23, 59, 59))
    if until.tzinfo is None:
        until = until.replace(tzinfo=zone)
    return until.astimezone(UTC)


def _floating(event: Event, tz: ZoneInfo) -> None:
    """Floating times (no zone) are read in ``tz``."""
    for name in _TIMES:
        if name in event:
            value = event.decoded(name)
            if isinstance(value, datetime) and value.tzinfo is None:
                event.pop(name)
                event.add(name.lower(), value.replace(tzinfo=tz))
    for name in ("EXDATE", "RDATE"):
        if name in event:
            moments = zones.moments(event[name])
            if any(isinstance(m, datetime) and m.tzinfo is None for m in moments):
                event.pop(name)
                for moment in moments:
                    event.add(name.lower(), _zoned(moment, tz))


def _zoned(value: Any, tz: ZoneInfo) -> Any:
    if isinstance(value, tuple):
        return tuple(_zoned(part, tz) for part in value)
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.replace(tzinfo=tz)
    return value


def _naive(moment: datetime | date) -> datetime:
    if isinstance(moment, datetime):
        return moment
    return datetime.combine(moment, datetime.min.time())
