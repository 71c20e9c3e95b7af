"""Conversation state, kept by the memory server (so the orchestrator stays stateless).

A turn costs memory two calls: :meth:`Conversation.context` before it (the window, the
summary, what is remembered, the question a typed text answers, whether a summary round
is due) and :meth:`Conversation.record` after it (its items, stored once per turn id, with
its model calls' usage records; whether a summary round is due now). The memory server
is the registry's server with ``role: memory``. Memory trouble never breaks a turn: a
context that cannot be read is empty and a record that fails is logged; the user still
gets an answer.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from meshkit.wire.memory import (
    AppendResult,
    Held,
    HeldMessage,
    HeldMessages,
    ResetResult,
    TurnContext,
    Window,
)
from meshkit.wire.usage import UsageRecord
from orchestrator.core.summaries import EVERY
from orchestrator.llm.base import Item
from orchestrator.mesh.registry import Registry
from orchestrator.mesh.roles import RoleClient

logger = logging.getLogger(__name__)

ANSWER_CHARS = 4096  # of a typed answer to a question, as memory keeps it (a Telegram message)


class Conversation:
    def __init__(self, registry: Registry) -> None:
        self._memory = RoleClient(registry, "memory")
        if self._memory.server is None:
            logger.warning(
                "no server with role 'memory' in the registry: conversations are not remembered"
            )

    async def context(
        self, agent: str, chat_id: str, user: str, answer: str | None = None
    ) -> TurnContext | None:
        """What a turn reads from memory, in one call; None when memory did not answer.
        ``answer``: the user's own text, which answers the chat's question waiting for a
        typed answer (``answered``, now answered); None answers nothing (a scheduled
        prompt's text is not the user's)."""
        arguments: dict[str, Any] = {
            "agent": agent, "chat_id": chat_id, "user": user, "summarize_every": EVERY,
        }  # fmt: skip
        if answer:
            arguments["text"] = answer[:ANSWER_CHARS]
        return await self._memory.call("turn_context", arguments, TurnContext)

    async def record(
        self,
        agent: str,
        chat_id: str,
        items: list[Item],
        turn_id: str | None = None,
        *,
        usage: Sequence[UsageRecord] = (),
        warned: Sequence[str] = (),
    ) -> AppendResult | None:
        """Store a turn (with ``turn_id``, a turn redone after a crash is stored once), and
        learn whether a summary round is due; None when memory did not answer. ``usage``
        (the model calls' records) and ``warned`` (allowance warnings given) ride on the
        same call: stored even when the turn was stored before (they have their own ids)."""
        arguments: dict[str, Any] = {
            "agent": agent, "chat_id": chat_id, "items": items, "summarize_every": EVERY,
        }  # fmt: skip
        if turn_id is not None:
            arguments["turn_id"] = turn_id
        if usage:
            arguments["usage"] = [record.model_dump(mode="json") for record in usage]
        if warned:
            arguments["warned"] = list(warned)
        return await self._memory.call("append_items", arguments, AppendResult)

    async def loaded(self, agent: str, chat_id: str) -> Window | None:
        """The window with its token estimate and how many older items it leaves out."""
        return await self._memory.call("load_window", {"agent": agent, "chat_id": chat_id}, Window)

    async def append(self, agent: str, chat_id: str, items: list[Item]) -> bool:
        """Add items to the conversation outside a turn (what a tap did, for the model)."""
        if not items:
            return True
        arguments: dict[str, Any] = {"agent": agent, "chat_id": chat_id, "items": items}
        return await self._memory.call("append_items", arguments, AppendResult) is not None

    async def hold(  # noqa: PLR0917 (the message, where it was written)
        self,
        agent: str,
        chat_id: str,
        turn_id: str,
        text: str,
        user_id: str | None,
        purpose: str,
    ) -> Held | None:
        """Keep a message the allowance's cap held back until a turn is stored under
        ``turn_id``; None when memory did not answer."""
        arguments: dict[str, Any] = {
            "agent": agent, "chat_id": chat_id, "turn_id": turn_id,
            "text": text[:ANSWER_CHARS], "purpose": purpose,
        }  # fmt: skip
        if user_id is not None:
            arguments["user_id"] = user_id
        return await self._memory.call("hold_message", arguments, Held)

    async def held(self, agent: str, chat_id: str) -> list[HeldMessage] | None:
        """The chat's messages the cap held that wait still, oldest first; None when memory
        did not answer."""
        arguments = {"agent": agent, "chat_id": chat_id}
        found = await self._memory.call("held_messages", arguments, HeldMessages)
        return None if found is None else found.messages

    async def reset(self, agent: str, chat_id: str) -> bool:
        arguments = {"agent": agent, "chat_id": chat_id}
        return await self._memory.call("reset", arguments, ResetResult) is not None
