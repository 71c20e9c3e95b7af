"""Notices: what a client's proposal asks of the orchestrator, handed over by long poll.

    stage_for_client ──queue (same transaction as the action)──► notices
    orchestrator ──next_notices(consumer, run, ack=[keys], undelivered=[…])──► leased notices
                 (the last poll's outcomes recorded in the transaction of the lease)

- ``show`` (key ``consent:<batch id>``): a pending batch to send with its buttons, under
  that key, the batch's message key: the only message its taps are taken from. Until the
  notice is first handed out, the same client's next proposals for the same user join its
  batch (``open_batch``, read in the staging's transaction); from then on the batch never
  grows, so its message shows every action a tap on it may decide.
- ``execute`` (key ``done:<action id>``): an action the policy or a grant approved; it
  carries a Decision with an approval minted when the notice is leased, not when it was
  staged (the orchestrator may have been down for longer than a token lives).

Pace: a chat gets at most one show notice per ``PENDING_NOTICE_INTERVAL_S``: one that comes
sooner after the chat's last waits (``not_before``), and the client's proposals made
meanwhile join it, to be shown in one message with Confirm all.

Outcomes, reported with the next poll: ``ack`` (delivered: a show notice records
``shown_at``, what ``action_status`` reports), or ``undelivered`` with the reason: tried
again after ``PENDING_NOTICE_RETRY_S``, doubled at each failure up to
``PENDING_NOTICE_RETRY_MAX_S`` (telegram-io down, Telegram rate limits), or, ``final``, never
(the chat is not found, the user blocked the bot): a show notice's pending actions fail with
the reason, each in the ledger. Nothing is dropped unsaid.

The notices are a ``meshkit.queue`` (``NOTICES``): a leased notice is handed to no one else
until its lease runs out (``PENDING_NOTICE_LEASE_S``) or the consumer starts a new run (the
old one is fenced); not acked by then, it is handed out again. A notice with nothing left
to do (a batch no longer pending, an action no longer executing) is acked instead of handed
out. A waiting ``next_notices`` wakes as soon as a notice is queued, or one waiting for its
time may go.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mcp_pending_actions import grants, ledger, views
from mcp_pending_actions.rows import ActionRow, BatchRow, NoticeRow
from mcp_pending_actions.store import PendingStore, fail_unshown, select_action, select_batch
from meshkit.proposals import ApprovalSigner
from meshkit.queue import Holder, LeasedQueue, QueueSpec, put
from meshkit.text import readable
from meshkit.wire.pending_actions import Notice, Notices, State, Undelivered

_COLUMNS = "key, type, agent, chat_id, user_id, client, batch_id, action_id, created_at"
_READ = f"{_COLUMNS}, handed_at"
NOTICES = QueueSpec(
    table="notices",
    key=("key",),
    columns=_READ,
    order=("created_at", "rowid"),
    noun="notices",
    done="acked_at = :now, shown_at = CASE WHEN type = 'show' THEN :now END",  # delivered
    ready="not_before IS NULL OR not_before <= :now",
    leased="handed_at = COALESCE(handed_at, :now)",
)


def show_key(batch_id: str) -> str:
    return f"consent:{batch_id}"


def done_key(action_id: str) -> str:
    return f"done:{action_id}"


def queue(db: sqlite3.Connection, notice: NoticeRow) -> None:
    """Queue a notice (once per key)."""
    put(db, NOTICES, {name: getattr(notice, name) for name in _COLUMNS.split(", ")})


def open_batch(db: sqlite3.Connection, agent: str, chat_id: str, client: str) -> str | None:
    """The batch of the client's show notice for the chat not handed out yet: a proposal
    the client makes now joins it (None: none, a new batch)."""
    found = db.execute(
        "SELECT batch_id FROM notices WHERE agent = ? AND chat_id = ? AND type = 'show'"
        " AND handed_at IS NULL AND client = ? AND acked_at IS NULL"
        " ORDER BY created_at DESC, rowid DESC LIMIT 1",
        (agent, chat_id, client),
    ).fetchone()
    return None if found is None else str(found[0])


@dataclass(frozen=True)
class Delivery:
    """How a client's proposal fares on its way to the user's chat."""

    shown_at: float | None  # when its message reached the chat
    not_shown: str | None  # while not shown: why the last try failed


def delivery(db: sqlite3.Connection, batch_id: str) -> Delivery:
    """The delivery of the batch's show notice (none: no notice, nothing to say)."""
    found = db.execute(
        "SELECT shown_at, last_error FROM notices WHERE key = ? AND type = 'show'",
        (show_key(batch_id),),
    ).fetchone()
    if found is None:
        return Delivery(None, None)
    shown_at, last_error = found
    return Delivery(shown_at, None if shown_at is not None else last_error)


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
        interval_s: float = 0.0,
        retry_s: float = 2.0,
        retry_max_s: float = 300.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``interval_s``: a chat's show notices at most this often; ``retry_s`` and
        ``retry_max_s``: the first and the longest wait before an undelivered notice is
        handed out again."""
        self._queue = LeasedQueue(store, NOTICES, lease_s=lease_s, clock=clock)
        self._signer = signer
        self._interval_s = interval_s
        self._retry_s = retry_s
        self._retry_max_s = retry_max_s

    def queued(self) -> None:
        """A notice was queued: waiting ``next_notices`` calls look again now."""
        self._queue.woken()

    def stop_waiting(self) -> None:
        """The server is stopping: waiting calls answer now."""
        self._queue.stop_waiting()

    async def next_notices(  # noqa: PLR0917 (the tool's parameters)
        self,
        consumer: str,
        run: str,
        limit: int,
        wait_s: float,
        ack: Sequence[str] = (),
        undelivered: Sequence[Undelivered] = (),
    ) -> Notices:
        """Record ``ack`` (delivered) and ``undelivered``, then lease up to ``limit``
        notices, waiting up to ``wait_s`` for one."""
        failed = list(undelivered)  # recorded with the first lease only

        def settle(db: sqlite3.Connection, now: float) -> None:
            for report in failed:
                self._undelivered(db, report, now)
            failed.clear()
            grants.sweep(db, now)  # a grant that ran out is in the ledger soon after

        batch = await self._queue.next(
            Holder(consumer, run),
            limit,
            wait_s,
            self._hand,
            ack=ack,
            before=settle,
            wake_at=_not_before,
        )
        return Notices(notices=[self._notice(found) for found in batch.items])

    def _hand(self, db: sqlite3.Connection, read: tuple[Any, ...], now: float) -> Leased | None:
        """What the notice is about, to hand out now; None: acked (nothing left to do), or
        paced (the chat had one just now)."""
        row = NoticeRow(*read)
        found = _about(db, row, now)
        if found is None:
            db.execute("UPDATE notices SET acked_at = ? WHERE key = ?", (now, row.key))
            return None
        paced = self._paced_until(db, row)
        if paced is not None and paced > now:
            db.execute("UPDATE notices SET not_before = ? WHERE key = ?", (paced, row.key))
            return None
        return found

    def _paced_until(self, db: sqlite3.Connection, row: NoticeRow) -> float | None:
        """When a show notice never handed out may go: ``interval_s`` after the chat's last
        (None: at once)."""
        if row.type != "show" or row.handed_at is not None:
            return None
        (last,) = db.execute(
            "SELECT MAX(handed_at) FROM notices WHERE agent = ? AND chat_id = ? AND type = 'show'",
            (row.agent, row.chat_id),
        ).fetchone()
        return None if last is None else float(last) + self._interval_s

    def _undelivered(self, db: sqlite3.Connection, report: Undelivered, now: float) -> None:
        """A notice the orchestrator could not bring to its chat: tried again after a
        backoff, or, final, never (a show notice's pending actions fail, saying why)."""
        found = db.execute(
            f"SELECT {_READ}, tries FROM notices WHERE key = ? AND acked_at IS NULL",  # noqa: S608
            (report.key,),
        ).fetchone()
        if found is None:
            return
        row, tries = NoticeRow(*found[:-1]), int(found[-1]) + 1
        if not report.final:
            wait = min(self._retry_s * 2 ** min(tries - 1, 30), self._retry_max_s)
            db.execute(
                "UPDATE notices SET holder = NULL, run = NULL, lease_until = NULL,"
                " not_before = ?, tries = ?, last_error = ? WHERE key = ?",
                (now + wait, tries, report.reason, row.key),
            )
            return
        db.execute(
            "UPDATE notices SET acked_at = ?, tries = ?, last_error = ? WHERE key = ?",
            (now, tries, report.reason, row.key),
        )
        if row.type == "show":
            why = f"Never shown to the user, so nothing was changed: {report.reason}"
            for failed in fail_unshown(db, row.batch_id, now, why):
                ledger.append(db, ledger.about(failed, "failed", now, outcome=why))

    def _notice(self, found: Leased) -> Notice:
        row = found.notice
        notice = Notice(
            key=row.key,
            type="show" if row.type == "show" else "execute",
            agent=row.agent,
            chat_id=row.chat_id,
            user_id=row.user_id,
            client=row.client,
            client_label=readable(row.client),
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


def _not_before(db: sqlite3.Connection, now: float) -> float | None:
    """The soonest a paced or undelivered notice may go."""
    (found,) = db.execute(
        "SELECT MIN(not_before) FROM notices WHERE acked_at IS NULL AND not_before > ?", (now,)
    ).fetchone()
    return None if found is None else float(found)
