"""The scheduler's due firings, a source of the consumer (``consumer``): leased, handled,
sent, acked.

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

from meshkit.wire.scheduler import Acked, Due, Firing, sent_under
from orchestrator.channels.consumer import Batch, Consumer, Left, Source
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


class ScheduledChannel(Source[Firing, str]):
    """The scheduler's firings as a source of the consumer (``consumer``): keyed by their
    own key (side by side, ``max_firings`` at once), acked by the next poll."""

    name = "scheduler"
    failures = (ToolCallError,)
    max_acks = MAX_ACKS

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
        self._server = proactive.server or ""
        self._registry = registry
        self._run = run or uuid.uuid4().hex[:16]
        self._holder = {"consumer": consumer, "run": self._run}
        self._io = TelegramIO(registry, consumer=consumer, run=self._run)
        self._wait_s = wait_s
        self._consumer = Consumer(
            self, max_at_once=max_firings, grace_s=grace_s, repoll_after_s=0, sleep=sleep
        )

    async def run(self, shutdown: Shutdown) -> None:
        """Handle due firings until ``shutdown`` is requested."""
        if self._proactive.server is not None:
            await self._consumer.run(shutdown)

    async def poll(self, acks: list[str]) -> Batch[Firing]:
        arguments: dict[str, object] = {**self._holder, "max": 10, "wait_s": self._wait_s}
        if acks:
            arguments["ack"] = acks
        due = await self._registry.call_as(self._server, "next_due", arguments, Due)
        return Batch(due.firings)

    def id(self, item: Firing) -> str:
        return item.key

    async def flush(self, acks: list[str]) -> None:
        for start in range(0, len(acks), MAX_ACKS):
            keys = acks[start : start + MAX_ACKS]
            await self._registry.call_as(self._server, "ack", {"keys": keys}, Acked)

    async def handle(self, item: Firing) -> str:
        """One firing, sent to its agent's owner: its key, to be acked (Left: telegram-io
        did not answer, it comes back when its lease runs out)."""
        try:
            await self._proactive.handle(item, self._deliverer(item))
        except TelegramIOUnavailable as error:
            raise Left(f"telegram-io failed ({error})") from error
        except TelegramRefused as error:
            logger.warning("firing %s: the message was refused (%s); acked", item.key, error)
        except Exception:
            logger.exception("firing %s: failed; acked so it does not come back forever", item.key)
        logger.info("firing %s (%s) handled", item.key, item.kind)
        return item.key

    def _deliverer(self, firing: Firing) -> Deliver:
        runtime = self._proactive.runtime(firing.agent)
        owner = None if runtime is None else owner_of(runtime)

        key = sent_under(firing.key)

        async def send(reply: Reply) -> str | None:
            if owner is None or not reply.text:
                return None
            return await self._io.deliver(firing.agent, owner, reply, key)

        return Deliver(key, send)
