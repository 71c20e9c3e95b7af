"""Google Calendar event resources ↔ occurrences, and how a scope edits a series there.

Google's model: a recurring event holds ``recurrence`` (``RRULE:``/``EXDATE:`` lines) and a
``timeZone`` on its start; listed with ``singleEvents`` it expands into instances that name
their series (``recurringEventId``) and their original start (``originalStartTime``), each
with an ETag. An occurrence's ``uid`` is the series' id (or the event's), its
``recurrence_id`` the original start, its ``version`` the ETag.

    scope       move                                     cancel
    this        patch the instance                       delete the instance
    following   the series ends before it (RRULE UNTIL;   the series ends before it
                COUNT: what is left goes to the new one)
                and a new series starts at the new time
    series      the series' start (and BYDAY) shift by    delete the series
                the wall-clock distance the occurrence
                moves, in the series' zone
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from dateutil.rrule import rrulestr
from icalendar import vRecur

from mcp_calendar import edits
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
        body["recurrence"] = [f"RRULE:{_text(edits.parse_rule(event.rule, event.start))}"]
    if event.location:
        body["location"] = event.location
    if event.description:
        body["description"] = event.description
    return body


def shifted_series(master: Resource, rid: Moment, start: Moment, end: Moment) -> Resource:
    """The patch that moves every occurrence by the distance from ``rid`` to ``start``."""
    zone = master["start"].get("timeZone")
    tz = ZoneInfo(zone) if zone else None
    first = moment(master["start"], tz)
    days = (_day(start, tz) - _day(rid, tz)).days
    wall = _wall(start, tz) - _wall(_like(rid, first), tz)
    if isinstance(first, datetime):
        moved: Moment = (first.astimezone(tz).replace(tzinfo=None) + wall).replace(tzinfo=tz)
    else:
        moved = first + timedelta(days=days)
    patch: Resource = {
        "start": when(moved, zone),
        "end": when(moved + (end - start), zone),  # type: ignore[operator]
    }
    rule = _rule(master)
    if days % 7 and rule is not None and "BYDAY" in rule:
        rule["BYDAY"] = [edits.shift_weekday(day, days) for day in rule["BYDAY"]]
        patch["recurrence"] = _with_rule(master, rule)
    return patch


def ended_before(master: Resource, rid: Moment) -> tuple[Resource, int | None]:
    """The patch that ends the series before ``rid``, and how many occurrences a COUNT
    leaves for after it (None: no COUNT)."""
    rule = _rule(master)
    assert rule is not None
    left = None
    if "COUNT" in rule:
        left = int(rule["COUNT"][0]) - _before(master, rid)
    kept = vRecur({k: v for k, v in rule.items() if k not in ("COUNT", "UNTIL")})
    kept["UNTIL"] = [
        (rid - timedelta(seconds=1)).astimezone(UTC)
        if isinstance(rid, datetime)
        else rid - timedelta(days=1)
    ]
    return {"recurrence": _with_rule(master, kept)}, left


def following_series(
    master: Resource, rid: Moment, start: Moment, end: Moment, left: int | None
) -> Resource:
    """A new series from ``start`` with the rest of the old one's rule."""
    zone = master["start"].get("timeZone")
    tz = ZoneInfo(zone) if zone else None
    rule = _rule(master)
    assert rule is not None
    if left is not None:
        rule["COUNT"] = [left]
    days = (_day(start, tz) - _day(rid, tz)).days
    if days % 7 and "BYDAY" in rule:
        rule["BYDAY"] = [edits.shift_weekday(day, days) for day in rule["BYDAY"]]
    body: Resource = {
        key: master[key]
        for key in ("summary", "location", "description", "transparency", "colorId")
        if key in master
    }
    body.update(
        start=when(start, zone),
        end=when(end, zone),
        recurrence=[f"RRULE:{_text(rule)}"],
    )
    stamp = edits.rid_key(rid).lower().replace("z", "")
    new_id = f"{master['id']}r{stamp}"
    if set(new_id) <= ID_CHARS:
        body["id"] = new_id  # a retried insert answers 409 rather than adding it twice
    return body


def _rule(master: Resource) -> vRecur | None:
    text = rule_of(master)
    return None if text is None else edits.parse_rule(text)


def _with_rule(master: Resource, rule: vRecur) -> list[str]:
    others = [line for line in master.get("recurrence", []) if not line.startswith("RRULE:")]
    return [f"RRULE:{_text(rule)}", *others]


def _before(master: Resource, rid: Moment) -> int:
    """How many occurrences of a series with a COUNT come before ``rid``."""
    zone = master["start"].get("timeZone")
    first = moment(master["start"], ZoneInfo(zone) if zone else None)
    text = rule_of(master) or ""
    if isinstance(first, datetime):
        limit = rid if isinstance(rid, datetime) else datetime.combine(rid, first.timetz())
        return sum(1 for d in rrulestr(text, dtstart=first) if d < limit)
    naive = datetime.combine(first, datetime.min.time())
    day = rid.date() if isinstance(rid, datetime) else rid
    return sum(1 for d in rrulestr(text, dtstart=naive) if d.date() < day)


def _text(rule: Any) -> str:
    raw = rule.to_ical()
    return raw.decode() if isinstance(raw, bytes) else str(raw)


def _zone_of(value: datetime) -> str:
    return str(getattr(value.tzinfo, "key", "UTC"))


def _like(value: Moment, reference: Moment) -> Moment:
    if isinstance(reference, datetime) and not isinstance(value, datetime):
        return datetime.combine(value, reference.timetz())
    return value


def _wall(value: Moment, tz: ZoneInfo | None) -> datetime:
    if isinstance(value, datetime):
        return (value.astimezone(tz) if tz else value).replace(tzinfo=None)
    return datetime.combine(value, datetime.min.time())


def _day(value: Moment, tz: ZoneInfo | None) -> date:
    return _wall(value, tz).date()
