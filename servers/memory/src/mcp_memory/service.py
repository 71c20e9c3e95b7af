"""Conversations: append items, load the window the model sees next, start over.

The window of a chat is the newest stretch of its current conversation that
- holds only items after the last reset and after the last silence longer than
  ``inactivity_s`` (and is empty when the chat has been silent that long),
- fits the item limit and the token budget, newest first, without gaps,
- starts at a user message, or at the notes just before it (developer messages: what the
  orchestrator told the conversation outside a turn, a tap's outcome or another client's
  change, often before the user writes), and
- never holds a function call without its output, or an output without its call
  (a call left dangling by a crash mid-turn is dropped).

Notes told since the model last spoke are never lost to a silence: when the chat has been
silent longer than ``inactivity_s``, the window is those notes alone (the newest
``MAX_NOTES``, none older than ``NOTES_KEPT_S``), so the next turn learns what happened
meanwhile; once a turn is stored after them, they are as old as its silence makes them.
A stored row that does not decode is skipped and logged, never fatal.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from mcp_memory import items as responses
from mcp_memory.conversation_store import ConversationStore, Row, Tail
from mcp_memory.errors import InvalidItem, InvalidRequest
from mcp_memory.settings import MAX_WINDOW_ITEMS, MAX_WINDOW_TOKENS, MemorySettings
from mcp_memory.tokens import encode, estimate
from meshkit.wire.memory import AppendResult, ResetResult, Window

logger = logging.getLogger(__name__)

Item = dict[str, Any]


class ConversationService:
    def __init__(
        self,
        settings: MemorySettings,
        store: ConversationStore,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._settings = settings
        self._store = store
        self._clock = clock

    async def append(
        self,
        agent: str,
        chat_id: str,
        items: Sequence[Item],
        turn_id: str | None = None,
        *,
        summarize_every: int | None = None,
    ) -> AppendResult:
        """Store the kept items in order, all stamped now; a malformed item stores nothing,
        and neither does a ``turn_id`` appended before (a turn redone after a crash). With
        ``summarize_every``, whether that many items out of the window wait for a summary
        (read in the same transaction as the write)."""
        _check_key(agent, chat_id)
        bodies, texts = [], []
        for index, item in enumerate(items):
            try:
                kept = responses.normalise(item)
            except responses.BadItem as error:
                raise InvalidItem(
                    f"items[{index}] is malformed: {error}. Nothing was stored; "
                    "fix that item and send the whole list again."
                ) from error
            if kept is not None:
                bodies.append(encode(kept))
                texts.append(responses.searchable(kept))
        at = self._clock()
        max_items, max_tokens = self._limits(None, None)
        asked = None if summarize_every is None else max_items
        fresh, tail = await self._store.append(
            agent, chat_id, at, bodies, turn_id, texts, tail=asked
        )
        due = (
            summarize_every is not None
            and tail is not None
            and self._view(tail, max_tokens, at).unsummarized >= summarize_every
        )
        stored = len(bodies) if fresh else 0
        return AppendResult(
            stored=stored,
            ignored=len(items) - len(bodies),
            at=at,
            duplicate=not fresh,
            summary_due=due,
        )

    async def window(
        self,
        agent: str,
        chat_id: str,
        max_items: int | None = None,
        max_tokens: int | None = None,
    ) -> Window:
        """The items to send the model before the next user message."""
        return (await self.view(agent, chat_id, max_items, max_tokens)).window

    async def view(
        self,
        agent: str,
        chat_id: str,
        max_items: int | None = None,
        max_tokens: int | None = None,
    ) -> View:
        """The window, and how many items out of it wait for a summary."""
        _check_key(agent, chat_id)
        max_items, max_tokens = self._limits(max_items, max_tokens)
        tail = await self._store.tail(agent, chat_id, max_items)
        return self._view(tail, max_tokens, self._clock())

    def _view(self, tail: Tail, max_tokens: int, now: float) -> View:
        chosen = select(
            tail.rows, now=now, inactivity_s=self._settings.inactivity_s, max_tokens=max_tokens
        )
        summary = tail.summary
        silent = not tail.rows or now - tail.rows[0].created_at > self._settings.inactivity_s
        # The summary belongs to this conversation when no silence ended it in between.
        current = (
            not silent
            and summary is not None
            and bool(chosen)
            and summary.up_to_id < chosen[0].row_id
            and chosen[0].at - summary.up_to_at <= self._settings.inactivity_s
        )
        window = Window(
            items=[c.item for c in chosen],
            token_estimate=sum(c.cost for c in chosen),
            dropped=tail.total - len(chosen),
            last_activity=tail.rows[0].created_at if tail.rows else None,
            summary=summary.text if current and summary is not None else None,
        )
        # What no summary covers, less what is still in the window (all of it in the tail).
        covered = summary.up_to_id if summary is not None else 0
        below = min((c.row_id for c in chosen), default=EMPTY_BELOW)
        in_window = sum(1 for r in tail.rows if r.id >= below and r.id > covered)
        return View(window, tail.unsummarized - in_window, below)

    async def archive_below(self, agent: str, chat_id: str) -> int:
        """The first item id of the chat's window: everything below it is archived (all of
        it when the window is empty)."""
        return (await self.view(agent, chat_id)).below

    def _limits(self, max_items: int | None, max_tokens: int | None) -> tuple[int, int]:
        return (
            _limit("max_items", max_items, self._settings.window_max_items, MAX_WINDOW_ITEMS),
            _limit("max_tokens", max_tokens, self._settings.window_max_tokens, MAX_WINDOW_TOKENS),
        )

    async def reset(self, agent: str, chat_id: str) -> ResetResult:
        """Start a new conversation; the old items stay stored but leave every window."""
        _check_key(agent, chat_id)
        at = self._clock()
        previous = await self._store.reset(agent, chat_id, at)
        return ResetResult(at=at, previous_items=previous)

    async def check(self) -> None:
        """Health: the database answers."""
        await self._store.ping()


EMPTY_BELOW = 2**62  # an empty window's "first item id": every item is below it
MAX_NOTES = 10  # notes since the model last spoke, kept through a silence
NOTES_KEPT_S = 7 * 24 * 3600.0  # and none older than a week


class View(NamedTuple):
    """A chat's window, and how many of its items out of the window no summary covers."""

    window: Window
    unsummarized: int
    below: int  # the window's first item id: what is below it is archived (EMPTY_BELOW: all)


class Chosen(NamedTuple):
    item: Item
    cost: int  # tokens
    row_id: int
    at: float  # when it was stored


def select(
    rows: Sequence[Row], *, now: float, inactivity_s: float, max_tokens: int
) -> list[Chosen]:
    """The window from a chat's newest rows (newest first): items with their token costs."""
    if not rows:
        return []
    if now - rows[0].created_at > inactivity_s:
        return _notes_since(rows, now=now, max_tokens=max_tokens)
    newest_first: list[Chosen] = []
    budget = max_tokens
    newer_at = rows[0].created_at
    for row in rows:
        if newer_at - row.created_at > inactivity_s:
            break  # the silence before this row ended an earlier conversation
        newer_at = row.created_at
        try:
            item = responses.decode(row.body)
        except responses.BadItem as error:
            logger.warning("skipping malformed stored item %d: %s", row.id, error)
            continue
        cost = estimate(row.body)
        if cost > budget:
            break
        budget -= cost
        newest_first.append(Chosen(item, cost, row.id, row.created_at))
    chosen = newest_first[::-1]
    start = next(
        (i for i, c in enumerate(chosen) if responses.is_user_message(c.item)), len(chosen)
    )
    while start > 0 and responses.is_note(chosen[start - 1].item):
        start -= 1  # the notes told just before it (with no user message: the last ones)
    return _paired(chosen[start:])


def _notes_since(rows: Sequence[Row], *, now: float, max_tokens: int) -> list[Chosen]:
    """The notes told since the last item that was not one (rows newest first): the newest
    ``MAX_NOTES`` within ``NOTES_KEPT_S`` and the token budget, oldest first."""
    newest_first: list[Chosen] = []
    budget = max_tokens
    for row in rows[:MAX_NOTES]:
        if now - row.created_at > NOTES_KEPT_S:
            break
        try:
            item = responses.decode(row.body)
        except responses.BadItem as error:
            logger.warning("skipping malformed stored item %d: %s", row.id, error)
            continue
        cost = estimate(row.body)
        if not responses.is_note(item) or cost > budget:
            break
        budget -= cost
        newest_first.append(Chosen(item, cost, row.id, row.created_at))
    return newest_first[::-1]


def _paired(chosen: list[Chosen]) -> list[Chosen]:
    """Without calls whose output is missing, or outputs whose call is."""
    calls = {c.item["call_id"] for c in chosen if c.item["type"] == responses.FUNCTION_CALL}
    outputs = {
        c.item["call_id"] for c in chosen if c.item["type"] == responses.FUNCTION_CALL_OUTPUT
    }
    complete = calls & outputs
    return [
        c for c in chosen if c.item["type"] == responses.MESSAGE or c.item["call_id"] in complete
    ]


def _check_key(agent: str, chat_id: str) -> None:
    if not agent.strip():
        raise InvalidRequest("agent must not be empty.")
    if not chat_id.strip():
        raise InvalidRequest("chat_id must not be empty.")


def _limit(name: str, value: int | None, default: int, cap: int) -> int:
    if value is None:
        return default
    if not 1 <= value <= cap:
        raise InvalidRequest(f"{name} must be between 1 and {cap}, not {value}.")
    return value
