"""The inbox side: pollers fill it, ``next_updates`` leases from it, ``ack`` empties it.

The inbox is a ``meshkit.queue``. A leased update is handed to no one else until its lease
runs out (default 15 s); an update that is never acked is handed out again then, with
``deliveries`` counting up. A consumer that names itself and its run (the orchestrator
does) keeps what it works on by extending the leases (``extend_leases``, every few
seconds), and when it starts again the first ``next_updates`` of the new run releases what
the old run held: after a crash the update is handed out at once, not when its lease runs
out. Acked updates are kept two days so Telegram's resend of an unconfirmed
batch is still recognised.

A tap is handed out with ``message_key``, the idempotency key its message was sent under
(``sent_under``, the sender's record): buttons are bound to it before their message exists.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence

import anyio
from telegram import Update

from mcp_telegram_io.models import (
    AgentInbox,
    BotStatus,
    InboxUpdate,
    Status,
    Updates,
    normalize,
)
from mcp_telegram_io.poller import FAILING, Poller
from mcp_telegram_io.settings import TelegramIOSettings
from mcp_telegram_io.store import UPDATES, InboxStore
from meshkit.errors import ModelError
from meshkit.health import CheckFailed
from meshkit.params import MAX_ID
from meshkit.queue import Holder, LeasedQueue
from meshkit.storage import StorageFailed
from meshkit.wire.pause import Paused

logger = logging.getLogger(__name__)

PRUNE_EVERY_S = 3600.0
HAND_OVER_S = 0.05  # how long a poller lets a waiting reader go first
# (agent, chat id, message id) -> the key the message was sent under, if any
SentUnder = Callable[[str, str, int], Awaitable[str | None]]


class BadUpdateId(ModelError):
    pass


class BadHolder(ModelError):
    pass


class Inbox:
    def __init__(
        self,
        settings: TelegramIOSettings,
        store: InboxStore,
        *,
        clock: Callable[[], float] = time.time,
        hand_over_s: float = HAND_OVER_S,
        sent_under: SentUnder | None = None,
    ) -> None:
        self.pollers: dict[str, Poller] = {}
        self._sent_under = sent_under
        self._settings = settings
        self._hand_over_s = hand_over_s
        self._store = store
        self._clock = clock
        self._updates = LeasedQueue(store, UPDATES, lease_s=settings.lease_s, clock=clock)

    def stop_waiting(self) -> None:
        """The server is stopping: waiting ``next_updates`` calls answer now (with nothing
        new), so the shutdown does not wait for their long polls."""
        self._updates.stop_waiting()

    async def arrived(self, agent: str, updates: Sequence[Update]) -> None:
        """Wake the waiting ``next_updates`` (the poller has stored the updates), and let
        it hand them over before the poller calls Telegram again (``hand_over_s`` at most):
        the user waits on the first, nobody on the second."""
        await self._updates.wake(self._hand_over_s)

    async def next_updates(
        self, limit: int, wait_s: float, holder: Holder | None = None
    ) -> Updates:
        """Lease the oldest waiting updates, waiting up to ``wait_s`` for one; leased to
        ``holder`` (a new run of it first releases what its earlier runs held)."""
        batch = await self._updates.next(
            holder,
            limit,
            wait_s,
            lambda db, row, now: _normalized(*row, photo_max_side=self._settings.photo_max_side),
        )
        return Updates(
            updates=[await self._keyed(u) for u in batch.items], lease_s=self._updates.lease_s
        )

    async def _keyed(self, update: InboxUpdate) -> InboxUpdate:
        """A tap, with the key its message was sent under; any other update as it is."""
        if (
            update.kind != "callback"
            or update.chat_id is None
            or update.message_id is None
            or self._sent_under is None
        ):
            return update
        key = await self._sent_under(update.agent, update.chat_id, update.message_id)
        return update.model_copy(update={"message_key": key})

    async def extend(self, ids: Sequence[str], holder: Holder) -> int:
        """Keep the leases ``holder`` holds among ``ids`` for another lease time; how many."""
        return await self._updates.extend(_keys(ids), holder)

    async def ack(self, ids: Sequence[str]) -> int:
        return await self._updates.ack(_keys(ids))

    async def set_paused(self, agent: str, paused: bool) -> Paused:
        """Pause the agent: its updates are kept and handed to no one (those leased already
        are finished by their holder); or resume it: they are handed out, oldest first."""
        changed, waiting = await self._store.set_paused(agent, paused, self._clock())
        if changed:
            logger.info(
                "inbox: agent %s %s (%d update(s) waiting)",
                agent,
                "paused" if paused else "resumed",
                waiting,
            )
        if changed and not paused:
            self._updates.woken()  # a waiting reader takes them at once
        return Paused(agent=agent, paused=paused, changed=changed, waiting=waiting)

    async def status(self) -> Status:
        bots = [
            BotStatus(
                agent=agent,
                state=p.status.state,
                detail=p.status.detail,
                username=p.status.username,
            )
            for agent, p in self.pollers.items()
        ]
        return Status(
            bots=bots,
            pending=await self._store.pending(),
            parked=self._settings.kill_switch.exists(),
            readers=self._updates.readers,
            agents=[
                AgentInbox(
                    agent=a.agent,
                    paused=a.paused,
                    waiting=a.waiting,
                    last_update_at=a.last_update_at,
                )
                for a in await self._store.agents()
            ],
        )

    async def check_bots(self) -> None:
        """Health: fails naming each bot in conflict, unauthorized or parked."""
        failing = [
            f"{agent}: {p.status.state}"
            for agent, p in self.pollers.items()
            if p.status.state in FAILING
        ]
        if failing:
            raise CheckFailed("; ".join(failing))

    async def prune_forever(self) -> None:
        while True:
            try:
                removed = await self._store.prune(self._clock() - self._settings.keep_s)
            except StorageFailed:  # the store has said so; the next round tries again
                removed = 0
            if removed:
                logger.info("inbox: forgot %d old acked updates", removed)
            await anyio.sleep(PRUNE_EVERY_S)


def update_key(update: str) -> tuple[str, int]:
    """An update's 'id' ("<bot>:<update_id>") as the inbox's key."""
    bot, _, number = update.partition(":")
    # SQLite stores update ids as INTEGER: a larger number is no update id either.
    if not bot or not number.lstrip("-").isdigit() or abs(int(number)) > MAX_ID:
        raise BadUpdateId(f"{update!r} is not an update id; pass the 'id' fields of next_updates")
    return bot, int(number)


def _keys(ids: Sequence[str]) -> list[tuple[str, int]]:
    return [update_key(update) for update in ids]


def _normalized(
    agent: str, bot: str, update_id: int, body: str, deliveries: int, *, photo_max_side: int
) -> InboxUpdate:
    try:
        return normalize(agent, bot, update_id, body, deliveries, photo_max_side=photo_max_side)
    except (ValueError, TypeError, AttributeError):
        logger.warning(
            "inbox: update %s:%d could not be read; handed over as 'other'", bot, update_id
        )
        return InboxUpdate(
            id=f"{bot}:{update_id}",
            agent=agent,
            update_id=update_id,
            kind="other",
            deliveries=deliveries,
        )
