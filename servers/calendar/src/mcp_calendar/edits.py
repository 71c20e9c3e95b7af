"""Changes to one event as iCalendar components: how a scope becomes an RRULE edit.

A series is its master VEVENT (with RRULE, EXDATE) plus one VEVENT per changed
occurrence, carrying the same UID and a RECURRENCE-ID (its original start). Any backend
that stores iCalendar (local SQLite, CalDAV) applies these; the components are
``icalendar`` objects, recurrence arithmetic is ``dateutil``'s.

    scope       move                                   cancel
    this        an override (RECURRENCE-ID) with        an EXDATE (its override, if any,
                the new times                           is dropped)
    following   the series ends before it (UNTIL;       the series ends before it
                COUNT becomes UNTIL) and a new series
                UID_R<start> starts at the new time
                with the rest of the rule
    series      DTSTART, the rule's weekdays, UNTIL,     the whole event is deleted
                EXDATEs and overrides shift by the
                wall-clock distance the chosen
                occurrence moves

"following" on the first occurrence is "series". A single event ignores the scope.
Wall-clock arithmetic in the event's zone keeps 10:00 at 10:00 across DST changes. An UNTIL
written here takes the form RFC 5545 asks beside DTSTART: UTC (``Z``) for a zoned start,
whatever object stands for UTC; a date for a date; floating for a floating start.

Two components for one RECURRENCE-ID (an organizer's update beside its older version) are
one: :func:`deduplicate` keeps the highest SEQUENCE, as every reader of the event should.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import Any

from dateutil.rrule import rrulestr
from icalendar import Event, vRecur

from mcp_calendar import rules
from mcp_calendar.backend import Moment, NewEvent, Scope
from mcp_calendar.errors import InvalidRequest

_WEEKDAYS = ["MO", "TU", "WE", "TH", "FR", "SA", "SU"]
_RULE_CHECK_START = datetime(2026, 1, 1)  # a rule checked without its series' start
_DAY_BOUND = ("BYMONTHDAY", "BYYEARDAY", "BYWEEKNO", "BYSETPOS")  # a day shift would break them


@dataclass(frozen=True)
class Edited:
    kept: list[Event]  # the event's components now; empty: delete the event
    split: list[Event]  # a new series (move "following"), else empty


def new_components(event: NewEvent) -> list[Event]:
    component = Event()
    component.add("uid", event.uid)
    component.add("summary", event.title)
    component.add("dtstart", event.start)
    component.add("dtend", event.end)
    if event.rule:
        component.add("rrule", parse_rule(event.rule, event.start))
    if event.location:
        component.add("location", event.location)
    if event.description:
        component.add("description", event.description)
    return [component]


def parse_rule(rule: str, start: Moment | None = None) -> vRecur:
    """An RRULE value (``FREQ=WEEKLY;BYDAY=MO``, with or without ``RRULE:``), for a series
    from ``start`` (default: the rule's pattern alone); one no person means is refused
    (``rules.py``) before dateutil runs it. Its UNTIL takes the form beside ``start``
    (:func:`until`): ``UNTIL=…Z`` and a local ``UNTIL`` both do for a zoned start."""
    text = rule.strip().removeprefix("RRULE:")
    try:
        parsed: vRecur = vRecur.from_ical(text)
    except (ValueError, TypeError) as error:
        raise _not_a_rule(rule) from error
    if "FREQ" not in parsed:  # icalendar reads any words as a rule without parts
        raise _not_a_rule(rule)
    reference = start if start is not None else _RULE_CHECK_START
    if "UNTIL" in parsed:
        parsed["UNTIL"] = [until(u, reference) for u in parsed["UNTIL"]]
    refused = rules.problem(parsed, reference)
    if refused is not None:
        raise InvalidRequest(f"The recurrence {text} cannot be used: {refused}.")
    first = reference if isinstance(reference, datetime) else rules.midnight(reference)
    try:
        rrulestr(rules.as_text(parsed), dtstart=first)  # dateutil must expand it too
    except (ValueError, TypeError) as error:
        raise _not_a_rule(rule) from error
    return parsed


def _not_a_rule(rule: str) -> InvalidRequest:
    return InvalidRequest(
        f"{rule!r} is not a recurrence rule: use RFC 5545 RRULE syntax, "
        "e.g. FREQ=WEEKLY;BYDAY=MO or FREQ=MONTHLY;BYMONTHDAY=1;COUNT=6."
    )


def deduplicate(components: list[Event]) -> list[Event]:
    """One component per RECURRENCE-ID (the master's: none): of several, the highest
    SEQUENCE, and of equal ones the last given. Each keeps the place of the first."""
    kept: dict[str, Event] = {}
    for component in components:
        key = component_rid(component)
        if key not in kept or sequence(component) >= sequence(kept[key]):
            kept[key] = component
    return list(kept.values())


def sequence(component: Event) -> int:
    """The component's SEQUENCE (0 when it has none, or none that reads as a number)."""
    try:
        return int(component.get("SEQUENCE", 0))
    except (TypeError, ValueError):
        return 0


def master_of(components: list[Event]) -> Event:
    return next(c for c in components if "RECURRENCE-ID" not in c)


def rid_key(moment: Moment) -> str:
    """A recurrence id compared as text: the UTC instant, or the date."""
    if isinstance(moment, datetime):
        return moment.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    return moment.strftime("%Y%m%d")


def move(
    components: list[Event], rid: Moment | None, scope: Scope, start: Moment, end: Moment
) -> Edited:
    master = master_of(components)
    if rid is None or "RRULE" not in master:
        _set_times(master, start, end)
        return Edited([master], [])
    if scope == "this":
        return Edited(_move_one(components, rid, start, end), [])
    if scope == "following" and rid_key(rid) != rid_key(master.start):
        kept, tail = _split(components, rid)
        return Edited(kept, _shift_series(tail, rid, start, end))
    return Edited(_shift_series(components, rid, start, end), [])


def cancel(components: list[Event], rid: Moment | None, scope: Scope) -> Edited:
    master = master_of(components)
    if rid is None or "RRULE" not in master or scope == "series":
        return Edited([], [])
    if scope == "following":
        if rid_key(rid) == rid_key(master.start):
            return Edited([], [])
        kept, _ = _split(components, rid)
        return Edited(kept, [])
    kept = [c for c in components if component_rid(c) != rid_key(rid)]
    master.add("exdate", _like(rid, master.start))
    return Edited(kept, [])


def _move_one(components: list[Event], rid: Moment, start: Moment, end: Moment) -> list[Event]:
    master = master_of(components)
    for component in components:
        if component_rid(component) == rid_key(rid):
            _set_times(component, start, end)
            return components
    override = Event()
    for name in ("UID", "SUMMARY", "LOCATION", "DESCRIPTION", "TRANSP", "CATEGORIES"):
        if name in master:
            override[name] = copy.deepcopy(master[name])
    override.add("recurrence-id", _like(rid, master.start))
    override.add("dtstart", start)
    override.add("dtend", end)
    return [*components, override]


def _split(components: list[Event], rid: Moment) -> tuple[list[Event], list[Event]]:
    """The series up to ``rid`` (ended by UNTIL) and a copy of it from ``rid`` on."""
    master = master_of(components)
    cut = rid_key(rid)
    tail = [copy.deepcopy(c) for c in components if c is master or component_rid(c) >= cut]
    rule = _the_rule(master)
    if "COUNT" in rule:
        before = _occurrences_before(master, rid)
        tail_master = master_of(tail)
        tail_master["RRULE"] = vRecur({**rule, "COUNT": [int(rule["COUNT"][0]) - before]})
    kept_rule = vRecur({k: v for k, v in rule.items() if k not in ("COUNT", "UNTIL")})
    kept_rule["UNTIL"] = [_until_before(rid, master.start)]
    master["RRULE"] = kept_rule
    if "EXDATE" in master:
        _filter_exdates(master, lambda key: key < cut)
        _filter_exdates(master_of(tail), lambda key: key >= cut)
    kept = [c for c in components if c is master or component_rid(c) < cut]
    tail_master = master_of(tail)
    duration = _duration(master)
    tail_master.pop("DTSTART")
    tail_master.pop("DTEND", None)
    tail_master.pop("DURATION", None)
    tail_master.add("dtstart", _like(rid, master.start))
    tail_master.add("dtend", _like(rid, master.start) + duration)
    return kept, tail


def _shift_series(components: list[Event], rid: Moment, start: Moment, end: Moment) -> list[Event]:
    """Every occurrence moves by the wall-clock distance from ``rid`` to ``start``."""
    master = master_of(components)
    zone = master.start.tzinfo if isinstance(master.start, datetime) else None
    delta = wall(start, zone) - wall(_like(rid, master.start), zone)
    days = (day(start, zone) - day(_like(rid, master.start), zone)).days
    old_start = master.start
    rule = _the_rule(master)
    if days % 7 and "BYDAY" in rule:
        rule["BYDAY"] = [shift_weekday(day, days) for day in rule["BYDAY"]]
    if days and any(part in rule for part in _DAY_BOUND):
        raise InvalidRequest(
            "This series repeats on fixed days of the month or year, so it cannot move to "
            "another day as a whole: move this occurrence, or cancel the series from here "
            "and add a new one."
        )
    new_start = _shifted(old_start, delta, zone)
    if "UNTIL" in rule:
        rule["UNTIL"] = [
            until(_shifted(until(u, old_start), delta, zone), new_start) for u in rule["UNTIL"]
        ]
    _set_times(master, new_start, new_start + _span(start, end))
    if "EXDATE" in master:
        dates = [_shifted(d.dt, delta, zone) for d in exdates(master)]
        master.pop("EXDATE")
        for moved in dates:
            master.add("exdate", moved)
    for component in components:
        if component is master:
            continue
        was = component.decoded("RECURRENCE-ID")
        component.pop("RECURRENCE-ID")
        component.add("recurrence-id", _shifted(was, delta, zone))
        if rid_key(was) == rid_key(rid):  # the occurrence the user moved: where they said
            _set_times(component, start, end)
        elif rid_key(component.start) == rid_key(was):  # not moved on its own: it follows
            _set_times(
                component,
                _shifted(component.start, delta, zone),
                _shifted(component.end, delta, zone),
            )
    return components


def rename(components: list[Event], uid: str) -> list[Event]:
    for component in components:
        component.pop("UID")
        component.add("uid", uid)
    return components


def _set_times(component: Event, start: Moment, end: Moment) -> None:
    for name in ("DTSTART", "DTEND", "DURATION"):
        component.pop(name, None)
    component.add("dtstart", start)
    component.add("dtend", end)


def component_rid(component: Event) -> str:
    """A component's RECURRENCE-ID as ``rid_key`` writes it ('' for the master)."""
    if "RECURRENCE-ID" not in component:
        return ""
    value: Moment = component.decoded("RECURRENCE-ID")
    return rid_key(value)


def _like(moment: Moment, reference: Moment) -> Moment:
    """``moment`` in the form of ``reference``: the same zone, or a date."""
    if isinstance(reference, datetime):
        if not isinstance(moment, datetime):
            return datetime.combine(moment, reference.timetz())
        return moment.astimezone(reference.tzinfo) if reference.tzinfo else moment
    return moment.date() if isinstance(moment, datetime) else moment


def wall(moment: Moment, zone: tzinfo | None) -> datetime:
    """The wall clock of ``moment`` in ``zone`` (a date: its midnight), without a zone."""
    if isinstance(moment, datetime):
        local = moment.astimezone(zone) if zone else moment
        return local.replace(tzinfo=None)
    return datetime.combine(moment, datetime.min.time())


def day(moment: Moment, zone: tzinfo | None) -> date:
    return wall(moment, zone).date()


def _shifted(moment: Any, delta: timedelta, zone: tzinfo | None) -> Moment:
    if isinstance(moment, datetime):
        if moment.tzinfo is not None and zone is not None:
            local = moment.astimezone(zone).replace(tzinfo=None) + delta
            return local.replace(tzinfo=zone).astimezone(moment.tzinfo)
        plain: datetime = moment + delta
        return plain
    day: date = moment + timedelta(days=delta.days)
    return day


def _span(start: Moment, end: Moment) -> timedelta:
    if isinstance(start, datetime) and isinstance(end, datetime):
        return end - start
    return timedelta(days=(end - start).days)  # type: ignore[operator]


def _duration(component: Event) -> timedelta:
    return _span(component.start, component.end)


def _until_before(rid: Moment, start: Moment) -> Moment:
    if isinstance(rid, datetime):
        return until(rid - timedelta(seconds=1), start)
    return until(rid - timedelta(days=1), start)


def until(moment: Moment, start: Moment) -> Moment:
    """``moment`` as an UNTIL beside DTSTART ``start`` (RFC 5545 3.3.10): UTC when the start
    has a zone, a date when it is a date, floating when it is floating. A date beside a
    time is the end of that day (an UNTIL date includes its day)."""
    if not isinstance(start, datetime):
        return moment.date() if isinstance(moment, datetime) else moment
    if not isinstance(moment, datetime):
        moment = datetime.combine(moment, time(23, 59, 59))
    if start.tzinfo is None:
        return moment.replace(tzinfo=None)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=start.tzinfo)
    return moment.astimezone(UTC)


def _occurrences_before(master: Event, rid: Moment) -> int:
    rule = rule_text(master)
    start = master.start
    limit = rid if isinstance(rid, datetime) else datetime.combine(rid, datetime.min.time())
    first = start if isinstance(start, datetime) else datetime.combine(start, datetime.min.time())
    return sum(1 for _ in rrulestr(rule, dtstart=first).between(first, limit, inc=False)) + 1


def exdates(master: Event) -> list[Any]:
    found: Any = master["EXDATE"]
    lists = found if isinstance(found, list) else [found]
    return [item for entry in lists for item in entry.dts]


def rule_text(master: Event) -> str:
    """The master's RRULE as text (``FREQ=WEEKLY;BYDAY=MO``; several joined by " and ")."""
    found: Any = master["RRULE"]
    return " and ".join(
        rules.as_text(rule) for rule in (found if isinstance(found, list) else [found])
    )


def _the_rule(master: Event) -> Any:
    """The series' one RRULE: a series of several moves or ends only one occurrence at a
    time, or as a whole when cancelled."""
    found: Any = master["RRULE"]
    if isinstance(found, list):
        raise InvalidRequest(
            "This series repeats by more than one rule, so it cannot be split or moved as a "
            "whole: move or cancel one occurrence, or cancel the series and add it again."
        )
    return found


def _filter_exdates(master: Event, keep: Any) -> None:
    dates = [d.dt for d in exdates(master) if keep(rid_key(d.dt))]
    master.pop("EXDATE")
    for moment in dates:
        master.add("exdate", moment)


def shift_weekday(day: str, days: int) -> str:
    if not day.isalpha():
        raise InvalidRequest(
            "This series repeats on numbered weekdays (e.g. the 2nd Tuesday), so it cannot "
            "move to another day as a whole: move this occurrence instead."
        )
    return _WEEKDAYS[(_WEEKDAYS.index(day) + days) % 7]
