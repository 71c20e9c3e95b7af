"""How stored actions are shown: views, and decisions in words a user can read."""

from __future__ import annotations

from typing import Any

from mcp_pending_actions.rows import ActionRow, BatchRow
from meshkit.wire.pending_actions import UNKNOWN, ActionView, BatchView, Decision, State

NOT_FOUND = "not found"  # an unknown id, an action of another agent, chat, message or user alike
REASONS = {
    State.PENDING: "still waiting for a decision",
    State.EXECUTING: "being done right now",
    State.DONE: "already done",
    State.FAILED: "already tried, and it failed",
    State.CANCELLED: "cancelled",
    State.EXPIRED: "expired",
}


def refused(row: ActionRow) -> Decision:
    return decision(row, ok=False, reason=REASONS[row.state])


def decision(row: ActionRow, *, ok: bool, reason: str | None = None, **extra: Any) -> Decision:
    return Decision(
        ok=ok,
        action_id=row.action_id,
        batch_id=row.batch_id,
        state=row.state,
        summary=row.summary,
        reason=reason,
        server=row.server,
        kind=row.kind,
        **extra,
    )


def not_found(action_id: str) -> Decision:
    return Decision(ok=False, action_id=action_id, state=UNKNOWN, reason=NOT_FOUND)


def view(row: ActionRow) -> ActionView:
    """The action as the orchestrator draws it; the grant a tap may give only while pending."""
    found = ActionView.model_validate(row, from_attributes=True)
    return found if row.state == State.PENDING else found.model_copy(update={"grant_s": None})


def batch(found: BatchRow, rows: list[ActionRow]) -> BatchView:
    return BatchView(
        batch_id=found.batch_id,
        agent=found.agent,
        chat_id=found.chat_id,
        text=found.text,
        message_key=found.message_key,
        actions=[view(row) for row in rows],
    )
