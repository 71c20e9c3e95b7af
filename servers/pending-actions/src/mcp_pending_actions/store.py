"""Batches, actions and their audit trail in SQLite: one file, one connection, WAL.

Tables:

    batches (batch_id, agent, chat_id, text, created_at, message_key)   one message's buttons;
             message_key: the idempotency key that message is sent under
    actions (action_id, batch_id, agent, chat_id, user_id, server, kind, summary, payload,
             confirm_label, cancel_label, state, created_at, expires_at, updated_at,
             result, error,                                payload and result are JSON text
             client, decided_by, decided_at, grant_s)      who proposed it, how it was decided
    events  (id, action_id, from_state, to_state, at, actor, detail)   every state change
    grants  (grant_id, agent, user_id, client, server, kind, started_at, until, summary,
             action_id, ended_at)                          see grants.py
    notices (key, type, agent, chat_id, user_id, client, batch_id, action_id, created_at,
             holder, run, lease_until, acked_at,           see notices.py
             handed_at, not_before, tries, last_error, shown_at)
    ledger, ledger_head                                    see ledger.py
    runs    (consumer, run, started_at, superseded_at)     the notices' consumers (meshkit.queue)

Schema 3 added the four columns of ``actions`` (rows from before are the chat's, ``client``
'chat') and the last four tables; the ledger starts with the first change after the upgrade.
Schema 4 added the last five columns of ``notices`` (delivery: when first handed out, not
before when, tries, why the last failed, when shown); schema 5 the ``runs`` table.

A batch is shown in one message: the one sent under its ``message_key``, given when it is
staged, before the message exists. A key binds one batch: a batch staged under a key
another batch holds takes it over (a turn redone after a crash replaces the first try's
buttons in the same message), and the other takes no tap any more. ``message_key`` came
after the other columns (schema 2): batches staged before it have none and take no tap;
the ``shown`` table of schema 1 (message ids recorded after the send) is no longer read.
Nothing is ever deleted. A state change is one conditional UPDATE and its event, in one IMMEDIATE
transaction: the UPDATE's rowcount says whether the change happened, so of two
writers that race for the same change exactly one wins. The service decides which changes
to ask for; this module only makes each one atomic.

Connection handling is meshkit's (``meshkit.sqlite``).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import asdict, replace
from typing import Any

from mcp_pending_actions import ledger
from mcp_pending_actions.ledger import Draft
from mcp_pending_actions.rows import ActionRow, BatchRow, Change, EventRow, Outcome
from meshkit.queue import RUNS_SCHEMA
from meshkit.sqlite import SQLiteStore
from meshkit.wire.pending_actions import State

NOTICES_3 = """
CREATE TABLE IF NOT EXISTS notices (
    key TEXT PRIMARY KEY,
    type TEXT NOT NULL,
    agent TEXT NOT NULL,
    chat_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    client TEXT NOT NULL,
    batch_id TEXT NOT NULL,
    action_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    holder TEXT,
    run TEXT,
    lease_until REAL,
    acked_at REAL
);"""
SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS batches (
    batch_id TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    chat_id TEXT NOT NULL,
    text TEXT,
    created_at REAL NOT NULL,
    message_key TEXT
);
CREATE INDEX IF NOT EXISTS batches_by_key ON batches (message_key)
    WHERE message_key IS NOT NULL;
CREATE TABLE IF NOT EXISTS actions (
    action_id TEXT PRIMARY KEY,
    batch_id TEXT NOT NULL REFERENCES batches (batch_id),
    agent TEXT NOT NULL,
    chat_id TEXT NOT NULL,
    user_id TEXT,
    server TEXT NOT NULL,
    kind TEXT NOT NULL,
    summary TEXT NOT NULL,
    payload TEXT NOT NULL,
    confirm_label TEXT NOT NULL,
    cancel_label TEXT NOT NULL,
    state TEXT NOT NULL,
    created_at REAL NOT NULL,
    expires_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    result TEXT,
    error TEXT,
    client TEXT NOT NULL DEFAULT 'chat',
    decided_by TEXT,
    decided_at REAL,
    grant_s INTEGER
);
CREATE INDEX IF NOT EXISTS actions_by_batch ON actions (batch_id);
CREATE INDEX IF NOT EXISTS actions_by_chat ON actions (agent, chat_id, state);
CREATE INDEX IF NOT EXISTS actions_by_expiry ON actions (state, expires_at);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    action_id TEXT NOT NULL REFERENCES actions (action_id),
    from_state TEXT,
    to_state TEXT NOT NULL,
    at REAL NOT NULL,
    actor TEXT,
    detail TEXT
);
CREATE INDEX IF NOT EXISTS events_by_action ON events (action_id, id);
CREATE TABLE IF NOT EXISTS grants (
    grant_id TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    user_id TEXT NOT NULL,
    client TEXT NOT NULL,
    server TEXT NOT NULL,
    kind TEXT NOT NULL,
    started_at REAL NOT NULL,
    until REAL NOT NULL,
    summary TEXT NOT NULL,
    action_id TEXT NOT NULL,
    ended_at REAL
);
CREATE INDEX IF NOT EXISTS grants_running ON grants (agent, user_id, ended_at, until);
CREATE TABLE IF NOT EXISTS notices (
    key TEXT PRIMARY KEY,
    type TEXT NOT NULL,
    agent TEXT NOT NULL,
    chat_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    client TEXT NOT NULL,
    batch_id TEXT NOT NULL,
    action_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    holder TEXT,
    run TEXT,
    lease_until REAL,
    acked_at REAL,
    handed_at REAL,
    not_before REAL,
    tries INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    shown_at REAL
);
CREATE INDEX IF NOT EXISTS notices_waiting ON notices (acked_at, created_at);
CREATE INDEX IF NOT EXISTS notices_by_chat ON notices (agent, chat_id, type, handed_at);
"""
    + ledger.SCHEMA
    + RUNS_SCHEMA
)
MIGRATIONS = {
    2: "ALTER TABLE batches ADD COLUMN message_key TEXT;",
    3: "ALTER TABLE actions ADD COLUMN client TEXT NOT NULL DEFAULT 'chat';"
    " ALTER TABLE actions ADD COLUMN decided_by TEXT;"
    " ALTER TABLE actions ADD COLUMN decided_at REAL;"
    " ALTER TABLE actions ADD COLUMN grant_s INTEGER;",
    # A file of schema 2 has no notices yet: made here as schema 3 made them, then given
    # the columns of schema 4.
    4: NOTICES_3  # noqa: S608 (constant text)
    + " ALTER TABLE notices ADD COLUMN handed_at REAL;"
    " ALTER TABLE notices ADD COLUMN not_before REAL;"
    " ALTER TABLE notices ADD COLUMN tries INTEGER NOT NULL DEFAULT 0;"
    " ALTER TABLE notices ADD COLUMN last_error TEXT;"
    " ALTER TABLE notices ADD COLUMN shown_at REAL;"
    # One handed out before (leased or acked) may be in its chat already: its batch is closed.
    " UPDATE notices SET handed_at = created_at"
    " WHERE holder IS NOT NULL OR acked_at IS NOT NULL;",
    5: "",  # the runs of each consumer of the notices (SCHEMA creates the table)
    # A file older than the ledger gets it as schema 5 made it, then the column.
    6: ledger.SCHEMA.replace("    payload_sha256 TEXT,\n", "")
    + " ALTER TABLE ledger ADD COLUMN payload_sha256 TEXT;",
}
_COLUMNS = (
    "action_id, batch_id, agent, chat_id, user_id, server, kind, summary, payload,"
    " confirm_label, cancel_label, state, created_at, expires_at, updated_at, result, error,"
    " client, decided_by, decided_at, grant_s"
)
Then = Callable[[sqlite3.Connection, ActionRow], object]  # more work in a change's transaction
_NAMES = tuple(name.strip() for name in _COLUMNS.split(","))
_INSERT_ACTION = (
    f"INSERT INTO actions ({_COLUMNS}) VALUES ({', '.join(f':{name}' for name in _NAMES)})"  # noqa: S608
)
_EVENT = (
    "INSERT INTO events (action_id, from_state, to_state, at, actor, detail)"
    " VALUES (?, ?, ?, ?, ?, ?)"
)
# Staging order, oldest first: rowids only grow, since nothing is deleted.
_ORDER = "ORDER BY rowid"
_BATCH = (
    "SELECT batch_id, agent, chat_id, text, created_at, message_key FROM batches WHERE batch_id = ?"
)


class PendingStore(SQLiteStore):
    SCHEMA = SCHEMA
    SCHEMA_VERSION = 6
    MIGRATIONS = MIGRATIONS

    async def add(
        self,
        action: ActionRow,
        *,
        new_batch: BatchRow | None,
        text: str | None,
        then: Then | None = None,
    ) -> None:
        """Store a new action and its staging event, and its batch when ``new_batch`` is
        given (taking its ``message_key`` over from any batch that held it); ``text`` is
        kept as the batch's text unless it has one already. ``then`` runs in the same
        transaction (the ledger, a notice)."""

        def write(db: sqlite3.Connection) -> None:
            insert(db, action, new_batch=new_batch, text=text)
            if then is not None:
                then(db, action)

        await self.transact(write)

    async def change(
        self, action_id: str, change: Change, then: Then | None = None
    ) -> Outcome | None:
        """Make ``change`` if the action is in its ``from_state`` and meets its conditions;
        None when there is no such action. ``then`` runs in the same transaction when the
        change was made, with the row as it is after it (the ledger, a grant)."""
        sets = ["state = ?", "updated_at = ?"]
        values: list[Any] = [change.to_state, change.at]
        if change.decided_by is not None:
            sets += ["decided_by = ?", "decided_at = ?"]
            values += [change.decided_by, change.at]
        if change.result is not None:
            sets.append("result = ?")
            values.append(_encode(change.result))
        if change.error is not None:
            sets.append("error = ?")
            values.append(change.error)
        where = ["action_id = ?", "state = ?"]
        values += [action_id, change.from_state]
        for condition, value in (
            ("expires_at > ?", change.live_at),
            ("expires_at <= ?", change.due_at),
            ("updated_at <= ?", change.idle_since),
        ):
            if value is not None:
                where.append(condition)
                values.append(value)
        update = f"UPDATE actions SET {', '.join(sets)} WHERE {' AND '.join(where)}"  # noqa: S608

        def write(db: sqlite3.Connection) -> Outcome | None:
            changed = db.execute(update, values).rowcount == 1
            if changed:
                db.execute(
                    _EVENT,
                    (
                        action_id,
                        change.from_state,
                        change.to_state,
                        change.at,
                        change.actor,
                        change.detail,
                    ),
                )
            row = select_action(db, action_id)
            if changed and row is not None and then is not None:
                then(db, row)
            return None if row is None else Outcome(changed, row)

        return await self.transact(write)

    async def expire_due(self, now: float, detail: str) -> int:
        """Mark every pending action whose expiry has passed as expired, each with its event
        and its ledger entry; returns how many."""

        def write(db: sqlite3.Connection) -> int:
            due = _select_actions(
                db, f"state = ? AND expires_at <= ? {_ORDER}", (State.PENDING, now)
            )
            for row in due:
                db.execute(
                    "UPDATE actions SET state = ?, updated_at = ?, decided_by = 'expiry',"
                    " decided_at = ? WHERE action_id = ?",
                    (State.EXPIRED, now, now, row.action_id),
                )
                db.execute(_EVENT, (row.action_id, row.state, State.EXPIRED, now, None, detail))
                ledger.append(db, expired(row, now))
            return len(due)

        return await self.transact(write)

    async def action(self, action_id: str) -> ActionRow | None:
        return await self._run(lambda db: select_action(db, action_id))

    async def batch(self, batch_id: str) -> BatchRow | None:
        def read(db: sqlite3.Connection) -> BatchRow | None:
            row = db.execute(_BATCH, (batch_id,)).fetchone()
            return None if row is None else BatchRow(*row)

        return await self._run(read)

    async def batch_with_actions(self, batch_id: str) -> tuple[BatchRow, list[ActionRow]] | None:
        """The batch and its actions in staging order, read at once."""
        return await self.read(lambda db: select_batch(db, batch_id))

    async def batch_actions(self, batch_id: str) -> list[ActionRow]:
        """The batch's actions in staging order."""
        return await self._run(
            lambda db: _select_actions(db, f"batch_id = ? {_ORDER}", (batch_id,))
        )

    async def live(self, agent: str, chat_id: str, now: float) -> list[ActionRow]:
        """The chat's pending actions that have not expired by ``now``, oldest first."""
        return await self._run(
            lambda db: _select_actions(
                db,
                f"agent = ? AND chat_id = ? AND state = ? AND expires_at > ? {_ORDER}",
                (agent, chat_id, State.PENDING, now),
            )
        )

    async def events(self, action_id: str) -> list[EventRow]:
        """The action's events, oldest first."""

        def read(db: sqlite3.Connection) -> list[EventRow]:
            rows = db.execute(
                "SELECT id, action_id, from_state, to_state, at, actor, detail FROM events"
                " WHERE action_id = ? ORDER BY id",
                (action_id,),
            ).fetchall()
            return [
                EventRow(
                    id=id_,
                    action_id=action,
                    from_state=None if from_state is None else State(from_state),
                    to_state=State(to_state),
                    at=at,
                    actor=actor,
                    detail=detail,
                )
                for id_, action, from_state, to_state, at, actor, detail in rows
            ]

        return await self._run(read)


def insert(
    db: sqlite3.Connection, action: ActionRow, *, new_batch: BatchRow | None, text: str | None
) -> None:
    """``PendingStore.add``'s writes, inside a transaction of the caller's."""
    if new_batch is not None:
        if new_batch.message_key is not None:
            db.execute(
                "UPDATE batches SET message_key = NULL"
                " WHERE message_key = ? AND agent = ? AND chat_id = ?",
                (new_batch.message_key, new_batch.agent, new_batch.chat_id),
            )
        db.execute(
            "INSERT INTO batches"
            " (batch_id, agent, chat_id, text, created_at, message_key)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (
                new_batch.batch_id,
                new_batch.agent,
                new_batch.chat_id,
                text,
                new_batch.created_at,
                new_batch.message_key,
            ),
        )
    elif text is not None:
        db.execute(
            "UPDATE batches SET text = COALESCE(text, ?) WHERE batch_id = ?",
            (text, action.batch_id),
        )
    db.execute(_INSERT_ACTION, _encoded(action))
    db.execute(
        _EVENT,
        (action.action_id, None, action.state, action.created_at, action.agent, None),
    )


def fail_unshown(db: sqlite3.Connection, batch_id: str, now: float, why: str) -> list[ActionRow]:
    """Mark the batch's pending actions failed: their message could never be shown (inside
    a transaction of the caller's); each with its event; the rows as they are now."""
    due = _select_actions(db, f"batch_id = ? AND state = ? {_ORDER}", (batch_id, State.PENDING))
    for row in due:
        db.execute(
            "UPDATE actions SET state = ?, updated_at = ?, error = ? WHERE action_id = ?",
            (State.FAILED, now, why, row.action_id),
        )
        db.execute(_EVENT, (row.action_id, row.state, State.FAILED, now, None, why))
    return [replace(row, state=State.FAILED, updated_at=now, error=why) for row in due]


def select_batch(db: sqlite3.Connection, batch_id: str) -> tuple[BatchRow, list[ActionRow]] | None:
    """The batch and its actions in staging order."""
    row = db.execute(_BATCH, (batch_id,)).fetchone()
    if row is None:
        return None
    return BatchRow(*row), _select_actions(db, f"batch_id = ? {_ORDER}", (batch_id,))


def expired(row: ActionRow, now: float) -> Draft:
    """The ledger entry of an action whose time to decide ran out."""
    return ledger.about(row, "expired", now, how="expiry")


def select_action(db: sqlite3.Connection, action_id: str) -> ActionRow | None:
    found = _select_actions(db, "action_id = ?", (action_id,))
    return found[0] if found else None


def _select_actions(db: sqlite3.Connection, where: str, values: tuple[Any, ...]) -> list[ActionRow]:
    rows = db.execute(f"SELECT {_COLUMNS} FROM actions WHERE {where}", values).fetchall()  # noqa: S608
    return [_action(row) for row in rows]


def _action(row: tuple[Any, ...]) -> ActionRow:
    fields = dict(zip(_NAMES, row, strict=True))
    fields["payload"] = json.loads(fields["payload"])
    fields["state"] = State(fields["state"])
    fields["grant_s"] = None if fields["grant_s"] is None else int(fields["grant_s"])
    if fields["result"] is not None:
        fields["result"] = json.loads(fields["result"])
    return ActionRow(**fields)


def _encoded(action: ActionRow) -> dict[str, Any]:
    """The row's values by column name, JSON columns as text."""
    values = asdict(action)
    values["payload"] = _encode(action.payload)
    values["result"] = None if action.result is None else _encode(action.result)
    return values


def _encode(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
