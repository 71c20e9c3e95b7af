"""What the pending-actions tools return, and the states an action goes through."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, Field


class State(StrEnum):
    """pending → executing → done | failed; pending → cancelled; pending → expired."""

    PENDING = "pending"
    EXECUTING = "executing"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"
    EXPIRED = "expired"


UNKNOWN: Literal["unknown"] = "unknown"  # the state reported for an id no one can see


class Staged(BaseModel):
    action_id: str = Field(description="The new action's id ('act_' + 12 hex digits)")
    batch_id: str = Field(description="Its batch: one message's buttons ('bat_' + 12 hex digits)")
    state: State = Field(description="Always 'pending'")
    expires_at: float = Field(description="When it expires unless decided (Unix seconds)")
    summary: str = Field(description="The line the user reads above the buttons")


class ActionView(BaseModel):
    action_id: str
    batch_id: str
    server: str = Field(description="The server whose confirm_<kind> tool performs it")
    kind: str
    summary: str
    confirm_label: str
    cancel_label: str
    state: State
    created_at: float = Field(description="When it was staged (Unix seconds)")
    expires_at: float = Field(description="When it expires while pending (Unix seconds)")
    result: dict[str, Any] | None = Field(description="What the confirm tool returned, once done")
    error: str | None = Field(description="Why it failed, once failed")


class ActionList(BaseModel):
    actions: list[ActionView] = Field(description="Oldest first")


class BatchView(BaseModel):
    batch_id: str
    agent: str
    chat_id: str
    text: str | None = Field(description="The message text the buttons sit under, if staged")
    message_key: str | None = Field(
        default=None,
        description="The idempotency key of the message that shows the buttons (given at "
        "stage); null: no tap is taken",
    )
    actions: list[ActionView] = Field(description="In staging order")


class Decision(BaseModel):
    """The answer to a tap: approved (with a token for the confirm tool), or refused and why."""

    ok: bool = Field(description="True: approved (or cancelled); go ahead")
    action_id: str
    batch_id: str | None = Field(default=None, description="Null when the action is not found")
    state: State | Literal["unknown"] = Field(
        description="The action's state after this call; 'unknown' when it is not found"
    )
    summary: str | None = Field(default=None, description="Null when the action is not found")
    reason: str | None = Field(
        default=None, description="Why it was refused, in words the user can read; null when ok"
    )
    server: str | None = Field(default=None, description="Null when the action is not found")
    kind: str | None = Field(default=None, description="Null when the action is not found")
    payload: dict[str, Any] | None = Field(
        default=None,
        description="For <server>__confirm_<kind>(payload, approval); only with an approval",
    )
    approval: str | None = Field(
        default=None,
        description="Approval token for the confirm tool; only when an approve call is ok",
    )
    resumed: bool = Field(
        default=False,
        description="Approved again after the executing lease ran out (an earlier confirm "
        "may or may not have run; the confirm tool dedupes by action id)",
    )
    batch: BatchView | None = Field(
        default=None,
        description="The action's batch after this call, to redraw the tapped message; null "
        "when not found (and inside a batch's decisions)",
    )


class BatchDecisions(BaseModel):
    batch_id: str
    decisions: list[Decision] = Field(
        description="One per action in staging order; empty when no such batch is shown in "
        "the message sent under this key"
    )
    batch: BatchView | None = Field(
        default=None, description="The batch after the decisions; null when not found"
    )


class Event(BaseModel):
    at: float = Field(description="Unix seconds")
    from_state: State | None = Field(description="Null for the staging event")
    to_state: State
    actor: str | None = Field(
        description="The agent that staged, the user who tapped; null for the server itself"
    )
    detail: str | None


class History(BaseModel):
    action_id: str
    events: list[Event] = Field(description="Every state change, oldest first")
