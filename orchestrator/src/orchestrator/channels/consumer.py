"""One consumer of a leased queue: poll, hand each item to its handler, ack.

    source.poll(acks) (long poll; carries the acks queued since the last one)
        ─► per key: one at a time, in order; across keys side by side (``max_at_once``);
           an urgent item (key None: a tap, /stop) at once, ahead of its key's queue
        ─► source.handle(item) ─► None: acked by the send of its reply
                                └► an ack: queued, carried by the next poll
                                └► Left: not acked, handed over again

The Telegram inbox, the scheduler's firings and pending-actions' notices are its sources
(``telegram``, ``scheduled``, ``consent``): each says how to poll, key, handle and ack.

- An ack is either carried by the reply's send or queued for the next poll: nothing else.
- What this run holds (items being handled, items whose ack waits for the poll) keeps its
  lease: every third of the lease time the source extends it (a source whose leases
  outlast any handling says a lease time of 0, and nothing is extended). A run that dies
  stops extending; its items come back.
- An item handed over again while it is held is ignored; with ``remember_done``, one
  finished lately has its ack queued again rather than being handled twice.
- After a batch, the next poll waits until the batch is handled, or ``repoll_after_s`` at
  the latest (0: at once, beside the handling).
- A poll that fails is tried again after a backoff (0.5 s, doubling, 10 s at most).
- Stopping (``Shutdown``): no new polls; queued items stay unacked for the next run; the
  items being handled get ``grace_s`` (a second signal cuts it short); then the acks no
  poll took go in one last call (``flush``, ``FLUSH_S`` at most).
"""

from __future__ import annotations

import itertools
import logging
import math
from abc import ABC, abstractmethod
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

import anyio
import anyio.abc

from orchestrator.shutdown import Shutdown

logger = logging.getLogger(__name__)

T = TypeVar("T")  # an item of the queue
A = TypeVar("A")  # what acks one (its id, or a report)
FLUSH_S = 5.0  # the last call's bound, when stopping
SHORTEST_EXTEND_S = 0.2  # however short the lease, not extended more often than this


class Left(Exception):
    """Not done: left unacked, handed over again (at once to this consumer's next run, else
    when its lease runs out)."""


@dataclass(frozen=True)
class Batch(Generic[T]):
    items: list[T]
    lease_s: float = 0.0  # how long each is leased (0: no need to extend)


class Source(ABC, Generic[T, A]):
    """A queue and its handler: how to poll, key, handle and ack."""

    name = "queue"
    failures: tuple[type[Exception], ...] = ()  # a poll failing so is tried again
    max_acks = 1000  # the most one poll carries

    @abstractmethod
    async def poll(self, acks: list[A]) -> Batch[T]:
        """The next items (a long poll), the ``acks`` made in the same call."""

    @abstractmethod
    def id(self, item: T) -> str: ...

    def key(self, item: T) -> Hashable | None:
        """The items of one key are handled one at a time, in order; None: at once. By
        default an item's id: each item its own key, handled side by side."""
        return self.id(item)

    @abstractmethod
    async def handle(self, item: T) -> A | None:
        """Handle ``item``: None when its reply's send acked it, else its ack, for the next
        poll; raise :class:`Left` to leave it unacked. The boundary of one item."""

    @abstractmethod
    async def flush(self, acks: list[A]) -> None:
        """The last acks, when stopping: nothing new is taken."""

    async def extend(self, ids: list[str]) -> None:
        """Keep the leases of ``ids`` (a source whose leases need it)."""

    def ack(self, item: T) -> A:
        """The ack of an item finished lately and handed over again (``remember_done``)."""
        raise NotImplementedError


class Consumer(Generic[T, A]):
    def __init__(
        self,
        source: Source[T, A],
        *,
        max_at_once: int = 16,
        grace_s: float = 20.0,
        repoll_after_s: float = math.inf,
        remember_done: int = 0,
        sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
    ) -> None:
        self._source = source
        self._limit = anyio.CapacityLimiter(max_at_once)
        self._grace_s = grace_s
        self._repoll_after_s = repoll_after_s
        self._remember_done = remember_done
        self._sleep = sleep
        self._queues: dict[Hashable, deque[T]] = {}
        self._working: set[str] = set()  # accepted, not finished
        self._running: set[str] = set()  # being handled right now
        self._acks: dict[str, A] = {}  # id → its ack, for the next poll
        self._done: OrderedDict[str, None] = OrderedDict()  # finished lately
        self._stopping = anyio.Event()
        self._finished = anyio.Event()  # set (and replaced) whenever an item is finished
        self._lease_s = 0.0
        self._shorter = anyio.Event()  # the lease time turned out shorter

    async def run(self, shutdown: Shutdown) -> None:
        """Consume until ``shutdown`` is requested; then the grace, and the last acks."""
        async with anyio.create_task_group() as work:
            work.start_soon(self._keep_leases, name=f"{self._source.name}:leases")
            async with anyio.create_task_group() as polling:
                polling.start_soon(self._poll, work, name=f"{self._source.name}:poll")
                await shutdown.requested.wait()
                polling.cancel_scope.cancel()
            await self._wind_down(shutdown)
            work.cancel_scope.cancel()
        await self._flush()

    async def _poll(self, tasks: anyio.abc.TaskGroup) -> None:
        delay = 0.5
        while True:
            acks = dict(itertools.islice(self._acks.items(), self._source.max_acks))
            try:
                batch = await self._source.poll(list(acks.values()))
            except self._source.failures as error:
                logger.warning("%s: the poll failed (%s); retrying", self._source.name, error)
                await self._sleep(delay)
                delay = min(delay * 2, 10.0)
                continue
            delay = 0.5
            self._acked(acks)
            self._leased_for(batch.lease_s)
            for item in batch.items:
                self._accept(item, tasks)
            ids = {self._source.id(item) for item in batch.items}
            with anyio.move_on_after(self._repoll_after_s if ids else 0):
                while not ids.isdisjoint(self._working):
                    await self._finished.wait()

    def _accept(self, item: T, tasks: anyio.abc.TaskGroup) -> None:
        uid = self._source.id(item)
        if uid in self._working or uid in self._acks:
            return  # handed over again while this run holds it
        if uid in self._done:
            self._acks[uid] = self._source.ack(item)  # finished lately: acked again
            return
        self._working.add(uid)
        key = self._source.key(item)
        if key is None:  # ahead of any queue (a tap, /stop)
            self._running.add(uid)
            tasks.start_soon(self._handle, item, name=f"{self._source.name}:{uid}")
            return
        queue = self._queues.get(key)
        if queue is not None:
            queue.append(item)  # its worker is running and takes it in turn
            return
        self._queues[key] = deque([item])
        tasks.start_soon(self._work, key, name=f"{self._source.name}:{key}")

    async def _work(self, key: Hashable) -> None:
        queue = self._queues[key]
        try:
            while queue and not self._stopping.is_set():
                async with self._limit:
                    if self._stopping.is_set():
                        break  # stopped while it waited: left for the next run
                    self._running.add(self._source.id(queue[0]))
                    await self._handle(queue[0])
                queue.popleft()
        finally:
            del self._queues[key]

    async def _handle(self, item: T) -> None:
        uid = self._source.id(item)
        try:
            ack = await self._source.handle(item)
        except Left as error:
            logger.warning("%s %s: left for redelivery (%s)", self._source.name, uid, error)
        except Exception:  # a handler's own boundary missed it: left, the others go on
            logger.exception("%s %s: failed; left for redelivery", self._source.name, uid)
        else:
            if ack is not None:
                self._acks[uid] = ack
            if self._remember_done:
                self._done[uid] = None
                while len(self._done) > self._remember_done:
                    self._done.popitem(last=False)
        finally:
            self._working.discard(uid)
            self._running.discard(uid)
            self._finished.set()
            self._finished = anyio.Event()

    def _acked(self, acks: dict[str, A]) -> None:
        for uid in acks:
            self._acks.pop(uid, None)

    async def _wind_down(self, shutdown: Shutdown) -> None:
        """No new items: queued ones stay for the next run, running ones get ``grace_s``
        (or until ``shutdown`` is hurried); what still runs then is cut."""
        self._stopping.set()
        self._working.intersection_update(self._running)  # the queued: left unacked
        name = self._source.name
        if self._running:
            logger.info(
                "%s: stopping, %d running may take %g s", name, len(self._running), self._grace_s
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
            cut = ", ".join(sorted(self._running))
            logger.warning("%s: stopped: %s cut short, left unacked", name, cut)

    async def _flush(self) -> None:
        """The acks no poll took, in one last call: the next run does not redo them."""
        if not self._acks:
            return
        acks = dict(self._acks)
        with anyio.move_on_after(FLUSH_S):
            try:
                await self._source.flush(list(acks.values()))
            except self._source.failures as error:
                logger.warning(
                    "%s: %d last ack(s) failed (%s)", self._source.name, len(acks), error
                )
                return
            self._acked(acks)

    def _leased_for(self, lease_s: float) -> None:
        if lease_s > 0 and lease_s != self._lease_s:
            if self._lease_s == 0 or lease_s < self._lease_s:
                self._shorter.set()  # the round under way would come too late
            self._lease_s = lease_s

    async def _keep_leases(self) -> None:
        """Extend the leases of what this run holds, every third of the lease time."""
        while True:
            every = max(SHORTEST_EXTEND_S, self._lease_s / 3) if self._lease_s else math.inf
            with anyio.move_on_after(every):
                await self._shorter.wait()
            self._shorter = anyio.Event()
            held = sorted(self._working | self._acks.keys())
            if not held:
                continue
            try:
                await self._source.extend(held)
            except self._source.failures as error:  # the next round tries again, in time
                logger.warning(
                    "%s: extending %d lease(s) failed (%s)", self._source.name, len(held), error
                )
