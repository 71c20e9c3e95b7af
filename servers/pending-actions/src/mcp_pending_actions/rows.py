"""The store's rows, and a state change as the store makes it (plain data, no queries)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from meshkit.wire.pending_actions import CHAT_CLIENT, How, State


@dataclass(frozen=True)
class BatchRow:
    batch_id: str
    agent: str
    chat_id: str
    text: str | None
    created_at: float
    message_key: str | None = None  # the key its buttons' message is sent under; None: none


@dataclass(frozen=True)
class ActionRow:
    action_id: str
    batch_id: str
    agent: str
    chat_id: str
    user_id: str | None
    server: str
    kind: str
    summary: str
    payload: dict[str, Any]
    confirm_label: str
    cancel_label: str
    state: State
    created_at: float
    expires_at: float
    updated_at: float
    result: dict[str, Any] | None = None
    error: str | None = None
    client: str = CHAT_CLIENT  # who proposed it: the agent's chat, or a client's name
    decided_by: How | None = None
    decided_at: float | None = None
    grant_s: int | None = None  # while pending: the grant a tap may give


@dataclass(frozen=True)
class GrantRow:
    grant_id: str
    agent: str
    user_id: str
    client: str
    server: str
    kind: str
    started_at: float
    until: float
    summary: str
    action_id: str  # the tap that gave it
    ended_at: float | None = None  # ended early, or noticed to have run out


@dataclass(frozen=True)
class NoticeRow:
    key: str  # consent:<batch id> (show) or done:<action id> (execute)
    type: str
    agent: str
    chat_id: str
    user_id: str
    client: str
    batch_id: str
    action_id: str
    created_at: float
    handed_at: float | None = None  # first handed to the orchestrator; None: its batch is open


@dataclass(frozen=True)
class EventRow:
    id: int
    action_id: str
    from_state: State | None
    to_state: State
    at: float
    actor: str | None
    detail: str | None


@dataclass(frozen=True)
class Change:
    """One state change, made only while every condition given still holds."""

    from_state: State
    to_state: State
    at: float
    actor: str | None = None
    detail: str | None = None
    live_at: float | None = None  # only if expires_at > live_at (not expired yet)
    due_at: float | None = None  # only if expires_at <= due_at (expired by then)
    idle_since: float | None = None  # only if updated_at <= idle_since (lease ran out)
    result: dict[str, Any] | None = None
    error: str | None = None
    decided_by: How | None = None  # set with the change (a tap, or expiry)


@dataclass(frozen=True)
class Outcome:
    changed: bool
    row: ActionRow  # as it is after the attempt, read in the same transaction
