"""meshkit.queue, by property: whatever the steps, on a real SQLite file.

A consumer takes batches (``next``, acks carried by the next call), handles what it got,
and may die at any step: its run is abandoned (what it handled and did not ack is lost
with it) and a new run starts; the store itself may be closed and reopened from its file.
Whatever the order, at the end every item put was handled at least once and is acked, no
item was handed out while an older one of its group waited, and a fenced run changed
nothing.
"""

from __future__ import annotations

import itertools
import sqlite3
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from meshkit.queue import RUNS_SCHEMA, Fenced, Holder, LeasedQueue, QueueSpec, put
from meshkit.sqlite import SQLiteStore

LEASE_S = 10.0
SPEC = QueueSpec(
    table="items",
    key=("key",),
    columns="key, grp, seq",
    order=("seq",),
    group="grp",
)


class Items(SQLiteStore):
    SCHEMA = (
        "CREATE TABLE IF NOT EXISTS items (key TEXT PRIMARY KEY, grp TEXT, seq INTEGER NOT NULL,"
        " holder TEXT, run TEXT, lease_until REAL, acked_at REAL);" + RUNS_SCHEMA
    )


@dataclass
class Clock:
    now: float = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class World:
    """The file, the queue over it, the consumer's current run and what it holds."""

    path: Path
    clock: Clock = field(default_factory=Clock)
    runs: itertools.count[int] = field(default_factory=itertools.count)
    put: list[str] = field(default_factory=list)
    handled: set[str] = field(default_factory=set)  # by any run, at least once
    unacked: list[str] = field(default_factory=list)  # handled by this run, ack not yet made
    leased: list[str] = field(default_factory=list)  # leased to this run, not handled yet
    started: bool = False  # this run has called next: it is its consumer's current run
    store: Items = field(init=False)
    queue: LeasedQueue = field(init=False)
    holder: Holder = field(init=False)

    def __post_init__(self) -> None:
        self.open()
        self.new_run()

    def open(self) -> None:
        self.store = Items(self.path)
        self.store.verify()  # created now, so rows() reads a table from the first step
        self.queue = LeasedQueue(self.store, SPEC, lease_s=LEASE_S, clock=self.clock)

    def new_run(self) -> Holder:
        old = getattr(self, "holder", None)
        self.holder = Holder("consumer", f"run-{next(self.runs)}")
        self.unacked, self.leased, self.started = [], [], False
        return old or self.holder

    def rows(self) -> list[tuple[Any, ...]]:
        with sqlite3.connect(self.path) as db:
            return db.execute("SELECT * FROM items ORDER BY key").fetchall()

    def acked(self) -> set[str]:
        with sqlite3.connect(self.path) as db:
            return {k for (k,) in db.execute("SELECT key FROM items WHERE acked_at IS NOT NULL")}


def convert(db: sqlite3.Connection, row: tuple[Any, ...], _now: float) -> str:
    """Leased: no older item of its group waits (order per key, one at a time)."""
    key, group, seq = row
    older = db.execute(
        "SELECT COUNT(*) FROM items WHERE grp = ? AND seq < ? AND acked_at IS NULL", (group, seq)
    ).fetchone()[0]
    assert older == 0, f"{key} handed out while an older item of group {group} waits"
    return str(key)


async def take(world: World, limit: int) -> None:
    batch = await world.queue.next(world.holder, limit, 0, convert, ack=world.unacked)
    world.unacked, world.started = [], True
    world.leased += batch.items


async def step(world: World, action: tuple[str, int]) -> None:
    name, n = action
    if name == "put":  # a new item of group n, then the same key again: ignored
        key, seq = f"item-{len(world.put)}", len(world.put)
        assert await world.store.transact(
            lambda db: put(db, SPEC, {"key": key, "grp": f"g{n}", "seq": seq})
        )
        assert not await world.store.transact(
            lambda db: put(db, SPEC, {"key": key, "grp": "other", "seq": -1})
        )
        world.put.append(key)
    elif name == "next":
        await take(world, n)
    elif name == "handle":
        done, world.leased = world.leased[:n], world.leased[n:]
        world.handled.update(done)
        world.unacked += done
    elif name == "extend":
        await world.queue.extend(world.leased + world.unacked, world.holder)
    elif name == "ack":
        await world.queue.ack(world.unacked, world.holder)
        world.unacked = []
    elif name == "kill":  # the consumer dies: what it held and did not ack is its next run's
        started = world.started
        old = world.new_run()
        await take(world, 1)  # the new run's first call fences the old one
        if not started:
            return  # a run never seen is no run to fence
        fenced = world.rows()
        with pytest.raises(Fenced):  # the old run, had it not died after all
            await world.queue.next(old, 5, 0, convert, ack=[k for k, *_ in fenced])
        assert await world.queue.ack([k for k, *_ in fenced], old) == 0
        assert await world.queue.extend([k for k, *_ in fenced], old) == 0
        assert world.rows() == fenced  # the fenced run changed nothing
    elif name == "reopen":  # the process stops: the store closed, opened again from its file
        await world.store.aclose()
        world.open()
    elif name == "expire":
        world.clock.now += LEASE_S + 1


async def drain(world: World) -> None:
    """The consumer runs to the end: takes, handles and acks until nothing is left."""
    for _ in range(len(world.put) * 3 + 3):
        await take(world, 10)
        if not world.leased and not world.unacked:
            break
        world.handled.update(world.leased)
        world.unacked += world.leased
        world.leased = []
        world.clock.now += 1
    await world.queue.ack(world.unacked, world.holder)


STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("put"), st.integers(0, 2)),
        st.tuples(st.sampled_from(["next", "handle"]), st.integers(1, 4)),
        st.tuples(st.sampled_from(["extend", "ack", "kill", "reopen", "expire"]), st.just(0)),
    ),
    max_size=30,
)


@settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=STEPS)
def test_every_item_is_handled_at_least_once_in_order_per_key_whatever_dies_when(
    steps: list[tuple[str, int]], tmp_path: Path
) -> None:
    world = World(Path(tempfile.mkdtemp(dir=tmp_path)) / "queue.sqlite3")

    async def scenario() -> None:
        try:
            for action in steps:
                await step(world, action)
            await drain(world)
        finally:
            await world.store.aclose()

    anyio.run(scenario)

    assert world.handled == set(world.put)  # at least once, nothing lost
    assert world.acked() == set(world.put)


def test_a_waiting_next_answers_as_soon_as_an_item_is_put(tmp_path: Path) -> None:
    world = World(tmp_path / "queue.sqlite3")

    async def scenario() -> list[str]:
        got: list[str] = []

        async def wait() -> None:
            batch = await world.queue.next(world.holder, 5, 20, convert)
            got.extend(batch.items)

        try:
            with anyio.fail_after(5):
                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(wait)
                    await world.store.transact(
                        lambda db: put(db, SPEC, {"key": "k", "grp": "g", "seq": 1})
                    )
                    await world.queue.wake(hand_over_s=5)
        finally:
            await world.store.aclose()
        return got

    assert anyio.run(scenario) == ["k"]
