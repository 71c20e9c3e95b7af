"""Confirmations: an approved proposal performed once, and only with its approval.

Each ``confirm_*`` checks the approval token against the payload exactly as it was
proposed, reads the payload into its model, then has the backend perform the change
once (a replayed approval returns the first result). A move or cancel carries the
event's version as proposed: when the event changed or disappeared since, the backend
touches nothing, and the error says what is different now and asks to propose again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import date, datetime
from typing import Any, TypeVar
from zoneinfo import ZoneInfo

from pydantic import BaseModel

from mcp_calendar import times
from mcp_calendar.backend import Add, Backend, Cancel, Change, Moment, Move, NewEvent, Target
from mcp_calendar.errors import Stale
from mcp_calendar.models import (
    ADD,
    CANCEL,
    MOVE,
    SERVER,
    Added,
    AddPayload,
    Cancelled,
    CancelPayload,
    Moved,
    MovePayload,
    TargetPayload,
)
from meshkit.proposals import Approvals, Confirmed, approved_payload, payload_agent

PayloadT = TypeVar("PayloadT", bound=BaseModel)
PROPOSE_AGAIN = "Nothing was changed: propose it again if it should still happen."


class Confirmations:
    def __init__(
        self, backend: Backend, approvals: Approvals, *, clock: Callable[[], float] = time.time
    ) -> None:
        self._backend = backend
        self._approvals = approvals
        self._clock = clock

    async def add(self, payload: dict[str, Any], approval: str) -> Added:
        granted = self._approvals.check(
            approval, SERVER, ADD, payload, agent=payload_agent(payload)
        )
        change = approved_payload(AddPayload, ADD, payload)
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
        done = await self._perform(granted, Add(new), result, change)
        return Added.model_validate({**done.result, "replayed": done.replayed})

    async def move(self, payload: dict[str, Any], approval: str) -> Moved:
        granted = self._approvals.check(
            approval, SERVER, MOVE, payload, agent=payload_agent(payload)
        )
        change = approved_payload(MovePayload, MOVE, payload)
        tz = ZoneInfo(change.timezone)
        target = _target(change)
        zone = ZoneInfo(change.zone) if change.zone else None
        start, end = _moment(change.start, zone), _moment(change.end, zone)
        result = {
            "message": f"Moved “{change.title}” to {times.words(start, end, tz)} ({tz.key})",
            "event_id": change.uid,
            "scope": change.scope,
        }
        done = await self._perform(granted, Move(target, start, end), result, change)
        return Moved.model_validate({**done.result, "replayed": done.replayed})

    async def cancel(self, payload: dict[str, Any], approval: str) -> Cancelled:
        granted = self._approvals.check(
            approval, SERVER, CANCEL, payload, agent=payload_agent(payload)
        )
        change = approved_payload(CancelPayload, CANCEL, payload)
        result = {
            "message": f"Cancelled “{change.title}” {change.was} ({change.timezone})",
            "event_id": change.uid,
            "scope": change.scope,
        }
        done = await self._perform(granted, Cancel(_target(change)), result, change)
        return Cancelled.model_validate({**done.result, "replayed": done.replayed})

    async def _perform(
        self, granted: Any, change: Change, result: dict[str, Any], payload: BaseModel
    ) -> Confirmed:
        try:
            return await self._backend.perform(granted, change, result, self._clock())
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
    zone = ZoneInfo(change.zone) if change.zone else None
    rid = None if change.occurrence is None else _moment(change.occurrence, zone)
    return Target(uid=change.uid, version=change.version, recurrence_id=rid, scope=change.scope)


def _moment(text: str, zone: ZoneInfo | None) -> Moment:
    """A payload's time back: a date, or an aware datetime in the event's zone."""
    if len(text) == 10:
        return date.fromisoformat(text)
    value = datetime.fromisoformat(text)
    return value.astimezone(zone) if zone else value
