"""Notices: what a client's proposal asks of the orchestrator, handed over by long poll.

    stage_for_client ──queue (same transaction as the action)──► notices
    orchestrator ──next_notices(consumer, run, ack=[keys])──► leased notices
                 (handled ones acked with the next poll, in the transaction of the lease)

- ``show`` (key ``consent:<batch id>``): a pending batch to send with its buttons, under
  that key, the batch's message key: the only message its taps are taken from.
- ``execute`` (key ``done:<action id>``): an action the policy or a grant approved; it
  carries a Decision with an approval minted when the notice is leased, not when it was
  staged (the orchestrator may have been down for longer than a token lives).

A leased notice is handed to no one else until its lease runs out (``PENDING_NOTICE_LEASE_S``)
or the consumer starts a new run; not acked by then, it is handed out again. A notice with
nothing left to do (a batch no longer pending, an action no longer executing) is acked
instead of handed out. A waiting ``next_notices`` wakes as soon as a notice is queued.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import anyio

from mcp_pending_actions import grants, views
from mcp_pending_actions.rows import ActionRow, BatchRow, NoticeRow
from mcp_pending_actions.store import PendingStore, select_action, select_batch
from meshkit.proposals import ApprovalSigner
from meshkit.wire.pending_actions import Notice, Notices, State

MAX_WAIT_S = 25.0
_COLUMNS = "key, type, agent, chat_id, user_id, client, batch_id, action_id, created_at"


def show_key(batch_id: str) -> str:
    return f"consent:{batch_id}"


def done_key(action_id: str) -> str:
    return f"done:{action_id}"


def queue(db: sqlite3.Connection, notice: NoticeRow) -> None:
    """Queue a notice (once per key)."""
    db.execute(
        f"INSERT OR IGNORE INTO notices ({_COLUMNS}) VALUES ({', '.join('?' * 9)})",  # noqa: S608
        (
            notice.key,
            notice.type,
            notice.agent,
            notice.chat_id,
            notice.user_id,
            notice.client,
            notice.batch_id,
            notice.action_id,
            notice.created_at,
        ),
    )


def label(client: str) -> str:
    """A client's name as the user reads it: 'claude-desktop' → 'Claude Desktop'."""
    return " ".join(word.capitalize() for word in client.replace("_", "-").split("-") if word)


@dataclass(frozen=True)
class Leased:
    """A leased notice, with what it is about as read in the lease's transaction."""

    notice: NoticeRow
    batch: BatchRow | None
    actions: list[ActionRow]


class NoticeBoard:
    def __init__(
        self,
        store: PendingStore,
        signer: ApprovalSigner,
        *,
        lease_s: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._signer = signer
        self._lease_s = lease_s
        self._clock = clock
        self._queued = anyio.Event()
        self._stopping = False

    def queued(self) -> None:
        """A notice was queued: waiting ``next_notices`` calls look again now."""
        self._queued.set()
        self._queued = anyio.Event()

    def stop_waiting(self) -> None:
        """The server is stopping: waiting calls answer now."""
        self._stopping = True
        self._queued.set()

    async def next_notices(
        self, consumer: str, run: str, limit: int, wait_s: float, ack: Sequence[str] = ()
    ) -> Notices:
        """Ack ``ack``, then lease up to ``limit`` notices, waiting up to ``wait_s`` for one."""
        deadline = anyio.current_time() + min(wait_s, MAX_WAIT_S)
        acking = list(ack)  # acked with the first lease only
        while True:
            event = self._queued
            leased = await self._store.transact(
                partial(self._ack_and_lease, keys=acking, consumer=consumer, run=run, limit=limit)
            )
            acking = []
            left = deadline - anyio.current_time()
            if leased or left <= 0 or self._stopping:
                return Notices(notices=[self._notice(found) for found in leased])
            soonest = await self._store.read(_next_lease_end)
            if soonest is not None:
                left = min(left, max(0.05, soonest - self._clock()))
            with anyio.move_on_after(left):
                await event.wait()

    def _ack_and_lease(
        self, db: sqlite3.Connection, keys: list[str], consumer: str, run: str, limit: int
    ) -> list[Leased]:
        now = self._clock()
        _ack(db, keys, now)
        grants.sweep(
            db, now
        )  # a grant that ran out is in the ledger soon after, not only when read
        leased: list[Leased] = []
        while len(leased) < limit:
            rows = _leasable(db, consumer, run, now, limit - len(leased))
            if not rows:
                break
            for row in rows:
                found = _about(db, row, now)
                if found is None:  # nothing left to do: never handed out
                    _ack(db, [row.key], now)
                    continue
                db.execute(
                    "UPDATE notices SET holder = ?, run = ?, lease_until = ? WHERE key = ?",
                    (consumer, run, now + self._lease_s, row.key),
                )
                leased.append(found)
        return leased

    def _notice(self, found: Leased) -> Notice:
        row = found.notice
        notice = Notice(
            key=row.key,
            type="show" if row.type == "show" else "execute",
            agent=row.agent,
            chat_id=row.chat_id,
            user_id=row.user_id,
            client=row.client,
            client_label=label(row.client),
        )
        if row.type == "show" and found.batch is not None:
            return notice.model_copy(update={"batch": views.batch(found.batch, found.actions)})
        [action] = found.actions
        approval = self._signer.mint(
            action.action_id, action.server, action.kind, action.payload, agent=action.agent
        )
        decision = views.decision(action, ok=True, payload=action.payload, approval=approval)
        return notice.model_copy(update={"decision": decision})


def _about(db: sqlite3.Connection, row: NoticeRow, now: float) -> Leased | None:
    """What the notice is about, or None when it has nothing left to do (no action of the
    batch still waits for a tap, or the action is no longer executing)."""
    if row.type == "show":
        batch = select_batch(db, row.batch_id)
        actions = [] if batch is None else batch[1]
        live = [a for a in actions if a.state == State.PENDING and a.expires_at > now]
        if batch is None or not live:
            return None
        return Leased(row, batch[0], actions)
    action = select_action(db, row.action_id)
    if action is None or action.state != State.EXECUTING:
        return None
    return Leased(row, None, [action])


def _leasable(
    db: sqlite3.Connection, consumer: str, run: str, now: float, limit: int
) -> list[NoticeRow]:
    rows = db.execute(
        f"SELECT {_COLUMNS} FROM notices WHERE acked_at IS NULL"  # noqa: S608
        " AND (holder IS NULL OR lease_until <= ? OR (holder = ? AND run != ?))"
        " ORDER BY created_at, rowid LIMIT ?",
        (now, consumer, run, limit),
    ).fetchall()
    return [NoticeRow(*row) for row in rows]


def _ack(db: sqlite3.Connection, keys: list[str], now: float) -> None:
    db.executemany(
        "UPDATE notices SET acked_at = ? WHERE key = ? AND acked_at IS NULL",
        [(now, key) for key in keys],
    )


def _next_lease_end(db: sqlite3.Connection) -> float | None:
    (found,) = db.execute(
        "SELECT MIN(lease_until) FROM notices WHERE acked_at IS NULL AND holder IS NOT NULL"
    ).fetchone()
    return None if found is None else float(found)
