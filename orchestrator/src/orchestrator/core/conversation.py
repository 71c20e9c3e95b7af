"""Conversation state, kept by the memory server (so the orchestrator stays stateless).

The memory server is the registry's server with ``role: memory``. Memory trouble never
breaks a turn: a window that cannot be loaded is empty and an append that fails is
logged; the user still gets an answer.
"""

from __future__ import annotations

import logging
from typing import Any

from meshkit.wire.memory import AppendResult, ResetResult, Window
from orchestrator.llm.base import Item
from orchestrator.mesh.registry import Registry
from orchestrator.mesh.roles import RoleClient

logger = logging.getLogger(__name__)


class Conversation:
    def __init__(self, registry: Registry) -> None:
        self._memory = RoleClient(registry, "memory")
        if self._memory.server is None:
            logger.warning(
                "no server with role 'memory' in the registry: conversations are not remembered"
            )

    async def window(self, agent: str, chat_id: str) -> list[Item]:
        window = await self.loaded(agent, chat_id)
        return list(window.items) if window is not None else []

    async def loaded(self, agent: str, chat_id: str) -> Window | None:
        """The window with its token estimate and how many older items it leaves out."""
        return await self._memory.call("load_window", {"agent": agent, "chat_id": chat_id}, Window)

    async def append(
        self, agent: str, chat_id: str, items: list[Item], turn_id: str | None = None
    ) -> bool:
        """Store a turn; with ``turn_id``, a turn redone after a crash is stored once."""
        if not items:
            return True
        arguments: dict[str, Any] = {"agent": agent, "chat_id": chat_id, "items": items}
        if turn_id is not None:
            arguments["turn_id"] = turn_id
        return await self._memory.call("append_items", arguments, AppendResult) is not None

    async def reset(self, agent: str, chat_id: str) -> bool:
        arguments = {"agent": agent, "chat_id": chat_id}
        return await self._memory.call("reset", arguments, ResetResult) is not None
