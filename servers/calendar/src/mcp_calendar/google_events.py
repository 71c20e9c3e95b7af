"""Google Calendar event resources ↔ occurrences, and how a scope edits a series there.

Google's model: a recurring event holds ``recurrence`` (``RRULE``/``EXRULE``/``RDATE``/
``EXDATE`` lines) and a ``timeZone`` on its start; listed with ``singleEvents`` it expands
into instances that name their series (``recurringEventId``) and their original start
(``originalStartTime``), each with an ETag. An instance changed or deleted on its own is an
exception, listed (cancelled ones too) beside its series when not asked for single events.
When a series' start or rule changes, an exception whose original start is no longer an
instance is lost: a move writes the series' exceptions again where they moved. An
occurrence's ``uid`` is the series' id (or the event's), its ``recurrence_id`` the original
start, its ``version`` the ETag.

    scope       move                                     cancel
    this        patch the instance                       delete the instance
    following   the series ends before it (RRULE UNTIL;   the series ends before it
                COUNT: what is left goes to the new one;  (its RDATEs and EXDATEs from
                RDATEs/EXDATEs from it on go too) and a   it on go)
                new series starts at the new time, with
                the exceptions from it on (below)
    series      the series' start, BYDAY, UNTIL, RDATEs   delete the series
                and EXDATEs shift by the wall-clock
                distance the occurrence moves, in the
                series' zone, exceptions included

Exceptions on a moved series, as the local backend's ``edits.py``: a cancelled occurrence
becomes an EXDATE at its shifted date; a changed one is written again on the instance at its
shifted original start with its own title, place, notes and times: the one the user moved
where they said, one moved on its own where it is, any other shifted with its series.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from itertools import takewhile
from typing import Any
from zoneinfo import ZoneInfo

from dateutil.rrule import rrulestr
from icalendar import vRecur

from mcp_calendar import edits, rules
from mcp_calendar.backend import Moment, NewEvent, Occurrence

Resource = dict[str, Any]
ID_CHARS = frozenset("abcdefghijklmnopqrstuv0123456789")  # base32hex, as Google takes ids


def occurrence(
    calendar: str, resource: Resource, calendar_zone: str, rule: str | None = None
) -> Occurrence:
    """``rule``: the series' RRULE for an instance (which does not carry it)."""
    timed = "dateTime" in resource["start"]
    zone = (resource["start"].get("timeZone") or calendar_zone) if timed else None
    tz = ZoneInfo(zone) if zone else None
    start, end = moment(resource["start"], tz), moment(resource["end"], tz)
    rid: Moment | None = None
    if "recurringEventId" in resource:
        rid = moment(resource["originalStartTime"], tz)
    elif "recurrence" in resource:
        rid = start
    return Occurrence(
        uid=resource.get("recurringEventId") or resource["id"],
        calendar=calendar,
        title=resource.get("summary", ""),
        start=start,
        end=end,
        recurrence_id=rid,
        zone=zone,
        rule=rule or rule_of(resource),
        location=resource.get("location"),
        description=resource.get("description"),
        busy=resource.get("transparency") != "transparent",
        version=resource["etag"],
    )


def moment(when: Resource, tz: ZoneInfo | None) -> Moment:
    if "dateTime" in when:
        value = datetime.fromisoformat(when["dateTime"])
        return value.astimezone(tz) if tz else value
    return date.fromisoformat(when["date"])


def when(value: Moment, zone: str | None) -> Resource:
    if isinstance(value, datetime):
        return {"dateTime": value.isoformat(), "timeZone": zone or _zone_of(value)}
    return {"date": value.isoformat()}


def query_time(value: Moment) -> str:
    """An ``originalStart``/``timeMin`` parameter: RFC 3339 with the offset, or a date."""
    return value.isoformat()


def rule_of(resource: Resource) -> str | None:
    for line in resource.get("recurrence", []):
        if line.startswith("RRULE:"):
            return str(line.removeprefix("RRULE:"))
    return None


def new_event(event: NewEvent) -> Resource:
    zone = _zone_of(event.start) if isinstance(event.start, datetime) else None
    body: Resource = {
        "iCalUID": event.uid,
        "summary": event.title,
        "start": when(event.start, zone),
        "end": when(event.end, zone),
    }
    local = event.uid.partition("@")[0]
    if set(local) <= ID_CHARS and 5 <= len(local) <= 1024:
        body["id"] = local  # ours: inserting it twice answers 409, not a second event
    if event.rule:
        body["recurrence"] = [f"RRULE:{rules.as_text(edits.parse_rule(event.rule, event.start))}"]
    if event.location:
        body["location"] = event.location
    if event.description:
        body["description"] = event.description
    return body


@dataclass(frozen=True)
class Shift:
    """The wall-clock distance an occurrence moves, in the series' zone: every other
    moment of the series moves by the same (10:00 stays 10:00 across DST)."""

    tz: ZoneInfo | None
    wall: timedelta
    days: int

    @classmethod
    def of(cls, master: Resource, rid: Moment, start: Moment) -> Shift:
        zone = master["start"].get("timeZone")
        tz = ZoneInfo(zone) if zone else None
        first = moment(master["start"], tz)
        days = (edits.day(start, tz) - edits.day(rid, tz)).days
        return cls(tz, edits.wall(start, tz) - edits.wall(_like(rid, first), tz), days)

    def __call__(self, value: Moment) -> Moment:
        if isinstance(value, datetime):
            if value.tzinfo is None:
                return value + self.wall
            local = value.astimezone(self.tz).replace(tzinfo=None) + self.wall
            return local.replace(tzinfo=self.tz).astimezone(value.tzinfo)
        return value + timedelta(days=self.days)


@dataclass(frozen=True)
class Redo:
    """A changed occurrence to write again on a moved series: at its new original start,
    these fields."""

    original: Moment
    body: Resource


def shifted_series(
    master: Resource, rid: Moment, start: Moment, end: Moment, exceptions: list[Resource]
) -> tuple[Resource, list[Redo]]:
    """The patch that moves every occurrence by the distance from ``rid`` to ``start``
    (the rule's weekdays and UNTIL, its RDATEs and EXDATEs, and the cancelled occurrences
    as EXDATEs), and the changed occurrences to write again where they moved."""
    zone = master["start"].get("timeZone")
    shift = Shift.of(master, rid, start)
    first = moment(master["start"], shift.tz)
    moved = shift(first)
    patch: Resource = {
        "start": when(moved, zone),
        "end": when(moved + (end - start), zone),  # type: ignore[operator]
    }
    rule = _rule(master)
    if rule is not None:
        if shift.days % 7 and "BYDAY" in rule:
            rule["BYDAY"] = [edits.shift_weekday(day, shift.days) for day in rule["BYDAY"]]
        if "UNTIL" in rule:
            rule["UNTIL"] = [shift(u) for u in rule["UNTIL"]]
    dates = [(name, shift(when_)) for name, when_ in listed_dates(master, shift.tz)]
    cancelled, redo = _exceptions(master, exceptions, rid=rid, start=start, end=end, shift=shift)
    dates += [("EXDATE", shift(original)) for original in cancelled]
    patch["recurrence"] = _recurrence(master, rule, dates, zone)
    return patch, redo


def ended_before(master: Resource, rid: Moment) -> tuple[Resource, int | None]:
    """The patch that ends the series before ``rid`` (its RDATEs and EXDATEs from
    ``rid`` on go too), and how many occurrences a COUNT leaves for after it (None: no
    COUNT)."""
    rule = _rule(master)
    left, kept = None, None
    if rule is not None:
        if "COUNT" in rule:
            left = int(rule["COUNT"][0]) - _before(master, rid)
        kept = vRecur({k: v for k, v in rule.items() if k not in ("COUNT", "UNTIL")})
        kept["UNTIL"] = [
            (rid - timedelta(seconds=1)).astimezone(UTC)
            if isinstance(rid, datetime)
            else rid - timedelta(days=1)
        ]
    zone = master["start"].get("timeZone")
    tz = ZoneInfo(zone) if zone else None
    cut = edits.rid_key(rid)
    dates = [(n, d) for n, d in listed_dates(master, tz) if edits.rid_key(d) < cut]
    return {"recurrence": _recurrence(master, kept, dates, zone)}, left


def following_series(
    master: Resource,
    rid: Moment,
    start: Moment,
    end: Moment,
    *,
    left: int | None,
    exceptions: list[Resource],
) -> tuple[Resource, list[Redo]]:
    """A new series from ``start`` with the rest of the old one's rule, its RDATEs and
    EXDATEs and cancelled occurrences from ``rid`` on (shifted as the occurrence moves), and
    the changed occurrences from ``rid`` on to write again on it."""
    zone = master["start"].get("timeZone")
    shift = Shift.of(master, rid, start)
    rule = _rule(master)
    if rule is not None:
        if left is not None:
            rule["COUNT"] = [left]
        if shift.days % 7 and "BYDAY" in rule:
            rule["BYDAY"] = [edits.shift_weekday(day, shift.days) for day in rule["BYDAY"]]
        if "UNTIL" in rule:
            rule["UNTIL"] = [shift(u) for u in rule["UNTIL"]]
    cut = edits.rid_key(rid)
    later = [e for e in exceptions if edits.rid_key(_original(e, shift.tz)) >= cut]
    cancelled, redo = _exceptions(master, later, rid=rid, start=start, end=end, shift=shift)
    dates = [
        (name, shift(when_))
        for name, when_ in listed_dates(master, shift.tz)
        if edits.rid_key(when_) > cut or (name == "EXDATE" and edits.rid_key(when_) == cut)
    ]
    dates += [("EXDATE", shift(original)) for original in cancelled]
    body: Resource = {
        key: master[key]
        for key in ("summary", "location", "description", "transparency", "colorId")
        if key in master
    }
    body.update(
        start=when(start, zone),
        end=when(end, zone),
        recurrence=_recurrence({}, rule, dates, zone),
    )
    stamp = edits.rid_key(rid).lower().replace("z", "")
    new_id = f"{master['id']}r{stamp}"
    if set(new_id) <= ID_CHARS:
        body["id"] = new_id  # a retried insert answers 409 rather than adding it twice
    return body, redo


KEPT = ("summary", "location", "description", "transparency", "colorId")  # an exception's own


def _exceptions(
    master: Resource,
    exceptions: list[Resource],
    *,
    rid: Moment,
    start: Moment,
    end: Moment,
    shift: Shift,
) -> tuple[list[Moment], list[Redo]]:
    """The series' cancelled occurrences (their original starts), and its changed ones as
    they are written again after the move: the one the user moved where they said, one
    moved on its own where it is, any other with its series."""
    zone = master["start"].get("timeZone")
    cancelled, redo = [], []
    for exception in exceptions:
        original = _original(exception, shift.tz)
        if exception.get("status") == "cancelled":
            cancelled.append(original)
            continue
        own_start = moment(exception["start"], shift.tz)
        own_end = moment(exception["end"], shift.tz)
        if edits.rid_key(original) == edits.rid_key(rid):
            new_start, new_end = start, end
        elif edits.rid_key(own_start) == edits.rid_key(original):
            new_start, new_end = shift(own_start), shift(own_end)
        else:
            new_start, new_end = own_start, own_end
        body = {key: exception[key] for key in KEPT if key in exception}
        body.update(start=when(new_start, zone), end=when(new_end, zone))
        redo.append(Redo(shift(original), body))
    return cancelled, redo


def reset(master: Resource, patch: Resource, exception: Resource) -> Resource:
    """The patch that makes an exception its moved series' plain instance again (restored
    if cancelled: Google keeps a cancelled event's details so that it can be undeleted)."""
    zone = master["start"].get("timeZone")
    tz = ZoneInfo(zone) if zone else None
    original = _original(exception, tz)
    span = moment(patch["end"], tz) - moment(patch["start"], tz)
    body: Resource = {key: master.get(key) for key in KEPT}
    body.update(status="confirmed", start=when(original, zone), end=when(original + span, zone))
    return body


def _original(exception: Resource, tz: ZoneInfo | None) -> Moment:
    return moment(exception["originalStartTime"], tz)


def listed_dates(master: Resource, tz: ZoneInfo | None) -> list[tuple[str, Moment]]:
    """The series' RDATE and EXDATE values (``TZID``, UTC or ``VALUE=DATE``), as moments
    in the series' zone (dates for an all-day series)."""
    found: list[tuple[str, Moment]] = []
    for line in master.get("recurrence", []):
        head, _, value = line.partition(":")
        name, *parameters = head.split(";")
        if name.upper() not in ("RDATE", "EXDATE"):
            continue
        named = [p.partition("=")[2] for p in parameters if p.upper().startswith("TZID=")]
        here = ZoneInfo(named[0]) if named else tz
        for text in filter(None, (t.strip() for t in value.split(","))):
            found.append((name.upper(), _listed(text, here, tz)))
    return found


def _listed(text: str, here: ZoneInfo | None, tz: ZoneInfo | None) -> Moment:
    if len(text) == 8:
        return date(int(text[:4]), int(text[4:6]), int(text[6:]))
    value = datetime.strptime(text.rstrip("Zz"), "%Y%m%dT%H%M%S")
    if text[-1] in "Zz":
        value = value.replace(tzinfo=UTC)
    elif here is not None:
        value = value.replace(tzinfo=here)
    return value.astimezone(tz) if tz is not None and value.tzinfo else value


def _recurrence(
    master: Resource, rule: vRecur | None, dates: list[tuple[str, Moment]], zone: str | None
) -> list[str]:
    """Recurrence lines: the rule, the master's other lines (EXRULE) as they are, and the
    dates, one RDATE and one EXDATE line in the series' own form."""
    lines = [] if rule is None else [f"RRULE:{rules.as_text(rule)}"]
    lines += [
        line
        for line in master.get("recurrence", [])
        if line.partition(":")[0].split(";")[0].upper() not in ("RRULE", "RDATE", "EXDATE")
    ]
    for name in ("RDATE", "EXDATE"):
        values = sorted({_date_text(d, zone) for n, d in dates if n == name})
        if not values:
            continue
        if any(isinstance(d, datetime) for n, d in dates if n == name):
            head = f"{name};TZID={zone}" if zone else name
        else:
            head = f"{name};VALUE=DATE"
        lines.append(f"{head}:{','.join(values)}")
    return lines


def _date_text(value: Moment, zone: str | None) -> str:
    if isinstance(value, datetime):
        local = value.astimezone(ZoneInfo(zone)) if zone and value.tzinfo else value
        return local.strftime("%Y%m%dT%H%M%S")
    return value.strftime("%Y%m%d")


def _rule(master: Resource) -> vRecur | None:
    text = rule_of(master)
    return None if text is None else edits.parse_rule(text)


def _before(master: Resource, rid: Moment) -> int:
    """How many occurrences of a series with a COUNT come before ``rid``."""
    zone = master["start"].get("timeZone")
    first = moment(master["start"], ZoneInfo(zone) if zone else None)
    text = rules.as_text(edits.parse_rule(rule_of(master) or "", first))  # refused: InvalidRequest
    if isinstance(first, datetime):
        limit = rid if isinstance(rid, datetime) else datetime.combine(rid, first.timetz())
        return sum(1 for _ in takewhile(lambda d: d < limit, rrulestr(text, dtstart=first)))
    naive = datetime.combine(first, datetime.min.time())
    day = rid.date() if isinstance(rid, datetime) else rid
    return sum(1 for _ in takewhile(lambda d: d.date() < day, rrulestr(text, dtstart=naive)))


def _zone_of(value: datetime) -> str:
    return str(getattr(value.tzinfo, "key", "UTC"))


def _like(value: Moment, reference: Moment) -> Moment:
    if isinstance(reference, datetime) and not isinstance(value, datetime):
        return datetime.combine(value, reference.timetz())
    return value
