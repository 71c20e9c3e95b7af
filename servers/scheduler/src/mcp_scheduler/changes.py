"""The reminder changes, declared once (``meshkit.consent``): each performed once, and only
with an approval pending-actions signed for exactly its payload and agent.

Each executor runs inside the store's confirm-once transaction: a replayed approval returns
the first result and changes nothing twice. A reminder set by a tap takes the action's id
(``act_…`` → ``rem_…``), so the same tap can never set two. A cancel of a reminder that is
no longer active fails and records nothing.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from mcp_scheduler import store as q
from mcp_scheduler.errors import NotFound
from mcp_scheduler.reminders import CANCEL, SET, CancelPayload, SetPayload, words, zone
from mcp_scheduler.store import ReminderRow, SchedulerStore
from meshkit.consent import ChangeKind
from meshkit.proposals import Approval, Confirmed


class ReminderChange(BaseModel):
    message: str
    reminder_id: str
    replayed: bool


def change_kinds(
    store: SchedulerStore, clock: Callable[[], float], changed: Callable[[], None]
) -> tuple[ChangeKind[Any], ...]:
    """reminder and cancel_reminder, performed in ``store``; ``changed`` wakes the firing
    loop (a new reminder may be due before anything it waits for)."""

    async def set_reminder(change: SetPayload, approval: Approval) -> Confirmed:
        tz = zone(change.timezone)
        now = clock()
        reminder_id = "rem_" + approval.action_id.removeprefix("act_")

        def perform(db: sqlite3.Connection) -> dict[str, Any]:
            row = ReminderRow(
                reminder_id,
                change.agent,
                change.text,
                tz.key,
                change.repeat,
                change.due_at,
                change.due_at,
                "active",
                now,
            )
            q.add_reminder(db, row)
            return {
                "message": f"Reminder set for {words(change.due_at, tz)}",
                "reminder_id": reminder_id,
            }

        done = await store.confirm(approval, perform, now)
        changed()
        return done

    async def cancel_reminder(change: CancelPayload, approval: Approval) -> Confirmed:
        def perform(db: sqlite3.Connection) -> dict[str, Any]:
            row = q.reminder(db, change.reminder_id)
            if row is None or row.agent != change.agent or row.state not in ("active", "waiting"):
                raise NotFound(f"The reminder “{change.text}” is not active any more.")
            q.set_reminder(db, row.id, state="cancelled")
            return {"message": f"Cancelled the reminder “{row.text}”", "reminder_id": row.id}

        return await store.confirm(approval, perform, clock())

    return (
        ChangeKind(SET, SetPayload, ReminderChange, title="Set a reminder", execute=set_reminder),
        ChangeKind(
            CANCEL,
            CancelPayload,
            ReminderChange,
            title="Cancel a reminder",
            execute=cancel_reminder,
            destructive=True,
        ),
    )
