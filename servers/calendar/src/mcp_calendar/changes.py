"""The calendar changes, declared once (``meshkit.consent``): add, move and cancel, each
performed once, and only with an approval pending-actions signed for exactly its payload
and agent.

Each executor has the backend perform the change once per approval (a replay returns the
first result): the local backend in its store's confirm-once transaction, the Google
backend between the two steps of its confirm-once record (``records.py``). A move or cancel
carries the event's version as proposed: when the event changed or disappeared since, the
backend touches nothing, and the error says what is different now and asks to propose
again.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime, tzinfo
from typing import Any
from zoneinfo import ZoneInfo

from pydantic import BaseModel

from mcp_calendar import times, zones
from mcp_calendar.backend import Add, Backend, Cancel, Change, Moment, Move, NewEvent, Target
from mcp_calendar.errors import Stale
from mcp_calendar.models import (
    ADD,
    CANCEL,
    MOVE,
    Added,
    AddPayload,
    Cancelled,
    CancelPayload,
    Moved,
    MovePayload,
    TargetPayload,
)
from meshkit.consent import ChangeKind
from meshkit.proposals import Approval, Confirmed

PROPOSE_AGAIN = "Nothing was changed: propose it again if it should still happen."


def change_kinds(backend: Backend, clock: Callable[[], float]) -> tuple[ChangeKind[Any], ...]:
    """event_add, event_move and event_cancel, performed by ``backend``."""
    changes = _Changes(backend, clock)
    return (
        ChangeKind(ADD, AddPayload, Added, title="Add an event", execute=changes.add),
        ChangeKind(MOVE, MovePayload, Moved, title="Move an event", execute=changes.move),
        ChangeKind(
            CANCEL,
            CancelPayload,
            Cancelled,
            title="Cancel an event",
            execute=changes.cancel,
            destructive=True,
        ),
    )


class _Changes:
    def __init__(self, backend: Backend, clock: Callable[[], float]) -> None:
        self._backend = backend
        self._clock = clock

    async def add(self, change: AddPayload, approval: Approval) -> Confirmed:
        tz = ZoneInfo(change.timezone)
        zone = ZoneInfo(change.zone) if change.zone else None
        start, end = _moment(change.start, zone), _moment(change.end, zone)
        new = NewEvent(
            uid=change.uid,
            calendar=change.calendar,
            title=change.title,
            start=start,
            end=end,
            rule=change.rule,
            location=change.location,
            description=change.description,
        )
        result = {
            "message": f"Added “{change.title}” {times.words(start, end, tz)} ({tz.key}) "
            f"to {change.calendar}",
            "event_id": change.uid,
        }
        return await self._perform(approval, Add(new), result, change)

    async def move(self, change: MovePayload, approval: Approval) -> Confirmed:
        tz = ZoneInfo(change.timezone)
        zone = zones.named(change.zone) if change.zone else None
        start, end = _moment(change.start, zone), _moment(change.end, zone)
        result = {
            "message": f"Moved “{change.title}” to {times.words(start, end, tz)} ({tz.key})",
            "event_id": change.uid,
            "scope": change.scope,
        }
        return await self._perform(approval, Move(_target(change), start, end), result, change)

    async def cancel(self, change: CancelPayload, approval: Approval) -> Confirmed:
        result = {
            "message": f"Cancelled “{change.title}” {change.was} ({change.timezone})",
            "event_id": change.uid,
            "scope": change.scope,
        }
        return await self._perform(approval, Cancel(_target(change)), result, change)

    async def _perform(
        self, approval: Approval, change: Change, result: dict[str, Any], payload: BaseModel
    ) -> Confirmed:
        try:
            return await self._backend.perform(approval, change, result, self._clock())
        except Stale as stale:
            if not isinstance(payload, TargetPayload):
                raise Stale(f"{stale} {PROPOSE_AGAIN}") from None
            raise Stale(await self._what_changed(payload)) from None

    async def _what_changed(self, payload: TargetPayload) -> str:
        tz = ZoneInfo(payload.timezone)
        target = _target(payload)
        now = await self._backend.occurrence(target.uid, target.recurrence_id)
        if now is None:
            gone = f"“{payload.title}” ({payload.was}) is no longer in the calendar."
            return f"{gone} {PROPOSE_AGAIN}"
        differences = []
        if now.title != payload.title:
            differences.append(f"it is now called “{now.title}”")
        when = times.words(now.start, now.end, tz)
        if when != payload.was:
            differences.append(f"it is now {when} (was {payload.was})")
        said = "; ".join(differences) or "the event (or another occurrence of it) was edited"
        return f"“{payload.title}” changed since it was proposed: {said}. {PROPOSE_AGAIN}"


def _target(change: TargetPayload) -> Target:
    zone = zones.named(change.zone) if change.zone else None
    rid = None if change.occurrence is None else _moment(change.occurrence, zone)
    return Target(uid=change.uid, version=change.version, recurrence_id=rid, scope=change.scope)


def _moment(text: str, zone: tzinfo | None) -> Moment:
    """A payload's time back: a date, or an aware datetime in the event's zone."""
    if len(text) == 10:
        return date.fromisoformat(text)
    value = datetime.fromisoformat(text)
    return value.astimezone(zone) if zone else value
