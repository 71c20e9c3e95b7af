"""What the pending-actions tools return, and the states an action goes through."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, Field


class State(StrEnum):
    """pending → executing → done | failed; pending → cancelled; pending → expired;
    pending → failed (a client's proposal its user's chat refused: never shown)."""

    PENDING = "pending"
    EXECUTING = "executing"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"
    EXPIRED = "expired"


UNKNOWN: Literal["unknown"] = "unknown"  # the state reported for an id no one can see


How = Literal["tap", "policy", "grant", "expiry"]  # how an action was decided
CHAT_CLIENT = "chat"  # the client of proposals made in the agent's own conversation


class Staged(BaseModel):
    """A staged proposal: pending (the agent's policy asks), or already approved by the
    agent's policy or a running grant (executing, with the approval for the confirm tool).
    A kind the policy denies is never staged: ``stage`` answers with a tool error saying so."""

    action_id: str = Field(description="The new action's id ('act_' + 12 hex digits)")
    batch_id: str = Field(description="Its batch: one message's buttons ('bat_' + 12 hex digits)")
    state: State = Field(
        description="'pending': waits for a tap; 'executing': approved by policy or grant"
    )
    expires_at: float = Field(description="When it expires unless decided (Unix seconds)")
    summary: str = Field(description="The line the user reads above the buttons")
    decided_by: How | None = Field(
        default=None, description="'policy' or 'grant' when approved at once; null: pending"
    )
    approval: str | None = Field(
        default=None,
        description="When approved at once and staged by the orchestrator: the token for "
        "<server>__confirm_<kind>(payload, approval); then complete or fail",
    )
    payload: dict[str, Any] | None = Field(
        default=None, description="With an approval: the payload the token is for"
    )
    grant_s: int | None = Field(
        default=None,
        description="While pending: how long a tap may allow this kind for (seconds; the "
        "buttons offer '✅ and allow for …'); null: no grant offered",
    )
    granted_until: float | None = Field(
        default=None, description="Approved by a running grant: when it ends (Unix seconds)"
    )


class ClientStaged(BaseModel):
    """What a server learns when it stages a bound client's proposal (``stage_for_client``):
    the client is answered at once with it; the user decides on Telegram."""

    # Bounded (meshkit.bounds): it rides in a Proposal, which pending-actions' stage takes.
    action_id: str = Field(max_length=100, description="'act_' + 12 hex digits")
    state: State = Field(description="'pending' (shown to the user) or 'executing' (allowed)")
    decided_by: How | None = Field(default=None, description="'policy' or 'grant'; null: pending")
    expires_at: float = Field(le=2**53, description="When it expires unless decided (Unix s)")
    summary: str = Field(max_length=500)


class ActionStatus(BaseModel):
    """An action as its client may follow it (``action_status``)."""

    action_id: str
    state: State
    summary: str
    server: str
    kind: str
    client: str = Field(description="Who proposed it: 'chat' or the client's name")
    decided_by: How | None = Field(default=None, description="Null while pending")
    created_at: float
    expires_at: float
    decided_at: float | None = None
    result: dict[str, Any] | None = Field(default=None, description="Once done")
    error: str | None = Field(
        default=None,
        description="Once failed: why (the change failed, or Telegram refused to show it "
        "to the user, who then never saw it)",
    )
    shown_at: float | None = Field(
        default=None,
        description="When its message, with the buttons, reached the user's Telegram chat "
        "(Unix s); null: not there yet (queued, or being retried), or allowed without a tap",
    )
    not_shown: str | None = Field(
        default=None,
        description="While it waits to be shown: why the last try to bring it to the "
        "user's chat failed; it is tried again",
    )


class ActionView(BaseModel):
    action_id: str
    batch_id: str
    client: str = Field(default=CHAT_CLIENT, description="Who proposed it")
    grant_s: int | None = Field(
        default=None, description="While pending: the grant a tap may give (seconds)"
    )
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
    granted_until: float | None = Field(
        default=None,
        description="approve with grant: the grant the tap gave ends then (Unix seconds); "
        "null: none given (not asked, or the policy offers none)",
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


class Notice(BaseModel):
    """Something the orchestrator must bring to a user's chat (``next_notices``):

    - ``show``: a batch a client proposed, pending; send ``batch`` with its buttons under
      ``key`` (the message key the batch was staged with, ``consent:<batch id>``), saying
      which client asked;
    - ``execute``: an action a client proposed that the agent's policy or a grant approved;
      call ``<server>__confirm_<kind>(decision.payload, decision.approval)``, record it with
      complete or fail, and tell the user under ``key`` (``done:<action id>``).
    """

    key: str
    type: Literal["show", "execute"]
    agent: str
    chat_id: str
    user_id: str
    client: str = Field(description="The client's name, e.g. 'claude-desktop'")
    client_label: str = Field(description="For the user, e.g. 'Claude Desktop'")
    batch: BatchView | None = Field(default=None, description="show: the batch to send")
    decision: Decision | None = Field(
        default=None, description="execute: the approved action, with a fresh approval"
    )


class Notices(BaseModel):
    notices: list[Notice] = Field(description="Oldest first, leased to this run")


class Undelivered(BaseModel):
    """A notice the orchestrator could not bring to its chat (``next_notices``'
    ``undelivered``): handed out again later, or, ``final``, never."""

    key: str = Field(max_length=200, description="The notice's key")
    reason: str = Field(
        min_length=1,
        max_length=500,
        description="Why, in words the client's model (get_action) and the ledger can read",
    )
    final: bool = Field(
        default=False,
        description="True: it can never be delivered (the chat is not found, the user "
        "blocked the bot): a show notice's pending actions fail with the reason. False: "
        "try again later (telegram-io down, Telegram rate limits or cannot be reached)",
    )


class Grant(BaseModel):
    grant_id: str = Field(description="'grt_' + 12 hex digits")
    agent: str
    user_id: str
    client: str
    server: str
    kind: str
    started_at: float
    until: float = Field(description="Unix seconds")
    summary: str = Field(description="The change whose tap gave it")


class Grants(BaseModel):
    grants: list[Grant] = Field(description="Running grants, the soonest to end first")


LedgerEvent = Literal[
    "proposed", "denied", "decided", "executed", "failed", "expired", "granted", "grant_ended"
]


class LedgerEntry(BaseModel):
    """One line of the hash-chained ledger: ``hash`` = SHA-256 over ``prev_hash`` and the
    entry's canonical JSON; the first entry's ``prev_hash`` is 64 zeros."""

    seq: int
    at: float
    event: LedgerEvent
    agent: str
    user_id: str | None
    client: str
    action_id: str | None
    server: str | None
    kind: str | None
    summary: str | None
    how: How | None = Field(description="For decided: tap, policy, grant or expiry")
    outcome: str | None = Field(
        description="decided: 'confirmed' or 'cancelled'; executed/failed: the result's "
        "message or the error; granted: until when; proposed: 'always asked: …' for a kind "
        "that needs a tap each time, else null"
    )
    payload_sha256: str | None = Field(
        default=None,
        description="SHA-256 of the action's payload (for a capability: its tool and "
        "arguments); null for entries about no action, and in ledgers older than it",
    )
    prev_hash: str
    hash: str


class Ledger(BaseModel):
    entries: list[LedgerEntry] = Field(description="Newest last")


class Screened(BaseModel):
    """A proposal of the agent's own conversation held against the agent's policy before the
    model reads it (``screen``): denied (recorded in the ledger, never staged), or not."""

    denied: bool = Field(description="True: the policy denies it; the ledger has the denial")
    reason: str | None = Field(
        default=None, description="When denied: what the model is told, in words"
    )
