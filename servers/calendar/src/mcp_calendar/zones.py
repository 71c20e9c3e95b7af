"""Which zone an event's ``TZID`` names, and its times put in that zone.

A ``TZID`` is, in this order: an IANA name (``Europe/Berlin``; also the ``/vendor/Olson``
form libical and Lightning write); a Windows name (Outlook and Exchange write
``W. Europe Standard Time``), mapped to IANA with icalendar's own table
(``WINDOWS_TO_OLSON``); else a custom zone, the file's ``VTIMEZONE`` of that ``TZID``,
whose own rules are used (:class:`CustomZone`); else nothing (the caller reads its times
in the calendar's zone and says so). A ``VTIMEZONE`` whose parts change the offset more
often than a zone does (``zone_rules.py``) is refused: :func:`refusal` says why, and
:func:`lookup`'s ``find`` raises :class:`ZoneRefused` for its TZID. Times keep their wall
clock in their zone, so a weekly 11:00 stays at 11:00 across a DST change and its EXDATEs
still match.

icalendar resolves a ``TZID`` through a process-wide cache that keeps the first
``VTIMEZONE`` it saw under each name: two files with the same custom ``TZID`` and
different rules would mix. So the zone is always chosen here from the ``TZID`` parameter
and the event's own ``VTIMEZONE``s, never taken from the parsed value's ``tzinfo``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from functools import lru_cache
from typing import Any, cast
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from icalendar import Component, Event, Timezone
from icalendar.timezone import tzp
from icalendar.timezone.windows_to_olson import WINDOWS_TO_OLSON

from mcp_calendar import zone_rules

TIMES = ("DTSTART", "DTEND", "RECURRENCE-ID", "EXDATE", "RDATE")
Lookup = Callable[[str], tzinfo | None]
DAY = timezone(timedelta(0), "a day")  # marks a value that is a date, whatever its TZID


class ZoneRefused(ValueError):
    """A TZID whose ``VTIMEZONE`` is refused (``zone_rules.py``): its times are not read."""

    def __init__(self, tzid: str, reason: str) -> None:
        super().__init__(f"its time zone {tzid!r} is refused: {reason}")
        self.tzid = tzid
        self.reason = reason


class CustomZone(tzinfo):
    """A ``VTIMEZONE``'s own rules under its ``TZID``; ``ics`` is the component's text."""

    def __init__(self, tzid: str, ics: str, rules: tzinfo) -> None:
        self.key = tzid  # what icalendar writes as TZID, and Occurrence.zone
        self.ics = ics
        self._rules = rules

    def utcoffset(self, dt: datetime | None) -> timedelta | None:
        return self._rules.utcoffset(dt)

    def dst(self, dt: datetime | None) -> timedelta | None:
        return self._rules.dst(dt)

    def tzname(self, dt: datetime | None) -> str | None:
        return self._rules.tzname(dt)

    def fromutc(self, dt: datetime) -> datetime:
        return self._rules.fromutc(dt.replace(tzinfo=self._rules)).replace(tzinfo=self)

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return custom, (self.ics,)

    def __deepcopy__(self, memo: dict[int, Any]) -> CustomZone:
        return self

    def __repr__(self) -> str:
        return f"CustomZone({self.key!r})"


def iana(tzid: str) -> ZoneInfo | None:
    """The IANA zone a TZID names, directly, as a Windows name, or as ``/vendor/Olson``.
    A ``posix/Olson`` name is its Olson zone: icalendar knows no ``posix/`` name and would
    read it by the file's VTIMEZONE, kept process-wide for that TZID."""
    cleaned = tzid.strip().strip("/").removeprefix("posix/")
    candidates = [cleaned]
    if cleaned in WINDOWS_TO_OLSON:
        candidates.append(WINDOWS_TO_OLSON[cleaned])
    if tzid.startswith("/"):
        parts = cleaned.split("/")
        candidates.extend("/".join(parts[n:]) for n in range(1, len(parts)))
    for name in candidates:
        zone = _zoneinfo(name)
        if zone is not None:
            return zone
    return None


def _zoneinfo(name: str) -> ZoneInfo | None:
    if not name or len(name) > 255 or name.startswith(".") or ".." in name:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return None


@lru_cache(maxsize=512)
def refusal(ics: str) -> str | None:
    """Why a ``VTIMEZONE`` text's rules are not used (``zone_rules.py``), or None (a text
    that does not parse is not refused here: :func:`custom` cannot read it)."""
    try:
        component = cast(Timezone, Timezone.from_ical(ics))
    except Exception:
        return None
    return zone_rules.problem(component)


@lru_cache(maxsize=512)
def custom(ics: str) -> CustomZone | None:
    """The zone a ``VTIMEZONE`` text defines, or None when its rules cannot be read or
    are refused (:func:`refusal`)."""
    if refusal(ics) is not None:
        return None
    try:
        component = cast(Timezone, Timezone.from_ical(ics))
        rules = _rules(component)
    except Exception:
        return None
    return None if rules is None else CustomZone(str(component["TZID"]), ics, rules)


def _rules(component: Timezone) -> tzinfo | None:
    """The component's rules; sub-components that do not parse (historic ones the events
    rarely need) are dropped when the whole cannot be read."""
    with contextlib.suppress(Exception):
        return tzp.create_timezone(component)
    kept = [sub for sub in component.subcomponents if _usable(sub)]
    if not kept or len(kept) == len(component.subcomponents):
        return None
    component.subcomponents = kept
    try:
        return tzp.create_timezone(component)
    except Exception:
        return None


def _usable(sub: Component) -> bool:
    needed = ("DTSTART", "TZOFFSETFROM", "TZOFFSETTO")
    return not sub.errors and all(
        name in sub and not isinstance(sub[name], list) for name in needed
    )


def lookup(vtimezones: Iterable[str]) -> Lookup:
    """A TZID's zone: IANA (or Windows) first, else the custom zone of these VTIMEZONE texts
    (:class:`ZoneRefused` when that zone is refused)."""
    defined: dict[str, str] = {}
    for text in vtimezones:
        with contextlib.suppress(Exception):
            defined.setdefault(str(Timezone.from_ical(text)["TZID"]), text)

    def find(tzid: str) -> tzinfo | None:
        found = iana(tzid)
        if found is not None:
            return found
        text = defined.get(tzid)
        if text is None:
            return None
        refused = refusal(text)
        if refused is not None:
            raise ZoneRefused(tzid, refused)
        return custom(text)

    return find


def retime(event: Event, find: Lookup, fallback: tzinfo | None) -> set[str]:
    """Put every time of ``event`` that has a TZID in that zone (same wall clock); a TZID
    ``find`` does not know goes to ``fallback`` (None: left as is). The unknown TZIDs."""
    unknown: set[str] = set()
    for name in TIMES:
        if name not in event:
            continue
        found: Any = event[name]
        entries = found if isinstance(found, list) else [found]
        if not any("TZID" in entry.params for entry in entries):
            continue
        values = []
        for entry in entries:
            tzid = entry.params.get("TZID")
            zone = None if tzid is None else find(str(tzid))
            if tzid is not None and zone is None:
                unknown.add(str(tzid))
                zone = fallback
            if str(entry.params.get("VALUE", "")).upper() == "DATE":
                zone = DAY  # DTSTART;TZID=…;VALUE=DATE is a day: the TZID says nothing
            values.append((_moments(entry), zone, tzid))
        if any(zone is None and tzid is not None for _, zone, tzid in values):
            continue
        event.pop(name)
        for moments, where, _ in values:
            placed = [_placed(m, where) for m in moments]
            event.add(name.lower(), placed if name in ("EXDATE", "RDATE") else placed[0])
    return unknown


def _moments(entry: Any) -> list[Any]:
    if hasattr(entry, "dts"):
        return [item.dt for item in entry.dts]
    return [entry.dt]


def _placed(moment: Any, zone: tzinfo | None) -> Any:
    if isinstance(moment, tuple):  # an RDATE period: (start, end or duration)
        return tuple(_placed(part, zone) for part in moment)
    if zone is DAY:
        return moment.date() if isinstance(moment, datetime) else moment
    if not isinstance(moment, datetime) or zone is None:
        return moment
    return moment.replace(tzinfo=zone)


def used(components: Iterable[Event]) -> dict[str, str]:
    """The custom zones these components' times are in: TZID -> VTIMEZONE text."""
    found: dict[str, str] = {}
    for component in components:
        for name in TIMES:
            if name not in component:
                continue
            for moment in moments(component[name]):
                for part in moment if isinstance(moment, tuple) else (moment,):
                    zone = getattr(part, "tzinfo", None)
                    if isinstance(zone, CustomZone):
                        found[zone.key] = zone.ics
    return found


def moments(found: Any) -> list[Any]:
    """A time property's values (all its lines): datetimes, dates, RDATE periods."""
    entries = found if isinstance(found, list) else [found]
    return [moment for entry in entries for moment in _moments(entry)]


def tzids(components: Iterable[Event]) -> set[str]:
    """Every TZID these components' times name."""
    found: set[str] = set()
    for component in components:
        for name in TIMES:
            if name not in component:
                continue
            entries: Any = component[name]
            for entry in entries if isinstance(entries, list) else [entries]:
                if "TZID" in entry.params:
                    found.add(str(entry.params["TZID"]))
    return found


def name(zone: tzinfo | None) -> str:
    """The zone's name for people: its IANA name, or a custom zone's TZID."""
    return str(getattr(zone, "key", None) or "UTC")


def named(name: str) -> tzinfo:
    """The zone an Occurrence's ``zone`` names, to put a payload's times in: its IANA
    zone, else UTC (a custom zone's rules live with its event, which edits use)."""
    return iana(name) or UTC
