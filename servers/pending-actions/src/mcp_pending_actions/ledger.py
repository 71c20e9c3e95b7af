"""The hash-chained ledger: who proposed, decided and did what, and how, in one line each.

    ledger      (seq, at, event, agent, user_id, client, action_id, server, kind, summary,
                 how, outcome, prev_hash, hash)           append-only, seq 1, 2, 3 ...
    ledger_head (id = 1, count, last_hash)                 the chain's length and its end

Each entry's ``hash`` is the SHA-256 of the one before's hash and the entry's canonical
JSON (``seq`` included, so no entry can move); the first entry's ``prev_hash`` is 64 zeros.
An entry is appended by :func:`append` inside the transaction of the change it records, so
the two stand or fall together. Editing a row breaks its hash; deleting one leaves a gap in
``seq`` (or, for the last, a chain shorter than the head says): :func:`verify` names the
first entry changed or removed. It proves the file was not quietly edited one row at a time;
someone who rewrites every hash after a change *and* the head is caught only by a copy of
the head kept elsewhere (the CLI prints it: ``audit --verify``).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import astuple, dataclass
from typing import Any

from mcp_pending_actions.rows import ActionRow
from meshkit.wire.pending_actions import How, LedgerEntry, LedgerEvent

GENESIS = "0" * 64
SCHEMA = """
CREATE TABLE IF NOT EXISTS ledger (
    seq INTEGER PRIMARY KEY,
    at REAL NOT NULL,
    event TEXT NOT NULL,
    agent TEXT NOT NULL,
    user_id TEXT,
    client TEXT NOT NULL,
    action_id TEXT,
    server TEXT,
    kind TEXT,
    summary TEXT,
    how TEXT,
    outcome TEXT,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS ledger_by_user ON ledger (agent, user_id, seq);
CREATE TABLE IF NOT EXISTS ledger_head (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    count INTEGER NOT NULL,
    last_hash TEXT NOT NULL
);
"""
COLUMNS = (
    "seq, at, event, agent, user_id, client, action_id, server, kind, summary, how, outcome,"
    " prev_hash, hash"
)


@dataclass(frozen=True)
class Draft:
    """An entry before it is chained: what happened, to whom, through which client."""

    at: float
    event: LedgerEvent
    agent: str
    user_id: str | None
    client: str
    action_id: str | None = None
    server: str | None = None
    kind: str | None = None
    summary: str | None = None
    how: How | None = None
    outcome: str | None = None


def about(
    row: ActionRow,
    event: LedgerEvent,
    at: float,
    *,
    user_id: str | None = None,
    how: How | None = None,
    outcome: str | None = None,
) -> Draft:
    """An entry about an action (``user_id``: who acted; default, the one it is for)."""
    return Draft(
        at=at,
        event=event,
        agent=row.agent,
        user_id=row.user_id if user_id is None else user_id,
        client=row.client,
        action_id=row.action_id,
        server=row.server,
        kind=row.kind,
        summary=row.summary,
        how=how,
        outcome=outcome,
    )


def entry_hash(prev_hash: str, seq: int, draft: Draft) -> str:
    """SHA-256 over the previous hash and the entry's canonical JSON."""
    body = json.dumps(
        [seq, *astuple(draft)], ensure_ascii=False, sort_keys=True, separators=(",", ":")
    )
    return hashlib.sha256(f"{prev_hash}\n{body}".encode()).hexdigest()


def append(db: sqlite3.Connection, draft: Draft) -> LedgerEntry:
    """Chain ``draft`` onto the ledger; call inside the transaction of the change it records."""
    head = db.execute("SELECT count, last_hash FROM ledger_head WHERE id = 1").fetchone()
    count, prev = head if head is not None else (0, GENESIS)
    seq = count + 1
    digest = entry_hash(prev, seq, draft)
    values = (seq, *astuple(draft), prev, digest)
    db.execute(
        f"INSERT INTO ledger ({COLUMNS}) VALUES ({', '.join('?' * len(values))})",  # noqa: S608
        values,
    )
    db.execute(
        "INSERT INTO ledger_head (id, count, last_hash) VALUES (1, ?, ?)"
        " ON CONFLICT (id) DO UPDATE SET count = excluded.count, last_hash = excluded.last_hash",
        (seq, digest),
    )
    return entry(values)


def entry(row: Sequence[Any]) -> LedgerEntry:
    return LedgerEntry.model_validate(dict(zip(LedgerEntry.model_fields, row, strict=True)))


def entries(
    db: sqlite3.Connection,
    *,
    agent: str | None = None,
    user_id: str | None = None,
    since: float | None = None,
    limit: int | None = None,
) -> list[LedgerEntry]:
    """Entries, oldest first: the last ``limit`` of those that match."""
    where, values = ["1 = 1"], []
    for condition, value in (("agent = ?", agent), ("user_id = ?", user_id), ("at >= ?", since)):
        if value is not None:
            where.append(condition)
            values.append(value)
    query = f"SELECT {COLUMNS} FROM ledger WHERE {' AND '.join(where)} ORDER BY seq DESC"  # noqa: S608
    if limit is not None:
        query += f" LIMIT {int(limit)}"
    return [entry(row) for row in reversed(db.execute(query, values).fetchall())]


def verify(db: sqlite3.Connection) -> str | None:
    """None when the chain is whole; else one line naming the first entry changed or
    removed."""
    rows = db.execute(f"SELECT {COLUMNS} FROM ledger ORDER BY seq").fetchall()  # noqa: S608
    head = db.execute("SELECT count, last_hash FROM ledger_head WHERE id = 1").fetchone()
    return check_chain((entry(row) for row in rows), head)


def check_chain(chain: Iterable[LedgerEntry], head: tuple[int, str] | None) -> str | None:
    """The first break in ``chain`` (oldest first) against its ``head`` (count, last hash)."""
    prev, seq = GENESIS, 0
    for found in chain:
        seq += 1
        if found.seq != seq:
            return f"entry {seq} was removed (the chain goes from {seq - 1} to {found.seq})"
        if found.prev_hash != prev or entry_hash(prev, seq, _draft(found)) != found.hash:
            return f"entry {seq} was changed (its hash does not match what it says)"
        prev = found.hash
    count, last = head if head is not None else (0, GENESIS)
    if seq < count:
        return f"entry {seq + 1} was removed (the ledger had {count} entries, {seq} remain)"
    if seq > count:
        return f"entry {count + 1} was added behind the ledger's back (its head counts {count})"
    if last != prev:
        return f"entry {seq} was changed (the ledger's head does not match its last entry)"
    return None


def _draft(found: LedgerEntry) -> Draft:
    return Draft(
        at=found.at,
        event=found.event,
        agent=found.agent,
        user_id=found.user_id,
        client=found.client,
        action_id=found.action_id,
        server=found.server,
        kind=found.kind,
        summary=found.summary,
        how=found.how,
        outcome=found.outcome,
    )
