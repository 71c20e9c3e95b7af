"""Conversation state, kept by the memory server (so the orchestrator stays stateless).

Memory trouble never breaks a turn: a window that cannot be loaded is empty and
an append that fails is logged; the user still gets an answer.
"""

from __future__ import annotations

import logging
from typing import Any

from orchestrator.llm.base import Item
from orchestrator.registry import Registry

logger = logging.getLogger(__name__)

MEMORY = "memory"


class Conversation:
    def __init__(self, registry: Registry) -> None:
        self._registry = registry
        if not registry.has_server(MEMORY):
            logger.warning("no 'memory' server in the registry: conversations are not remembered")

    async def window(self, agent: str, chat_id: str) -> list[Item]:
        result = await self._call("load_window", {"agent": agent, "chat_id": chat_id})
        items = result.get("items") if result else None
        return list(items) if isinstance(items, list) else []

    async def append(
        self, agent: str, chat_id: str, items: list[Item], turn_id: str | None = None
    ) -> bool:
        """Store a turn; with ``turn_id``, a turn redone after a crash is stored once."""
        if not items:
            return True
        arguments: dict[str, Any] = {"agent": agent, "chat_id": chat_id, "items": items}
        if turn_id is not None:
            arguments["turn_id"] = turn_id
        return await self._call("append_items", arguments) is not None

    async def reset(self, agent: str, chat_id: str) -> bool:
        return await self._call("reset", {"agent": agent, "chat_id": chat_id}) is not None

    async def _call(self, tool_name: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
        tool = self._registry.find(MEMORY, tool_name)
        if tool is None:
            logger.warning("memory.%s is unavailable (server down or missing)", tool_name)
            return None
        outcome = await self._registry.call(tool, arguments)
        if not outcome.ok:
            logger.warning("memory.%s failed: %s", tool_name, outcome.output[:300])
            return None
        return outcome.structured or {}
