"""Summaries of what left the window: the orchestrator asks for the items no summary covers
yet, has the model summarize them (off the reply's path), and saves the summary here.

Bounded: nothing is handed out until ``min_items`` items are waiting, and at most
``MAX_LINES`` at a time, each cut to ``MAX_LINE`` characters. Only what the user and the
assistant said is handed out (not tool calls and their outputs).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from mcp_memory import items as responses
from mcp_memory.conversation_store import ConversationStore
from mcp_memory.service import ConversationService
from meshkit.wire.memory import Evicted, SummarySaved

MAX_LINES = 60
MAX_LINE = 500
MAX_SUMMARY = 4000


class Summaries:
    def __init__(
        self,
        conversation: ConversationService,
        store: ConversationStore,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._conversation = conversation
        self._store = store
        self._clock = clock

    async def evicted(self, agent: str, chat_id: str, min_items: int) -> Evicted:
        below = await self._conversation.archive_below(agent, chat_id)
        rows = await self._store.unsummarized(agent, chat_id, below, MAX_LINES)
        summary = await self._store.summary(agent, chat_id)
        previous = summary.text if summary is not None else None
        if len(rows) < min_items:
            return Evicted(lines=[], up_to_id=None, summary=previous)
        lines = []
        for row in rows:
            try:
                item = responses.decode(row.body)
            except responses.BadItem:
                continue
            text = responses.searchable(item)
            if text:
                lines.append(f"{item['role']}: {' '.join(text.split())[:MAX_LINE]}")
        return Evicted(lines=lines, up_to_id=rows[-1].id, summary=previous)

    async def save(self, agent: str, chat_id: str, text: str, up_to_id: int) -> SummarySaved:
        saved = await self._store.save_summary(
            agent, chat_id, text.strip()[:MAX_SUMMARY], up_to_id, self._clock()
        )
        return SummarySaved(saved=saved)
