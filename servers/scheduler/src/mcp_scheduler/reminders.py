"""Reminders the user asked for: proposed by the model, set by a Confirm tap, followed up by
a tap on the reminder's own buttons (Done, Snooze).

``when`` is a time the model resolved from the user's words ("tomorrow 9am", "in 2 hours")
to ISO 8601: without an offset it is wall-clock time in the agent's zone. ``repeat``
(daily, weekdays, weekly, monthly) repeats it at that wall time, by dateutil's rrule.

A follow-up acts once per firing (a conditional UPDATE on the firing's outcome): a double
tap on Snooze snoozes once. It acts only from the message the firing was sent in: the tap
carries the key its message was sent under, which must be the firing's (``sent_under``,
known before the send, nothing recorded after it); the same button's data tapped on any
other message is "no such reminder", exactly like an unknown id.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, Field

from mcp_scheduler import store as q
from mcp_scheduler.errors import InvalidRequest, NotFound
from mcp_scheduler.recurrence import Monthly, Rule, Weekly
from mcp_scheduler.store import ReminderRow, SchedulerStore
from meshkit.text import one_line
from meshkit.wire.proposals import Proposal
from meshkit.wire.scheduler import SNOOZE_MINUTES, FollowedUp, FollowUp, ReminderView, sent_under

SERVER = "scheduler"
SET, CANCEL = "reminder", "cancel_reminder"
Repeat = Literal["daily", "weekdays", "weekly", "monthly"]
REPEAT_WORDS = {
    "daily": "every day",
    "weekdays": "every weekday",
    "weekly": "every week",
    "monthly": "every month",
}
MAX_TEXT = 300
MAX_AHEAD_YEARS = 100
MAX_AHEAD_S = MAX_AHEAD_YEARS * 366 * 24 * 3600


class SetPayload(BaseModel):
    agent: str = Field(min_length=1)
    text: str = Field(min_length=1, max_length=MAX_TEXT)
    due_at: float
    timezone: str
    repeat: Repeat | None = None


class CancelPayload(BaseModel):
    agent: str = Field(min_length=1)
    reminder_id: str
    text: str


def repeat_rule(repeat: str | None, anchor: float, tz: ZoneInfo) -> Rule | None:
    """The wall-clock rule a reminder repeats by, from its first time (None: once)."""
    if repeat is None:
        return None
    first = datetime.fromtimestamp(anchor, tz)
    at = first.time().replace(second=0, microsecond=0)
    if repeat == "daily":
        return Weekly(at)
    if repeat == "weekdays":
        return Weekly(at, (0, 1, 2, 3, 4))
    if repeat == "weekly":
        return Weekly(at, (first.weekday(),))
    return Monthly(at, first.day)


def words(at: float, tz: ZoneInfo) -> str:
    return f"{datetime.fromtimestamp(at, tz):%a %-d %b, %H:%M}"


class ReminderDesk:
    def __init__(
        self,
        store: SchedulerStore,
        *,
        clock: Callable[[], float],
        changed: Callable[[], None],
    ) -> None:
        self._store = store
        self._clock = clock
        self._changed = changed

    def propose(
        self, agent: str, text: str, when: str, repeat: Repeat | None, timezone: str
    ) -> Proposal:
        tz = zone(timezone)
        due = _parse(when, tz)
        if due <= self._clock():
            raise InvalidRequest(
                f"{words(due, tz)} is in the past (it is {words(self._clock(), tz)} now): "
                "give a time to come."
            )
        if due > self._clock() + MAX_AHEAD_S:  # and a repeat never runs past year 9999
            raise InvalidRequest(
                f"{words(due, tz)} is more than {MAX_AHEAD_YEARS} years ahead: give a nearer time."
            )
        text = text.strip()
        if not one_line(text):  # blank, or nothing but invisible characters
            raise InvalidRequest(
                "There is nothing to remind of: give the reminder's words, e.g. 'Call the dentist'."
            )
        every = f" ({REPEAT_WORDS[repeat]})" if repeat else ""
        payload = SetPayload(agent=agent, text=text, due_at=due, timezone=tz.key, repeat=repeat)
        return Proposal(
            kind=SET,
            summary=f"⏰ Remind you “{text[:200]}” on {words(due, tz)}{every}",
            payload=payload.model_dump(),
            confirm_label="⏰ Set reminder",
        )

    async def propose_cancel(self, agent: str, reminder_id: str) -> Proposal:
        row = await self._store.read(lambda db: q.reminder(db, reminder_id.strip()))
        if row is None or row.agent != agent or row.state not in ("active", "waiting"):
            raise NotFound(f"No active reminder {reminder_id!r}: list_reminders shows the ids.")
        payload = CancelPayload(agent=agent, reminder_id=row.id, text=row.text)
        return Proposal(
            kind=CANCEL,
            summary=f"🗑 Cancel the reminder “{row.text[:200]}”",
            payload=payload.model_dump(),
            confirm_label="🗑 Cancel reminder",
            cancel_label="Keep it",
        )

    async def listed(self, agent: str) -> list[ReminderRow]:
        return await self._store.read(lambda db: q.reminders(db, agent, ("active", "waiting")))

    async def follow_up(
        self,
        agent: str,
        firing_id: str,
        message_key: str,
        outcome: FollowUp,
        tap_id: str | None = None,
    ) -> FollowedUp:
        """Done or snooze, once per firing of a reminder of ``agent``, tapped in the message
        sent under the firing's key (``sent_under``). ``tap_id`` names the tap: handed over
        again after a crash, it still is the one that changed it (``changed``: its message
        is redrawn)."""
        now = self._clock()

        def work(db: sqlite3.Connection) -> FollowedUp:
            firing = q.firing(db, firing_id)
            if (
                firing is None
                or firing.agent != agent
                or firing.kind != "reminder"
                or message_key != sent_under(firing.key)
            ):
                raise NotFound("No such reminder in this message.")
            text, tz = str(firing.payload.get("text", "")), ZoneInfo(firing.timezone)
            if not q.follow_up(db, firing_id, outcome, tap_id):
                again = tap_id is not None and q.followed_by(db, firing_id) == tap_id
                return FollowedUp(
                    firing_id=firing_id,
                    outcome=firing.outcome or outcome,
                    changed=again,
                    message=_followed(text, firing.outcome, None, tz),
                )
            row = q.reminder(db, firing.source)
            until = None
            if outcome in SNOOZE_MINUTES:
                until = now + SNOOZE_MINUTES[outcome] * 60
                if row is not None and row.repeat is None and row.state != "cancelled":
                    q.set_reminder(db, row.id, state="active", due_at=until)
                else:  # a repeating one keeps its series: the snooze is a one-off copy
                    copy = "rem_" + firing_id.removeprefix("fir_")
                    q.add_reminder(
                        db,
                        ReminderRow(copy, agent, text, tz.key, None, until, until, "active", now),
                    )
            elif row is not None and row.repeat is None and row.state == "waiting":
                q.set_reminder(db, row.id, state="done")
            return FollowedUp(
                firing_id=firing_id,
                outcome=outcome,
                changed=True,
                message=_followed(text, outcome, until, tz),
            )

        result = await self._store.transact(work)
        self._changed()
        return result


def _followed(text: str, outcome: str | None, until: float | None, tz: ZoneInfo) -> str:
    if outcome == "done":
        return f"✅ Done: {text}"
    again = f" until {datetime.fromtimestamp(until, tz):%H:%M}" if until is not None else ""
    return f"💤 Snoozed{again}: {text}"


def views(rows: list[ReminderRow]) -> list[ReminderView]:
    from_rows = []
    for row in rows:
        tz = ZoneInfo(row.timezone)
        from_rows.append(
            ReminderView(
                id=row.id,
                text=row.text,
                due_at=datetime.fromtimestamp(row.due_at, tz).isoformat(timespec="minutes"),
                repeat=row.repeat,
                state="waiting" if row.state == "waiting" else "active",
            )
        )
    return from_rows


def zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name.strip())
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidRequest(f"{name!r} is not an IANA time zone (e.g. Europe/Berlin).") from None


def _parse(when: str, tz: ZoneInfo) -> float:
    try:
        value = datetime.fromisoformat(when.strip())
    except ValueError:
        raise InvalidRequest(
            f"{when!r} is not a time I can read: resolve the user's words to "
            "YYYY-MM-DDTHH:MM in their zone (or with an offset, +01:00)."
        ) from None
    if not 1970 <= value.year <= 9000:  # year 1 or 9999 moved to UTC would not exist
        raise InvalidRequest(f"{when!r} is out of range: give a time to come.")
    if value.tzinfo is None:
        aware = value.replace(tzinfo=tz)
        if aware.astimezone(ZoneInfo("UTC")).astimezone(tz).replace(tzinfo=None) != value:
            aware = (value + timedelta(hours=1)).replace(tzinfo=tz)  # skipped by DST: an hour on
        value = aware
    return value.timestamp()
