"""The hash-chained ledger: who proposed, decided and did what, and how, in one line each.

    ledger      (seq, at, event, agent, user_id, client, action_id, server, kind, summary,
                 how, outcome, payload_sha256, prev_hash, hash)   append-only, seq 1, 2, 3 ...
    ledger_head (id = 1, count, last_hash)                 the chain's length and its end

Each entry's ``hash`` is the SHA-256 of the one before's hash and the entry's canonical
JSON (``seq`` included, so no entry can move); the first entry's ``prev_hash`` is 64 zeros.
An entry is appended by :func:`append` inside the transaction of the change it records, so
the two stand or fall together. Editing a row breaks its hash; deleting one leaves a gap in
``seq`` (or, for the last, a chain shorter than the head says): ``chain.verify`` names the
first entry changed or removed. It proves the file was not quietly edited one row at a time;
someone who rewrites every hash after a change *and* the head, or removes the last entries
together with the head, is caught only by a copy of the head kept elsewhere (the CLI prints
it: ``audit --verify``; ``--expect`` checks it).
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
from collections.abc import Sequence
from dataclasses import astuple, dataclass
from typing import Any

from pydantic import ValidationError

from mcp_pending_actions.rows import ActionRow
from meshkit.proposals import payload_hash
from meshkit.wire.pending_actions import How, LedgerEntry, LedgerEvent

logger = logging.getLogger(__name__)
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
    payload_sha256 TEXT,
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
    " payload_sha256, prev_hash, hash"
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
    # The SHA-256 of the action's payload (meshkit.proposals.payload_hash): for a capability's
    # call, of exactly its tool and arguments. Entries written before it existed have none,
    # and their hashes were made without it (``hashed_values``).
    payload_sha256: str | None = None


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
        payload_sha256=payload_hash(row.payload),
    )


def hashed_values(seq: int, values: Sequence[Any]) -> list[Any]:
    """What an entry's hash covers: ``seq`` and the Draft's fields, ``payload_sha256`` (the
    last) only when there is one, so an entry of a ledger older than it still checks."""
    covered = [seq, *values]
    return covered[:-1] if covered[-1] is None else covered


def entry_hash(prev_hash: str, seq: int, draft: Draft) -> str:
    """SHA-256 over the previous hash and the entry's canonical JSON."""
    hashed = chain_hash(prev_hash, hashed_values(seq, astuple(draft)))
    assert hashed is not None  # a Draft holds JSON values only
    return hashed


def chain_hash(prev_hash: str, values: Sequence[Any]) -> str | None:
    """SHA-256 over ``prev_hash`` and ``values`` (seq, then the Draft's fields) as canonical
    JSON; None when a value cannot be JSON (bytes a hand put in the file)."""
    try:
        body = json.dumps(values, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError):
        return None
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


@dataclass(frozen=True)
class Unreadable:
    """A row no entry can be read from: a hand changed it in the file."""

    seq: int
    why: str

    def __str__(self) -> str:
        return f"entry {self.seq} was changed ({self.why})"


def readable(row: Sequence[Any]) -> LedgerEntry | Unreadable:
    """``row`` (COLUMNS, as SQLite gives them) as an entry, or why it cannot be one: a value
    the model holds none of (an event that is none, a time that is text, bytes, NULL)."""
    try:
        values = dict(zip(LedgerEntry.model_fields, row, strict=True))
        return LedgerEntry.model_validate(values, strict=True)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "row"
        why = f"its {field} {shown(first.get('input'))} is not a value an entry holds"
        return Unreadable(row[0], why)


def shown(value: object) -> str:
    """A stored value in a line, short: 'hacked', NULL, (3 bytes)."""
    if value is None:
        return "NULL"
    if isinstance(value, bytes):
        return f"({len(value)} bytes)"
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:39]}…"


def read(
    db: sqlite3.Connection,
    *,
    agent: str | None = None,
    user_id: str | None = None,
    since: float | None = None,
    limit: int | None = None,
) -> list[LedgerEntry | Unreadable]:
    """Entries, oldest first: the last ``limit`` of those that match; a row no entry can be
    read from is there as Unreadable, in its place."""
    where, values = ["1 = 1"], []
    for condition, value in (("agent = ?", agent), ("user_id = ?", user_id), ("at >= ?", since)):
        if value is not None:
            where.append(condition)
            values.append(value)
    query = f"SELECT {COLUMNS} FROM ledger WHERE {' AND '.join(where)} ORDER BY seq DESC"  # noqa: S608
    if limit is not None:
        query += f" LIMIT {int(limit)}"
    return [readable(row) for row in reversed(db.execute(query, values).fetchall())]


def entries(
    db: sqlite3.Connection,
    *,
    agent: str | None = None,
    user_id: str | None = None,
    since: float | None = None,
    limit: int | None = None,
) -> list[LedgerEntry]:
    """The readable entries of :func:`read`; each row left out is logged, naming it."""
    found = []
    for item in read(db, agent=agent, user_id=user_id, since=since, limit=limit):
        if isinstance(item, Unreadable):
            logger.warning("ledger broken: %s; left out (run: audit --verify)", item)
        else:
            found.append(item)
    return found
