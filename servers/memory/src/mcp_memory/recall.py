"""recall: find what the user said before, in their notes and the archived conversation.

The archive is the chat's items older than the current window (the model sees the
window already), found with SQLite FTS5 (``items_fts``, ``memories_fts``). Only the
asking agent's items in this user's chat, and this user's notes with this agent, are
searched. A private chat's id is its user's id, so the user is the chat.
"""

from __future__ import annotations

import json
import re
from datetime import date, datetime, time
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from mcp_memory.conversation_store import ConversationStore
from mcp_memory.errors import InvalidRequest
from mcp_memory.memory_store import MemoryStore
from mcp_memory.service import ConversationService
from meshkit.wire.memory import Recalled, RecallHit

MAX_HITS = 10
MAX_WORDS = 12
_WORD = re.compile(r"\w+")


def fts_query(query: str) -> str:
    """Any of the query's words, each quoted: FTS5 syntax in the query can do nothing."""
    words = _WORD.findall(query)[:MAX_WORDS]
    if not words:
        raise InvalidRequest("Give recall some words to look for.")
    return " OR ".join(f'"{word}"' for word in words)


def zone(timezone: str) -> ZoneInfo:
    try:
        return ZoneInfo(timezone or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


def since_epoch(since: str | None, tz: ZoneInfo) -> float:
    if not since:
        return 0.0
    try:
        day = date.fromisoformat(since)
    except ValueError:
        raise InvalidRequest(f"since must be a date like 2026-11-01, not {since!r}.") from None
    return datetime.combine(day, time(), tzinfo=tz).timestamp()


class Recall:
    def __init__(
        self, conversation: ConversationService, items: ConversationStore, memories: MemoryStore
    ) -> None:
        self._conversation = conversation
        self._items = items
        self._memories = memories

    async def recall(
        self, agent: str, user: str, query: str, since: str | None, timezone: str
    ) -> Recalled:
        if not user:
            raise InvalidRequest("recall needs the user; none is known here.")
        match, tz = fts_query(query), zone(timezone)
        start = since_epoch(since, tz)

        def when(at: float) -> str:
            return datetime.fromtimestamp(at, tz).strftime("%Y-%m-%d %H:%M")

        notes = await self._memories.search(agent, user, match, start, MAX_HITS)
        hits = [RecallHit(source="note", when=when(at), who=None, snippet=s) for at, s in notes]
        below = await self._conversation.archive_below(agent, user)
        found = await self._items.search(agent, user, match, start, below, MAX_HITS - len(hits))
        for item in found:
            role = json.loads(item.body).get("role")
            who = role if role in ("user", "assistant") else None
            hits.append(
                RecallHit(
                    source="conversation", when=when(item.created_at), who=who, snippet=item.snippet
                )
            )
        return Recalled(hits=hits)
