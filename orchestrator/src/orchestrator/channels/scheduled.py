"""The scheduler's due firings, handled like Telegram updates: leased, handled, sent, acked.

    scheduler.next_due (long poll) ─► Proactive.handle ─► telegram-io send_message
        (idempotency key: fire:<firing key>) ─► acked by the next next_due (``ack``)

A handled firing is acked with this consumer's next poll, the way a Kafka consumer
commits on poll: the scheduler marks it done in the transaction that leases the next
ones, so a firing costs no call of its own to ack. The long poll runs beside the handling:
a firing handled while a poll waits is acked by the poll after it, within ``wait_s`` (20 s;
its lease is 300 s). A firing still being handled is not acked.

A crash between sending and acking leaves the firing due: the next run of this consumer
gets it at once and sends it with the same key, which telegram-io delivers once. A crash
before sending sends it then. A firing that cannot be sent because telegram-io is down
is not acked: it comes back when its lease runs out. Firings are handled side by side
(``max_firings`` at once) while the long poll goes on: a reminder never waits for a
scheduled prompt's turn or a briefing. Stopping (``Shutdown``): no new firings; those
being handled get ``grace_s`` to finish; then the acks not yet sent go in one last
call (``ack``), so the next run does not redo them.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable

import anyio
import anyio.abc

from meshkit.wire.scheduler import Acked, Due, Firing, sent_under
from orchestrator.channels.telegram_io import (
    TelegramIO,
    TelegramIOUnavailable,
    TelegramRefused,
)
from orchestrator.core.dispatch import owner_of
from orchestrator.core.proactive import Proactive
from orchestrator.core.replies import Reply
from orchestrator.core.routes import Deliver
from orchestrator.mesh.errors import ToolCallError
from orchestrator.mesh.registry import Registry
from orchestrator.shutdown import Shutdown

logger = logging.getLogger(__name__)

MAX_ACKS = 100  # the most one call acks (the scheduler's bound)
FLUSH_S = 5.0  # the last call's bound, when stopping


class ScheduledChannel:
    def __init__(
        self,
        proactive: Proactive,
        registry: Registry,
        *,
        consumer: str = "orchestrator",
        run: str | None = None,
        wait_s: float = 20.0,
        grace_s: float = 20.0,
        max_firings: int = 8,
        sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
    ) -> None:
        self._proactive = proactive
        self._registry = registry
        self._run = run or uuid.uuid4().hex[:16]
        self._holder = {"consumer": consumer, "run": self._run}
        self._io = TelegramIO(registry, consumer=consumer, run=self._run)
        self._wait_s = wait_s
        self._grace_s = grace_s
        self._sleep = sleep
        self._polling = anyio.CancelScope()  # the long poll under way
        # Firings being handled or waiting for their ack (a lease run out: not again).
        self._handling: set[str] = set()
        self._acks: list[str] = []  # handled, to be acked by the next poll
        self._firings = anyio.CapacityLimiter(max_firings)

    async def run(self, shutdown: Shutdown) -> None:
        """Handle due firings until ``shutdown`` is requested."""
        server = self._proactive.server
        if server is None:
            return
        with anyio.CancelScope() as everything:
            async with anyio.create_task_group() as tasks:

                async def stop() -> None:
                    await shutdown.requested.wait()
                    self._polling.cancel()  # the firings being handled get the grace
                    with anyio.move_on_after(self._grace_s):
                        await shutdown.hurried.wait()
                    everything.cancel()

                tasks.start_soon(stop)
                async with anyio.create_task_group() as firings:
                    await self._poll(server, shutdown, firings)
                tasks.cancel_scope.cancel()
        await self._flush(server)

    async def _poll(self, server: str, shutdown: Shutdown, firings: anyio.abc.TaskGroup) -> None:
        delay = 0.5
        while not shutdown.requested.is_set():
            acks = self._acks[:MAX_ACKS]
            arguments = {**self._holder, "max": 10, "wait_s": self._wait_s}
            if acks:
                arguments["ack"] = acks
            with anyio.CancelScope() as self._polling:
                try:
                    due = await self._registry.call_as(server, "next_due", arguments, Due)
                except ToolCallError as error:
                    logger.warning("scheduler: next_due failed (%s); retrying", error)
                    await self._sleep(delay)
                    delay = min(delay * 2, 10.0)
                    continue
            if self._polling.cancelled_caught:
                return  # its acks, maybe not made: the flush makes them (once, by key)
            self._acked(acks)
            delay = 0.5
            for firing in due.firings:
                if shutdown.requested.is_set():
                    return  # left leased to this run: the next run takes it at once
                if firing.key not in self._handling:
                    self._handling.add(firing.key)
                    firings.start_soon(self._handle, firing, shutdown, name=firing.key)

    def _acked(self, keys: list[str]) -> None:
        for key in keys:
            self._acks.remove(key)
            self._handling.discard(key)

    async def _flush(self, server: str) -> None:
        """The acks no poll took, in one last call: the next run does not redo their turns."""
        with anyio.move_on_after(FLUSH_S):
            while acks := self._acks[:MAX_ACKS]:
                try:
                    await self._registry.call_as(server, "ack", {"keys": acks}, Acked)
                except ToolCallError as error:
                    logger.warning("ack of %d firing(s) failed (%s)", len(self._acks), error)
                    return
                self._acked(acks)

    async def _handle(self, firing: Firing, shutdown: Shutdown) -> None:
        done = False
        try:
            async with self._firings:
                if not shutdown.requested.is_set():  # else left leased, for the next run
                    done = await self._handle_now(firing)
        finally:
            if done:
                self._acks.append(firing.key)
            else:
                self._handling.discard(firing.key)

    async def _handle_now(self, firing: Firing) -> bool:
        """One firing, sent to its agent's owner; the boundary of one firing. True: it is
        done, to be acked."""
        try:
            await self._proactive.handle(firing, self._deliverer(firing))
        except TelegramIOUnavailable as error:
            logger.warning(
                "firing %s: telegram-io failed (%s); left for redelivery", firing.key, error
            )
            return False
        except TelegramRefused as error:
            logger.warning("firing %s: the message was refused (%s); acked", firing.key, error)
        except Exception:
            logger.exception(
                "firing %s: failed; acked so it does not come back forever", firing.key
            )
        logger.info("firing %s (%s) handled", firing.key, firing.kind)
        return True

    def _deliverer(self, firing: Firing) -> Deliver:
        runtime = self._proactive.runtime(firing.agent)
        owner = None if runtime is None else owner_of(runtime)

        key = sent_under(firing.key)

        async def send(reply: Reply) -> str | None:
            if owner is None or not reply.text:
                return None
            return await self._io.deliver(firing.agent, owner, reply, key)

        return Deliver(key, send)
