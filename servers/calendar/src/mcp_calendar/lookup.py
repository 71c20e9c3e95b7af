"""Which event the user means: "the dentist", an event id, and optionally which occurrence.

Titles are compared word by word (case and accents ignored): the same title wins, then a
title holding every word of the query (each word, or the start of one), then one close
enough to be a typo. Several events alike raise Ambiguous with the candidates; none
raises NotFound with the closest titles. Of a recurring event the occurrence named by
``occurrence`` (its date or start) is meant, else the next one to come.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from datetime import date, datetime, tzinfo
from difflib import SequenceMatcher

from mcp_calendar import times
from mcp_calendar.backend import Moment, Occurrence
from mcp_calendar.errors import Ambiguous, NotFound

TYPO_RATIO = 0.8  # a title this close counts as meant
CLOSEST_RATIO = 0.35  # offered as "closest" when nothing matched
MAX_LISTED = 5
_WORD = re.compile(r"[^\W_]+")
_STOP = frozenset({"the", "a", "an", "my", "our", "with", "appointment", "meeting"})


def words(text: str) -> list[str]:
    plain = unicodedata.normalize("NFKD", text.casefold())
    plain = "".join(char for char in plain if not unicodedata.combining(char))
    found = _WORD.findall(plain)
    return [word for word in found if word not in _STOP] or found


def score(query: str, title: str) -> float:
    """1 for the same words, 0.9 when the title holds every query word, else similarity."""
    wanted, have = words(query), words(title)
    if not wanted or not have:
        return 0.0
    if wanted == have:
        return 1.0
    if all(any(word.startswith(w) for word in have) for w in wanted):
        return 0.9
    return SequenceMatcher(None, " ".join(wanted), " ".join(have)).ratio()


def resolve(
    query: str,
    occurrence: Moment | None,
    found: Sequence[Occurrence],
    tz: tzinfo,
    now: datetime,
) -> Occurrence:
    """The occurrence meant, among ``found`` (occurrences of a window around now)."""
    by_id = [o for o in found if o.uid == query.strip()]
    if by_id:
        return _pick(by_id, occurrence, tz, now, query)
    by_title: dict[str, float] = {}  # a series repeats its title: score each title once
    scored: dict[str, float] = {}
    for o in found:
        if o.title not in by_title:
            by_title[o.title] = score(query, o.title)
        scored[o.uid] = max(scored.get(o.uid, 0.0), by_title[o.title])
    best = max(scored.values(), default=0.0)
    meant = [uid for uid, value in scored.items() if value >= TYPO_RATIO and value == best]
    if occurrence is not None and len(meant) > 1:
        on_day = [uid for uid in meant if _at([o for o in found if o.uid == uid], occurrence, tz)]
        meant = on_day or meant
    if not meant:
        closest = sorted(
            (uid for uid, value in scored.items() if value >= CLOSEST_RATIO),
            key=lambda uid: -scored[uid],
        )
        if not closest:
            raise NotFound(
                f"No event in the calendar matches {query!r} (from a month ago to a year "
                "ahead). Look with search_events or get_events."
            )
        listed = "; ".join(
            _named(_next([o for o in found if o.uid == uid], now, tz), tz)
            for uid in closest[:MAX_LISTED]
        )
        raise NotFound(f"No event matches {query!r}. Closest: {listed}.")
    if len(meant) > 1:
        listed = "; ".join(
            _named(_next([o for o in found if o.uid == uid], now, tz), tz)
            for uid in meant[:MAX_LISTED]
        )
        raise Ambiguous(
            f"Several events match {query!r}: {listed}. Ask the user which one they mean, then "
            "call again with its id (and occurrence for a recurring event)."
        )
    return _pick([o for o in found if o.uid == meant[0]], occurrence, tz, now, query)


def _pick(
    mine: list[Occurrence], occurrence: Moment | None, tz: tzinfo, now: datetime, query: str
) -> Occurrence:
    if occurrence is None:
        return _next(mine, now, tz)
    on = _at(mine, occurrence, tz)
    if on:
        return on[0]
    upcoming = _next(mine, now, tz)
    raise NotFound(
        f"{upcoming.title!r} has no occurrence at {times.iso(occurrence, tz)}; "
        f"the next is {_named(upcoming, tz)}."
    )


def _at(mine: list[Occurrence], occurrence: Moment, tz: tzinfo) -> list[Occurrence]:
    """The occurrences starting (now, or originally) at that time or on that day."""

    def matches(moment: Moment | None) -> bool:
        if moment is None:
            return False
        if isinstance(occurrence, datetime):
            return isinstance(moment, datetime) and moment == occurrence
        return _day(moment, tz) == occurrence

    return [o for o in mine if matches(o.start) or matches(o.recurrence_id)]


def _next(mine: list[Occurrence], now: datetime, tz: tzinfo) -> Occurrence:
    """The first occurrence not over yet, else the last one."""
    ordered = sorted(mine, key=lambda o: times.instant(o.start, tz))
    for o in ordered:
        if times.instant(o.end, tz) > now:
            return o
    return ordered[-1]


def _named(o: Occurrence, tz: tzinfo) -> str:
    return f"{o.title!r} {times.words(o.start, o.end, tz)} (id {o.uid})"


def _day(moment: Moment, tz: tzinfo) -> date:
    return moment.astimezone(tz).date() if isinstance(moment, datetime) else moment
