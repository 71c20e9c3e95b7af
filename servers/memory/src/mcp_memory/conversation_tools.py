"""The conversation's internal tools, for the orchestrator: a turn's context in one read,
appending a turn, the window, summaries of what left it, starting over, and the messages
the allowance's cap held back."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastmcp import FastMCP
from pydantic import Field

from mcp_memory.held import HeldBack
from mcp_memory.service import ConversationService
from mcp_memory.settings import MAX_WINDOW_ITEMS, MAX_WINDOW_TOKENS
from mcp_memory.summaries import MAX_LINES, Summaries
from mcp_memory.turns import TurnContexts
from mcp_memory.usage import UsageService
from mcp_memory.usage_tools import Records, Warned
from meshkit.params import Agent, ChatId, IntegerId
from meshkit.tool_classes import internal
from meshkit.wire.memory import (
    AppendResult,
    Evicted,
    Held,
    HeldMessages,
    ResetResult,
    SummarySaved,
    TurnContext,
    Window,
)

MAX_APPEND_ITEMS = 1000
SummarizeEvery = Annotated[
    int | None,
    Field(
        ge=1,
        le=MAX_LINES,
        description="Also say whether at least this many items out of the window wait for "
        "a summary (summary_due); null: not asked",
    ),
]


def add_conversation_tools(
    mcp: FastMCP[Any],
    service: ConversationService,
    contexts: TurnContexts,
    summaries: Summaries,
    usages: UsageService,
    *,
    held: HeldBack,
) -> None:
    @mcp.tool(**internal(title="A turn's context"))
    async def turn_context(
        agent: Agent,
        chat_id: ChatId,
        user: Annotated[str, Field(max_length=200, description="whose notes: the turn's user")],
        text: Annotated[
            str | None,
            Field(
                min_length=1,
                max_length=4096,
                description="The user's text: it answers the chat's question waiting for a "
                "typed answer, if one does (answered); null: answer nothing",
            ),
        ] = None,
        summarize_every: SummarizeEvery = None,
    ) -> TurnContext:
        """Everything a turn reads from memory, in one call: the chat's window with its
        summary, what is remembered for the user (as list_memories), the question the
        text answers, and whether a summary round is due."""
        return await contexts.read(agent, chat_id, user, text, summarize_every)

    @mcp.tool(**internal(title="Append conversation items"))
    async def append_items(  # noqa: PLR0917 (a tool's parameters are its schema)
        agent: Agent,
        chat_id: ChatId,
        items: Annotated[
            list[dict[str, Any]],
            Field(
                description="Responses API input items, oldest first: messages, function_call "
                "and function_call_output items are stored; other types (reasoning) are ignored",
                max_length=MAX_APPEND_ITEMS,
            ),
        ],
        turn_id: Annotated[
            str | None,
            Field(
                max_length=200,
                description="An id of this turn (e.g. the Telegram update it answers): a turn "
                "appended again with the same id stores nothing",
            ),
        ] = None,
        summarize_every: SummarizeEvery = None,
        usage: Annotated[
            Records | None, Field(description="The turn's model calls, recorded with it")
        ] = None,
        warned: Warned | None = None,
    ) -> AppendResult:
        """Append a turn's items to the chat's conversation, stamped with the server's time,
        and record its model calls (each once by its id, even when the turn is a duplicate).

        All or nothing: one malformed item rejects the call and names its index.
        """
        result = await service.append(
            agent, chat_id, items, turn_id, summarize_every=summarize_every
        )
        if not (usage or warned):
            return result
        # usage.sqlite3 is another file: the records are written after the items, and a
        # failure there fails the call; made again, it stores them (the turn a duplicate).
        recorded = await usages.record(usage or [], warned or [], agent)
        return result.model_copy(update={"usage": recorded})

    @mcp.tool(**internal(title="Load conversation window", read_only=True, idempotent=True))
    async def load_window(
        agent: Agent,
        chat_id: ChatId,
        max_items: Annotated[
            int | None,
            Field(ge=1, le=MAX_WINDOW_ITEMS, description="Item limit (default: server setting)"),
        ] = None,
        max_tokens: Annotated[
            int | None,
            Field(ge=1, le=MAX_WINDOW_TOKENS, description="Token budget (default: server setting)"),
        ] = None,
    ) -> Window:
        """The newest items of the chat's current conversation, ready to send to the model.

        Starts at a user message (or at the developer notes told just before it), keeps
        function calls with their outputs, and is empty after a reset or when the chat has
        been inactive longer than the timeout, but for the notes told since the model last
        spoke (the newest few): the next turn learns what happened meanwhile.
        """
        return await service.window(agent, chat_id, max_items, max_tokens)

    @mcp.tool(**internal(title="Items to summarize", read_only=True, idempotent=True))
    async def evicted_items(
        agent: Agent,
        chat_id: ChatId,
        min_items: Annotated[
            int, Field(ge=1, le=1000, description="Hand out nothing until this many wait")
        ] = 10,
    ) -> Evicted:
        """What left the chat's window and no summary covers yet, with the summary so far."""
        return await summaries.evicted(agent, chat_id, min_items)

    @mcp.tool(**internal(title="Save a summary", idempotent=True))
    async def save_summary(  # noqa: PLR0917 (a tool's parameters are its schema)
        agent: Agent,
        chat_id: ChatId,
        text: Annotated[str, Field(min_length=1, max_length=20_000)],
        up_to_id: Annotated[IntegerId, Field(description="evicted_items' up_to_id")],
        usage: Annotated[
            Records | None, Field(description="The summary's model call, recorded with it")
        ] = None,
        warned: Warned | None = None,
    ) -> SummarySaved:
        """Keep the summary of the conversation up to that item (it replaces the one before);
        later windows carry it. Not saved when a newer one exists or the chat was reset.
        The usage given is recorded either way (each record once by its id)."""
        saved = await summaries.save(agent, chat_id, text, up_to_id)
        if not (usage or warned):
            return saved
        recorded = await usages.record(usage or [], warned or [], agent)
        return saved.model_copy(update={"usage": recorded})

    @mcp.tool(**internal(title="Reset conversation", idempotent=True))
    async def reset(agent: Agent, chat_id: ChatId) -> ResetResult:
        """Start a new conversation in the chat: later windows hold nothing from before."""
        return await service.reset(agent, chat_id)

    @mcp.tool(**internal(title="Hold a message at the allowance's cap", idempotent=True))
    async def hold_message(  # noqa: PLR0917 (a tool's parameters are its schema)
        agent: Agent,
        chat_id: ChatId,
        turn_id: Annotated[
            str,
            Field(
                min_length=1,
                max_length=200,
                description="The turn it starts (its update id): once a turn is appended "
                "under it, the message is answered",
            ),
        ],
        text: Annotated[str, Field(min_length=1, max_length=4096)],
        user_id: Annotated[
            str | None, Field(min_length=1, max_length=200, description="Who wrote it")
        ] = None,
        purpose: Annotated[
            Literal["turn", "scheduled"],
            Field(description="A user's message or a scheduled prompt"),
        ] = "turn",
    ) -> Held:
        """Keep a message the allowance's cap held back, to be answered once more is allowed
        (held_messages). The same turn id held again stays as it was; a chat holds at most
        a few (held is false past them: tell the user to send it again later)."""
        return await held.hold(agent, chat_id, turn_id, text, user_id, purpose)

    @mcp.tool(**internal(title="Messages held at the cap", read_only=True, idempotent=True))
    async def held_messages(agent: Agent, chat_id: ChatId) -> HeldMessages:
        """The chat's held messages not answered yet (no turn appended under their turn id),
        oldest first: answer each by a turn appended under its turn id."""
        return await held.waiting(agent, chat_id)
