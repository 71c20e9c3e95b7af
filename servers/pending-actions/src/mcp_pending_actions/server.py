"""The pending-actions MCP surface: internal tools over PendingActions, for the orchestrator."""

from __future__ import annotations

import time
from collections.abc import Callable
from importlib.metadata import version
from typing import Annotated, Any

from fastmcp import FastMCP
from pydantic import Field

from mcp_pending_actions.checks import Tap
from mcp_pending_actions.models import (
    ActionList,
    ActionView,
    BatchDecisions,
    BatchView,
    Decision,
    History,
    Staged,
)
from mcp_pending_actions.service import PendingActions
from mcp_pending_actions.settings import PendingSettings
from mcp_pending_actions.store import PendingStore
from meshkit.approval_keys import signing_key
from meshkit.params import Agent, ChatId
from meshkit.proposals import SERVER_PATTERN, ApprovalSigner, Proposal
from meshkit.server import create_server
from meshkit.settings import load_settings
from meshkit.tool_classes import internal

INSTRUCTIONS = (
    "Pending actions for the clawmesh orchestrator: proposals wait here for the user's tap. "
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
) -> FastMCP[Any]:
    """The pending-actions server; ``settings`` default to the environment (embedded mode)."""
    settings = settings or load_settings(PendingSettings)
    store = PendingStore(settings.db_path, max_bytes=settings.max_db_bytes, clock=clock)
    mcp = create_server(
        "pending-actions",
        version=version("mcp-pending-actions"),
        instructions=INSTRUCTIONS,
        lifespan=store.lifespan,
        checks={"database": store.ping},
        stores=[store],
    )
    # After the database is checked: a DATA_DIR it cannot write is named as every server
    # names it, before the key pair is made there.
    signer = ApprovalSigner(signing_key(settings), clock=clock)
    service = PendingActions(settings, store, signer, clock=clock)

    @mcp.tool(**internal(title="Stage a proposal"))
    async def stage(  # noqa: PLR0917 (a tool's parameters are its schema)
        agent: Agent,
        chat_id: ChatId,
        server: Annotated[
            str,
            Field(
                description="The registry name of the server that proposed it (its confirm "
                "tool performs it), e.g. 'shopping'",
                pattern=SERVER_PATTERN,
                max_length=40,
            ),
        ],
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
    ) -> Staged:
        """Store a proposal as a pending action until the user confirms or cancels it.

        Its time to decide is the proposal's ttl_s, capped by the server setting.
        """
        return await service.stage(
            agent,
            chat_id,
            server,
            proposal,
            batch_id=batch_id,
            user_id=user_id,
            batch_text=batch_text,
            message_key=message_key,
        )

    @mcp.tool(**internal(title="Approve an action"))
    async def approve(
        action_id: ActionId,
        user_id: UserId,
        chat_id: ChatId,
        agent: Agent,
        message_key: MessageKey,
    ) -> Decision:
        """The user tapped Confirm: pending → executing, with an approval token.

        ok is false, with a reason the user can read, when the action is not pending
        (already done, cancelled, expired, being done right now) or not found: not this
        agent's, not in this chat, not for this user, or its buttons are not in the
        message sent under this key. An action stuck executing past the lease may be approved again
        (resumed). On ok, call <server>__confirm_<kind>(payload, approval), then complete
        or fail.
        """
        return await service.approve(action_id, Tap(agent, chat_id, message_key, user_id))

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

    return mcp
