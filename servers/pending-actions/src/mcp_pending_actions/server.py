"""The pending-actions MCP surface: internal tools over PendingActions, for the orchestrator."""

from __future__ import annotations

import time
from collections.abc import Callable
from importlib.metadata import version
from typing import Annotated, Any

from fastmcp import FastMCP
from pydantic import Field

from mcp_pending_actions.checks import Tap
from mcp_pending_actions.errors import Forbidden
from mcp_pending_actions.notices import NoticeBoard
from mcp_pending_actions.policies import FleetPolicies
from mcp_pending_actions.service import PendingActions
from mcp_pending_actions.settings import PendingSettings
from mcp_pending_actions.staging import Staging
from mcp_pending_actions.store import PendingStore
from meshkit.approval_keys import signing_key
from meshkit.params import Agent, ChatId
from meshkit.proposals import SERVER_PATTERN, ApprovalSigner
from meshkit.scopes import http_caller
from meshkit.server import create_server
from meshkit.settings import load_settings
from meshkit.stopping import Stopping
from meshkit.tool_classes import internal, relay
from meshkit.wire.pending_actions import (
    ActionList,
    ActionStatus,
    ActionView,
    BatchDecisions,
    BatchView,
    ClientStaged,
    Decision,
    Grant,
    Grants,
    History,
    Ledger,
    Notices,
    Screened,
    Staged,
    Undelivered,
)
from meshkit.wire.proposals import Proposal

INSTRUCTIONS = (
    "Pending actions for the clawmesh orchestrator: proposals wait here for the user's tap, "
    "under each agent's consent policy (ask, auto or deny per change kind). Servers stage "
    "the proposals of clients bound to a person with stage_for_client (relay tools). "
    "A client's proposals for one user wait at most PENDING_CLIENT_MAX_PENDING at once. "
    "Stage a producer tool's Proposal with the idempotency key of the message its buttons "
    "will be sent in (message_key): the only place a tap is taken from; on Confirm, approve "
    "returns a token for "
    "<server>__confirm_<kind>(payload, approval); report how it went with complete or fail. "
    "Every action is decided once, and every change is kept in its history."
)
MAX_TEXT = 4096  # a Telegram message

UserId = Annotated[
    str,
    Field(
        description="Telegram id of the user who tapped, as a string",
        min_length=1,
        max_length=200,
    ),
]
ActionId = Annotated[
    str,
    Field(description="Action id: 'act_' + 12 hex digits", min_length=1, max_length=100),
]
BatchId = Annotated[
    str,
    Field(description="Batch id: 'bat_' + 12 hex digits", min_length=1, max_length=100),
]
ServerName = Annotated[
    str,
    Field(
        description="The registry name of the server that proposed it (its confirm "
        "tool performs it), e.g. 'shopping'",
        pattern=SERVER_PATTERN,
        max_length=40,
    ),
]
GrantId = Annotated[
    str, Field(description="Grant id: 'grt_' + 12 hex digits", min_length=1, max_length=100)
]
Holder = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$", max_length=64)]
NoticeKeys = Annotated[
    tuple[Annotated[str, Field(max_length=200)], ...],
    Field(max_length=100, description="Keys of notices handled since the last call"),
]
MessageKey = Annotated[
    str,
    Field(
        description="The idempotency key the message the buttons are in was sent under "
        "(telegram-io reports it with the tap)",
        min_length=1,
        max_length=200,
    ),
]


def build_server(
    settings: PendingSettings | None = None,
    *,
    clock: Callable[[], float] = time.time,
    stopping: Stopping | None = None,
) -> FastMCP[Any]:
    """The pending-actions server; ``settings`` default to the environment (embedded mode);
    ``stopping`` (served mode) ends open ``next_notices`` polls when the process stops."""
    settings = settings or load_settings(PendingSettings)
    store = PendingStore(settings.db_path, max_bytes=settings.max_db_bytes, clock=clock)
    mcp = create_server(
        "pending-actions",
        version=version("mcp-pending-actions"),
        instructions=INSTRUCTIONS,
        checks={"database": store.ping},
        stores=[store],
    )
    # After the database is checked: a DATA_DIR it cannot write is named as every server
    # names it, before the key pair is made there.
    signer = ApprovalSigner(signing_key(settings), clock=clock)
    policies = FleetPolicies(settings.agents)
    board = NoticeBoard(
        store,
        signer,
        lease_s=settings.notice_lease_s,
        interval_s=settings.notice_interval_s,
        retry_s=settings.notice_retry_s,
        retry_max_s=settings.notice_retry_max_s,
        clock=clock,
    )
    if stopping is not None:
        stopping.on_stop(board.stop_waiting)
    service = PendingActions(settings, store, signer, policies, clock=clock)
    staging = Staging(settings, store, signer, policies, board, clock=clock)

    @mcp.tool(**internal(title="Stage a proposal"))
    async def stage(  # noqa: PLR0917 (a tool's parameters are its schema)
        agent: Agent,
        chat_id: ChatId,
        server: ServerName,
        proposal: Annotated[Proposal, Field(description="What the producer tool returned")],
        batch_id: Annotated[
            BatchId | None,
            Field(description="Add to this batch (one message's buttons); leave out for a new one"),
        ] = None,
        user_id: Annotated[
            str | None,
            Field(
                min_length=1,
                max_length=200,
                description="Only this user may decide (default: anyone in the chat)",
            ),
        ] = None,
        batch_text: Annotated[
            str | None,
            Field(
                min_length=1,
                max_length=MAX_TEXT,
                description="The message text the buttons sit under; the batch keeps the "
                "first text it is given",
            ),
        ] = None,
        message_key: Annotated[
            str | None,
            Field(
                min_length=1,
                max_length=200,
                description="For a new batch: the idempotency key its buttons' message will "
                "be sent under; taps are taken from that message only (none: no tap). A batch "
                "staged later under the same key takes it over",
            ),
        ] = None,
        ask: Annotated[
            bool,
            Field(
                description="Always ask: pending for a tap whatever the policy (auto) or a "
                "running grant says, with no grant offered (a deny still denies); a proposal "
                "with tap_only is always asked too"
            ),
        ] = False,
    ) -> Staged:
        """Store a proposal of the agent's own conversation under the agent's consent policy.

        ask: pending until the user confirms or cancels it (grant_s: the buttons may offer
        "✅ and allow for …"); its time to decide is the proposal's ttl_s, capped by the server
        setting. auto, or a running grant: state 'executing' with decided_by, approval and
        payload: call <server>__confirm_<kind>(payload, approval) now, then complete or fail.
        deny: a tool error saying it is not allowed, nothing staged.
        """
        return await staging.stage(
            agent,
            chat_id,
            server,
            proposal,
            batch_id=batch_id,
            user_id=user_id,
            batch_text=batch_text,
            message_key=message_key,
            ask=ask,
        )

    @mcp.tool(**internal(title="Screen a proposal against the policy"))
    async def screen(
        agent: Agent,
        server: ServerName,
        proposal: Annotated[Proposal, Field(description="What the producer tool returned")],
        user_id: Annotated[
            str | None,
            Field(min_length=1, max_length=200, description="The user the turn is for"),
        ] = None,
    ) -> Screened:
        """Apply the agent's consent policy to a proposal of its own conversation before the
        model reads it, when the policy may deny it: denied is recorded in the ledger (a
        denial, as stage records one) with the words for the model; anything else is not
        staged and not recorded: stage it after the turn as usual."""
        return await staging.screen(agent, server, proposal, user_id)

    @mcp.tool(**internal(title="Approve an action"))
    async def approve(  # noqa: PLR0917 (a tool's parameters are its schema)
        action_id: ActionId,
        user_id: UserId,
        chat_id: ChatId,
        agent: Agent,
        message_key: MessageKey,
        grant: Annotated[
            bool,
            Field(
                description="The user tapped '✅ and allow for …': when the agent's policy "
                "offers a grant for this kind, later changes of it from the same client "
                "need no tap until granted_until"
            ),
        ] = False,
    ) -> Decision:
        """The user tapped Confirm: pending → executing, with an approval token.

        ok is false, with a reason the user can read, when the action is not pending
        (already done, cancelled, expired, being done right now) or not found: not this
        agent's, not in this chat, not for this user, or its buttons are not in the
        message sent under this key. An action stuck executing past the lease may be approved again
        (resumed). On ok, call <server>__confirm_<kind>(payload, approval), then complete
        or fail.
        """
        tap = Tap(agent, chat_id, message_key, user_id)
        return await service.approve(action_id, tap, grant=grant)

    @mcp.tool(**internal(title="Cancel an action", idempotent=True))
    async def cancel(
        action_id: ActionId,
        user_id: UserId,
        chat_id: ChatId,
        agent: Agent,
        message_key: MessageKey,
    ) -> Decision:
        """The user tapped Cancel: pending → cancelled; ok is false when it was not pending,
        or not found as for approve."""
        return await service.cancel(action_id, Tap(agent, chat_id, message_key, user_id))

    @mcp.tool(**internal(title="Approve a batch"))
    async def approve_batch(
        batch_id: BatchId,
        user_id: UserId,
        chat_id: ChatId,
        agent: Agent,
        message_key: MessageKey,
    ) -> BatchDecisions:
        """The user tapped Confirm all: approve each pending action of the batch.

        One decision per action, in staging order; actions that are not pending are
        reported with their state. No decisions when the batch is not found as for approve.
        """
        return await service.approve_batch(batch_id, Tap(agent, chat_id, message_key, user_id))

    @mcp.tool(**internal(title="Cancel a batch", idempotent=True))
    async def cancel_batch(
        batch_id: BatchId,
        user_id: UserId,
        chat_id: ChatId,
        agent: Agent,
        message_key: MessageKey,
    ) -> BatchDecisions:
        """The user tapped Cancel all: cancel each pending action of the batch."""
        return await service.cancel_batch(batch_id, Tap(agent, chat_id, message_key, user_id))

    @mcp.tool(**internal(title="Record a confirmed action's result"))
    async def complete(
        action_id: ActionId,
        result: Annotated[
            dict[str, Any], Field(description="What <server>__confirm_<kind> returned")
        ],
    ) -> ActionView:
        """executing → done, keeping the confirm tool's result. An error when the action is
        not executing (a second complete changes nothing)."""
        return await service.complete(action_id, result)

    @mcp.tool(**internal(title="Record a confirmed action's failure"))
    async def fail(
        action_id: ActionId,
        error: Annotated[
            str,
            Field(min_length=1, max_length=2000, description="Why it failed, for the user"),
        ],
    ) -> ActionView:
        """executing → failed, keeping why. An error when the action is not executing."""
        return await service.fail(action_id, error)

    @mcp.tool(**internal(title="List pending actions", read_only=True, idempotent=True))
    async def list_pending(agent: Agent, chat_id: ChatId) -> ActionList:
        """The chat's actions still waiting for a tap (not expired), oldest first."""
        return await service.list_pending(agent, chat_id)

    @mcp.tool(**internal(title="Get a batch", read_only=True, idempotent=True))
    async def get_batch(batch_id: BatchId) -> BatchView:
        """A batch, its message text and its actions with their states, in staging order:
        what the message with the buttons should now show."""
        return await service.get_batch(batch_id)

    @mcp.tool(**internal(title="Action history", read_only=True, idempotent=True))
    async def history(action_id: ActionId) -> History:
        """Every state change of an action, oldest first: the audit trail."""
        return await service.history(action_id)

    @mcp.tool(**relay(title="Stage a client's proposal"))
    async def stage_for_client(
        server: ServerName,
        agent: Agent,
        user_id: Annotated[
            str,
            Field(
                pattern=r"^[1-9][0-9]{0,19}$",
                max_length=20,
                description="The bound user's Telegram id",
            ),
        ],
        client: Annotated[
            str,
            Field(
                pattern=r"^[a-z0-9][a-z0-9-]{0,31}$",
                max_length=32,
                description="The bound client's credential name, e.g. 'claude-desktop'",
            ),
        ],
        proposal: Annotated[Proposal, Field(description="What the producer tool returned")],
    ) -> ClientStaged:
        """A client bound to this agent and user proposed a change through your producer
        tool: stage it under the agent's policy and have it shown to the user in their chat
        (or, allowed by the policy or a grant, executed). Answers at once; the client
        follows it with action_status. Only for your own server's changes. A proposal of a
        tap-only kind (tap_only) is always shown for a tap, whatever the policy or a grant."""
        _acting_for(server)
        return await staging.stage_for_client(server, agent, user_id, client, proposal)

    @mcp.tool(**relay(title="A client's action", read_only=True))
    async def action_status(
        action_id: ActionId,
        agent: Agent,
        user_id: Annotated[str, Field(min_length=1, max_length=200)],
        server: ServerName,
    ) -> ActionStatus:
        """An action's state (pending, executing, done, failed, cancelled, expired) and
        outcome, for the client that follows it: only this agent's, user's and server's
        actions (others are not found)."""
        _acting_for(server)
        return await service.action_status(action_id, agent, user_id, server)

    @mcp.tool(**internal(title="Next notices"))
    async def next_notices(  # noqa: PLR0917 (a tool's parameters are its schema)
        consumer: Holder,
        run: Holder,
        max: Annotated[int, Field(ge=1, le=100)] = 20,
        wait_s: Annotated[float, Field(ge=0, le=25)] = 0,
        ack: NoticeKeys = (),
        undelivered: Annotated[
            tuple[Undelivered, ...],
            Field(
                max_length=100,
                description="Notices handled since the last call that did not reach their "
                "chat, each with why; final: never will",
            ),
        ] = (),
    ) -> Notices:
        """What clients' proposals ask of the orchestrator (show a batch, execute an
        approved action), leased to this run; waits up to wait_s when there is none. Ack
        each delivered notice by key in the next call's ``ack``, and report each one that
        could not be delivered in ``undelivered``: handed out again after a backoff, or,
        final, never (the pending actions of a show notice fail, with the reason). One
        neither acked nor reported within the lease is handed out again. An execute notice
        carries a fresh approval."""
        return await board.next_notices(consumer, run, max, wait_s, ack, undelivered)

    @mcp.tool(**internal(title="Running grants", read_only=True, idempotent=True))
    async def list_grants(agent: Agent, user_id: UserId) -> Grants:
        """The user's running grants with this agent, the soonest to end first."""
        return await service.list_grants(agent, user_id)

    @mcp.tool(**internal(title="End a grant", idempotent=True))
    async def end_grant(grant_id: GrantId, agent: Agent, user_id: UserId) -> Grant:
        """The user ended a grant: the next change of its kind asks again. An error when
        the user has no such running grant."""
        return await service.end_grant(grant_id, agent, user_id)

    @mcp.tool(**internal(title="Audit", read_only=True, idempotent=True))
    async def audit(
        agent: Agent, user_id: UserId, limit: Annotated[int, Field(ge=1, le=100)] = 10
    ) -> Ledger:
        """The user's last ledger entries with this agent (proposed, denied, decided and how,
        executed, failed, expired, grants), newest last."""
        return await service.audit(agent, user_id, limit)

    return mcp


def _acting_for(server: str) -> None:
    """Over HTTP, a server stages and follows its own changes only: its credential's name is
    the server it speaks for. In-process (embedded mode) the argument stands."""
    caller = http_caller()
    if caller is not None and caller.name != server:
        raise Forbidden(
            f"forbidden: {caller.name} may stage and follow its own changes only, not {server}'s"
        )
