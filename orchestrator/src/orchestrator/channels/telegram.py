"""The Telegram channel: telegram-io's inbox in, dispatch, replies out; a source of the
consumer (``consumer``), which polls, orders, keeps the leases and stops.

    next_updates (long poll) ─► gate ─► per-chat queue ─► dispatch ─► send_message + ack

- The gate drops, silently and with a log line, anything not from an allowed user
  in their own private chat (chat id = user id; acked, so it is not handed over again).
- Turns are serial within a chat and concurrent across chats and agents (``max_turns``);
  a tap and ``/stop`` skip the queue (``/stop`` cancels the chat's running turn). How one
  update is answered: ``telegram_answer``.
- An update is acked by the send that answers it (a reply, a tap's last word), else
  (dropped, ignored, refused, cut short by /stop) by the next poll: telegram-io's
  next_updates takes no acks, so the poll acks them in a call just before it. A crash
  before the ack means telegram-io hands it over again: at once to the next run of this
  consumer (``INBOX_CONSUMER``), or when its lease runs out; the reply's idempotency key
  (the update id) makes sure it is delivered once, and one finished lately is acked again
  rather than answered twice.
- After a batch, the next long poll waits until the batch is handled, or
  ``repoll_after_s`` (50 ms) at the latest. Updates come at human pace, so it rarely
  has anything to fetch that soon; on a small machine its work (here and in
  telegram-io) would otherwise compete for the CPU with the replies and taps just
  started. A turn that runs longer (a model thinking) does not hold it back.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable

import anyio

from meshkit.wire.telegram_io import InboxUpdate
from orchestrator.channels.consumer import Batch, Consumer, Left, Source
from orchestrator.channels.telegram_answer import UpdateAnswerer
from orchestrator.channels.telegram_io import (
    TelegramIO,
    TelegramIOFailed,
    TelegramIOUnavailable,
    TelegramRefused,
    command_of,
)
from orchestrator.channels.telegram_media import MEDIA_LIMITS, MediaLimits, MediaReader
from orchestrator.channels.telegram_ready import go_live
from orchestrator.channels.telegram_stream import STREAMED, StreamPace
from orchestrator.core.dispatch import Dispatcher, Reply
from orchestrator.core.routes import StatusLines
from orchestrator.core.runtime import AgentRuntime
from orchestrator.llm.base import Transcriber
from orchestrator.mesh.registry import Registry
from orchestrator.shutdown import Shutdown

logger = logging.getLogger(__name__)

FAILED_REPLY = "Something went wrong on my side and I could not answer that. Please try again."
DONE_MEMORY = 10_000  # update ids remembered as finished, to ack their redeliveries


class TelegramChannel(Source[InboxUpdate, str]):
    name = "telegram-io"
    failures = (TelegramIOFailed,)

    def __init__(
        self,
        dispatcher: Dispatcher,
        registry: Registry,
        *,
        batch: int = 20,
        wait_s: float = 20.0,
        typing_after_s: float = 0.3,
        typing_every_s: float = 4.0,
        tap_answer_within_s: float = 3.0,
        pace: StreamPace | None = STREAMED,
        transcriber: Transcriber | None = None,
        media: MediaLimits = MEDIA_LIMITS,
        repoll_after_s: float = 0.05,
        max_turns: int = 16,
        consumer: str = "orchestrator",
        run: str | None = None,
        grace_s: float = 20.0,
        sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
        say: Callable[[str], None] = lambda line: print(line, flush=True),
    ) -> None:
        self._dispatcher = dispatcher
        # A new run id at each start: telegram-io then releases what the last run held.
        self._io = TelegramIO(registry, consumer=consumer, run=run or uuid.uuid4().hex[:16])
        self._answerer = UpdateAnswerer(
            dispatcher,
            self._io,
            typing_after_s=typing_after_s,
            typing_every_s=typing_every_s,
            tap_answer_within_s=tap_answer_within_s,
            reader=MediaReader(self._io, transcriber, limits=media, meter=dispatcher.meter),
            pace=pace,
            sleep=sleep,
        )
        self._batch = batch
        self._wait_s = wait_s
        self._say = say
        self._consumer = Consumer(
            self, max_at_once=max_turns, grace_s=grace_s, repoll_after_s=repoll_after_s,
            remember_done=DONE_MEMORY, sleep=sleep,
        )  # fmt: skip

    async def run(self, shutdown: Shutdown | None = None) -> None:
        """Announce the bots (NoBotCanRun when Telegram refused them all), then poll
        telegram-io and dispatch until ``shutdown`` is requested; then let the running
        work finish (``grace_s`` at most) and return."""
        await go_live(self._io, self._dispatcher.agents, self._say, self._dispatcher.commands())
        await self._consumer.run(shutdown or Shutdown())

    async def poll(self, acks: list[str]) -> Batch[InboxUpdate]:
        if acks:
            await self._io.ack(acks)
        batch = await self._io.next_updates(self._batch, self._wait_s)
        return Batch(batch.updates, batch.lease_s)

    async def flush(self, acks: list[str]) -> None:
        await self._io.ack(acks)

    async def extend(self, ids: list[str]) -> None:
        extended = await self._io.extend(ids)
        if extended < len(ids):
            # Acked meanwhile (fine), or a lease ran out and another consumer holds it.
            logger.info("extended %d of %d lease(s); the rest are let go", extended, len(ids))

    def id(self, item: InboxUpdate) -> str:
        return item.id

    def ack(self, item: InboxUpdate) -> str:
        return item.id

    def key(self, item: InboxUpdate) -> tuple[str, str] | None:
        """The chat's queue; None, at once: a tap, ``/stop`` (it must reach the running
        turn; a tap is answered even while a turn runs, pending-actions keeps taps atomic),
        or an update the gate drops."""
        runtime = self._runtime(item)
        if runtime is None or item.chat_id is None or item.kind == "callback":
            return None
        if item.kind == "text" and command_of(item.text or "") == "/stop":
            return None
        return (runtime.id, item.chat_id)

    async def handle(self, item: InboxUpdate) -> str | None:
        """Answer an update: None when its reply's send acked it, else its id, for the next
        poll. The boundary of one update: whatever goes wrong, the others go on."""
        uid, runtime = item.id, self._runtime(item)
        if runtime is None:
            logger.info(
                "dropped update %s: agent=%s user=%s chat_type=%s (not allowed)",
                uid, item.agent, item.user_id, item.chat_type,
            )  # fmt: skip
            return uid
        try:
            return None if await self._answerer.answer(runtime, item) else uid
        except TelegramIOUnavailable as error:  # handed over again when the lease runs out
            raise Left(f"telegram-io failed ({error})") from error
        except TelegramRefused as error:
            logger.warning("update %s: the reply was refused (%s); acked", uid, error)
            return uid
        except Exception:
            logger.exception("update %s: failed; acked so it does not come back forever", uid)
        if item.kind == "text":
            try:
                await self._answerer.send(runtime.id, item, Reply(FAILED_REPLY), ack=True)
                return None
            except TelegramIOFailed as error:
                logger.info("update %s: the failure could not be told (%s)", uid, error)
        return uid

    def _runtime(self, update: InboxUpdate) -> AgentRuntime | None:
        """The agent answering ``update``; None when the gate drops it."""
        runtime = self._dispatcher.agents.get(update.agent)
        if runtime is None or update.chat_id is None or not _allowed(runtime, update):
            return None
        return runtime


def inbox_status(registry: Registry) -> StatusLines:
    """The lines ``/status`` gets about the shared Telegram I/O: the inbox and every bot of
    the fleet (given to the dispatcher when the app builds it; reading the status takes no
    lease, so the holder named here never holds one)."""
    io = TelegramIO(registry, consumer="status", run="status")

    async def lines(_agent: str) -> list[str]:
        try:
            status = await io.status()
        except TelegramIOFailed:
            return ["Telegram inbox: unavailable"]
        bots = ", ".join(f"{b.agent} {b.state}" for b in status.bots)
        parked = " · PARKED (kill switch)" if status.parked else ""
        return [f"Telegram inbox: {status.pending} waiting · bots: {bots}{parked}"]

    return lines


def _allowed(runtime: AgentRuntime, update: InboxUpdate) -> bool:
    private = update.chat_type == "private" and update.chat_id == update.user_id  # their own
    return private and update.user_id in runtime.agent.entry.allowed_user_ids
