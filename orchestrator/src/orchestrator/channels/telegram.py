"""The Telegram channel: telegram-io's inbox in, dispatch, replies out, then ack.

    next_updates (long poll) ─► gate ─► per-chat queue ─► dispatch ─► send_message + ack

- The gate drops, silently and with a log line, anything not from an allowed user
  in their own private chat (chat id = user id; acked, so it is not handed over again).
- Turns are serial within a chat and concurrent across chats and agents; ``/stop``
  skips the queue and cancels the chat's running turn. How one update is answered:
  ``telegram_answer``.
- An update is acked only after its reply was sent: by the send (or a tap's last word)
  itself when nothing is left to do after it (``telegram_answer``), else here once it is
  handled (a reply with buttons recorded by message id, an update dropped or failed).
  Its lease is extended while this run works on it (``LeaseKeeper``). A crash before
  the ack means telegram-io hands it over again: at once to the next run of this
  consumer (``INBOX_CONSUMER``), or when its lease runs out; the reply's idempotency key
  (the update id) makes sure it is delivered once.
- An update handed over again while this process still works on it is ignored;
  one it has finished is acked again.
- Stopping (``Shutdown``, on SIGTERM/SIGINT): no new updates; running turns and taps get
  ``grace_s`` to finish; queued ones and what the grace cuts off stay unacked, for the
  next run.
- After a batch, the next long poll waits until the batch is handled, or
  ``repoll_after_s`` (50 ms) at the latest. Updates come at human pace, so it rarely
  has anything to fetch that soon; on a small machine its work (here and in
  telegram-io) would otherwise compete for the CPU with the replies and taps just
  started. A turn that runs longer (a model thinking) does not hold it back.
"""

from __future__ import annotations

import logging
import uuid
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable

import anyio
import anyio.abc

from meshkit.wire.telegram_io import InboxUpdate
from orchestrator.channels.telegram_answer import UpdateAnswerer
from orchestrator.channels.telegram_io import (
    TelegramIO,
    TelegramIOFailed,
    TelegramIOUnavailable,
    TelegramRefused,
    best_effort,
    command_of,
)
from orchestrator.channels.telegram_leases import LeaseKeeper
from orchestrator.channels.telegram_ready import go_live
from orchestrator.core.dispatch import Dispatcher, Reply
from orchestrator.core.routes import StatusLines
from orchestrator.core.runtime import AgentRuntime
from orchestrator.mesh.registry import Registry
from orchestrator.shutdown import Shutdown

logger = logging.getLogger(__name__)

FAILED_REPLY = "Something went wrong on my side and I could not answer that. Please try again."
DONE_MEMORY = 10_000  # update ids remembered as finished, to ack their redeliveries


class TelegramChannel:
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
        self._leases = LeaseKeeper(self._io, lambda: self._active)
        self._answerer = UpdateAnswerer(
            dispatcher,
            self._io,
            typing_after_s=typing_after_s,
            typing_every_s=typing_every_s,
            tap_answer_within_s=tap_answer_within_s,
            sleep=sleep,
        )
        self._grace_s = grace_s
        self._batch = batch
        self._wait_s = wait_s
        self._repoll_after_s = repoll_after_s
        self._turns = anyio.CapacityLimiter(max_turns)
        self._sleep = sleep
        self._say = say
        self._queues: dict[tuple[str, str], deque[InboxUpdate]] = {}
        self._active: set[str] = set()  # accepted and not let go (its lease is kept)
        self._running: set[str] = set()  # being answered right now
        self._stopping = anyio.Event()  # taking no more updates
        self._finished = anyio.Event()  # set (and replaced) whenever an update is let go
        self._done: OrderedDict[str, None] = OrderedDict()

    async def run(self, shutdown: Shutdown | None = None) -> None:
        """Announce the bots (NoBotCanRun when Telegram refused them all), then poll
        telegram-io and dispatch until cancelled or ``shutdown`` is requested; then let
        the running work finish (``grace_s`` at most) and return."""
        shutdown = shutdown or Shutdown()
        await go_live(self._io, self._dispatcher.agents, self._say, self._dispatcher.commands())
        async with anyio.create_task_group() as work:
            work.start_soon(self._leases.run, name="leases")
            async with anyio.create_task_group() as polling:
                polling.start_soon(self._poll, work, name="poll")
                await shutdown.requested.wait()
                polling.cancel_scope.cancel()
            await self._wind_down(shutdown)
            work.cancel_scope.cancel()

    async def _poll(self, tasks: anyio.abc.TaskGroup) -> None:
        delay = 0.5
        while True:
            try:
                batch = await self._io.next_updates(self._batch, self._wait_s)
            except TelegramIOFailed as error:
                logger.warning("telegram-io: next_updates failed (%s); retrying", error)
                await self._sleep(delay)
                delay = min(delay * 2, 10.0)
                continue
            delay = 0.5
            self._leases.leased_for(batch.lease_s)
            for update in batch.updates:
                await self._accept(update, tasks)
            if batch.updates:
                await self._settle({u.id for u in batch.updates})

    async def _wind_down(self, shutdown: Shutdown) -> None:
        """No new updates any more: queued ones stay for the next run, running ones get
        ``grace_s`` (or until ``shutdown`` is hurried); what is still running is cut."""
        self._stopping.set()
        self._active.intersection_update(self._running)  # the queued: left unacked
        if self._running:
            logger.info(
                "stopping: %d running turn(s) or tap(s) may take %g s more",
                len(self._running),
                self._grace_s,
            )
        async with anyio.create_task_group() as waiting:

            async def hurried() -> None:
                await shutdown.hurried.wait()
                waiting.cancel_scope.cancel()

            waiting.start_soon(hurried)
            with anyio.move_on_after(self._grace_s):
                while self._running:
                    await self._finished.wait()
            waiting.cancel_scope.cancel()
        if self._running:
            logger.warning(
                "stopped: %s cut short, left unacked for the next run",
                ", ".join(sorted(self._running)),
            )
        else:
            logger.info("stopped: nothing left running")

    async def _settle(self, uids: set[str]) -> None:
        """Until none of ``uids`` is being handled, ``repoll_after_s`` at the latest."""
        with anyio.move_on_after(self._repoll_after_s):
            while not uids.isdisjoint(self._active):
                await self._finished.wait()

    async def _accept(self, update: InboxUpdate, tasks: anyio.abc.TaskGroup) -> None:
        uid = update.id
        if uid in self._active:
            return  # a redelivery of what is being answered right now
        if uid in self._done:
            await self._ack(uid)
            return
        runtime = self._dispatcher.agents.get(update.agent)
        if runtime is None or update.chat_id is None or not _allowed(runtime, update):
            logger.info(
                "dropped update %s: agent=%s user=%s chat_type=%s (not allowed)",
                uid,
                update.agent,
                update.user_id,
                update.chat_type,
            )
            await self._finish(uid)
            return
        self._active.add(uid)
        if update.kind == "callback" or (
            update.kind == "text" and command_of(update.text or "") == "/stop"
        ):
            # Not behind the chat's queue: /stop must reach the running turn, and a tap is
            # answered at once even while a turn runs (pending-actions keeps taps atomic).
            self._running.add(uid)
            tasks.start_soon(self._handle_now, runtime, update)
            return
        key = (runtime.id, update.chat_id)
        queue = self._queues.get(key)
        if queue is not None:
            queue.append(update)  # its worker is running and takes it in turn
            return
        self._queues[key] = deque([update])
        tasks.start_soon(self._work, key, name=f"chat:{runtime.id}:{update.chat_id}")

    async def _work(self, key: tuple[str, str]) -> None:
        queue = self._queues[key]
        try:
            while queue and not self._stopping.is_set():
                update = queue[0]
                async with self._turns:
                    if self._stopping.is_set():
                        break  # stopped while it waited: left for the next run
                    self._running.add(update.id)
                    await self._handle_now(self._dispatcher.agents[key[0]], update)
                queue.popleft()
        finally:
            del self._queues[key]

    async def _handle_now(self, runtime: AgentRuntime, update: InboxUpdate) -> None:
        """Answer an accepted update (in ``_active`` since ``_accept``), then let it go.

        The boundary of one update: whatever goes wrong, the others go on."""
        uid = update.id
        try:
            acked = await self._answerer.answer(runtime, update)
            await self._finish(uid, acked=acked)
        except TelegramIOUnavailable as error:
            # Not acked: telegram-io hands it over again when the lease runs out.
            logger.warning("update %s: telegram-io failed (%s); left for redelivery", uid, error)
        except TelegramRefused as error:
            logger.warning("update %s: the reply was refused (%s); acked", uid, error)
            await self._finish(uid)
        except Exception:
            logger.exception("update %s: failed; acked so it does not come back forever", uid)
            if update.kind == "text":
                await best_effort(self._answerer.send(runtime.id, update, Reply(FAILED_REPLY)))
            await self._finish(uid)
        finally:
            self._active.discard(uid)
            self._running.discard(uid)
            self._finished.set()
            self._finished = anyio.Event()

    async def _finish(self, uid: str, *, acked: bool = False) -> None:
        """Done with ``uid``: acked (unless its reply's send did), and remembered as done so
        a redelivery is acked again rather than answered."""
        if not acked:
            await self._ack(uid)
        self._done[uid] = None
        while len(self._done) > DONE_MEMORY:
            self._done.popitem(last=False)

    async def _ack(self, uid: str) -> None:
        try:
            await self._io.ack(uid)
        except TelegramIOFailed as error:
            logger.warning("ack %s failed (%s); it will be handed over and acked again", uid, error)


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
