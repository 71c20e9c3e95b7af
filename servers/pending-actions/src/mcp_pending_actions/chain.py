"""Checking the ledger's hash chain, whatever a hand on the database file left in it.

    verify(db)                 None, or one line naming the first entry changed, removed or
                               added: "entry 3 was changed (...)"
    verify(db, expect=head)    the same, and the chain still holds ``head``, a copy of its
                               head kept elsewhere ("8:<hash>", printed by audit --verify)

Rows are read as SQLite gives them, never through the model first: an edit to a value no
entry can hold (an event that is none, a time that is text, bytes, a NULL where the model
wants text) is named like any other edit, with what is wrong with it ("entry 3 was changed
(its event 'hacked' is not a value an entry holds)"). An entry
given another number is named by the number it had (its content still hashes as that
entry). The chain cannot see its last entries removed together with a head rewritten to
match: only a copy of the head kept off the machine shows that (``expect``; see
docs/security.md).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mcp_pending_actions.ledger import (
    COLUMNS,
    GENESIS,
    Unreadable,
    chain_hash,
    hashed_values,
    readable,
    shown,
)

_HASH = re.compile(r"[0-9a-f]{64}")
_HEAD = re.compile(r"(0|[1-9][0-9]{0,17}):([0-9a-f]{64})")
Row = Sequence[Any]  # the ledger's COLUMNS, as SQLite returns them


@dataclass(frozen=True)
class Head:
    """The chain's length and its last entry's hash: what an operator keeps a copy of."""

    count: int
    last_hash: str

    def __str__(self) -> str:
        return f"{self.count}:{self.last_hash}"


def parse_head(text: str) -> Head:
    """``8:<64 hex>`` (as ``audit --verify`` prints it); ValueError saying the form."""
    match = _HEAD.fullmatch(text.strip())
    if match is None:
        raise ValueError(
            f"{text[:80]!r} is not a head: give it as audit --verify printed it, "
            "<entries>:<last hash> (e.g. 8:3f2a…, 64 hex digits)"
        )
    return Head(int(match[1]), match[2])


def verify(db: sqlite3.Connection, expect: Head | None = None) -> str | None:
    """None when the chain is whole (and holds ``expect``); else one line naming the first
    entry changed, removed or added."""
    rows = db.execute(f"SELECT {COLUMNS} FROM ledger ORDER BY seq").fetchall()  # noqa: S608
    head = db.execute("SELECT count, last_hash FROM ledger_head WHERE id = 1").fetchone()
    return check(rows, head, expect)


def check(rows: Sequence[Row], head: Row | None, expect: Head | None = None) -> str | None:
    """The first break in ``rows`` (ordered by seq) against the stored ``head`` (count, last
    hash; None: no entry was ever written) and the one an operator kept (``expect``)."""
    by_seq: dict[Any, Row] = {}
    for row in rows:  # a table rebuilt by hand may repeat a number
        if by_seq.setdefault(row[0], row) is not row:
            return (
                f"entry {shown(row[0])} was added behind the ledger's back (two rows are "
                "numbered so)"
            )
    walked = _walk(rows, by_seq)
    if isinstance(walked, str):
        return walked
    last, prev = walked
    broken = _against_head(rows, by_seq, last, prev, head)
    if broken is not None or expect is None:
        return broken
    return _holds(by_seq, last, expect)


def _walk(rows: Sequence[Row], by_seq: dict[Any, Row]) -> tuple[int, str] | str:
    """Entries 1, 2, … each chained to the one before: (the last, its hash), or the first
    break."""
    numbered = [seq for seq in by_seq if _number(seq)]
    last = max(numbered, default=0)
    prev = GENESIS
    for seq in range(1, last + 1):
        row = by_seq.get(seq)
        if row is None:
            after = min(s for s in numbered if s > seq)
            return _missing(rows, seq, prev) or (
                f"entry {seq} was removed (the chain goes from {seq - 1} to {after})"
            )
        why = changed(row, prev, seq)
        if why is not None:
            return f"entry {seq} was changed ({why})"
        prev = row[-1]
    return last, prev


def _against_head(
    rows: Sequence[Row], by_seq: dict[Any, Row], last: int, prev: str, head: Row | None
) -> str | None:
    stored = _stored_head(head)
    if isinstance(stored, str):
        return stored
    if last < stored.count:
        return _missing(rows, last + 1, prev) or (
            f"entry {last + 1} was removed (the ledger had {stored.count} entries, {last} remain)"
        )
    if last > stored.count:
        return (
            f"entry {stored.count + 1} was added behind the ledger's back (its head counts "
            f"{stored.count})"
        )
    if stored.last_hash != prev:
        return f"entry {last} was changed (the ledger's head does not match its last entry)"
    strays = [seq for seq in by_seq if not _number(seq)]
    if strays:
        return (
            f"entry {shown(strays[0])} was added behind the ledger's back (entries are "
            "numbered 1, 2, 3 …)"
        )
    return None


def _number(seq: object) -> bool:
    """Whether ``seq`` is a number an entry may have (a table rebuilt by hand holds any)."""
    return type(seq) is int and seq >= 1


def changed(row: Row, prev: str, seq: int) -> str | None:
    """Why ``row`` is not entry ``seq`` as it was chained after ``prev``; None when it is."""
    found = readable(row)
    if isinstance(found, Unreadable):
        return found.why
    if row[-2] != prev or _hash(prev, seq, row) != row[-1]:
        return "its hash does not match what it says"
    return None


def _hash(prev: str, seq: int, row: Row) -> str | None:
    """What ``row``'s hash must be as entry ``seq`` after ``prev``, from its values as
    stored (``ledger.entry_hash``'s); None when no entry could hold them."""
    return chain_hash(prev, hashed_values(seq, row[1:-2]))


def _missing(rows: Sequence[Row], seq: int, prev: str) -> str | None:
    """An entry ``seq`` that is not under its number: the row whose content still hashes as
    that entry, numbered otherwise now."""
    for row in rows:
        if row[0] != seq and row[-2] == prev and _hash(prev, seq, row) == row[-1]:
            return f"entry {seq} was changed (it is numbered {shown(row[0])} now)"
    return None


def _stored_head(head: Row | None) -> Head | str:
    if head is None:
        return Head(0, GENESIS)
    count, last_hash = head
    if type(count) is not int or count < 0:
        return f"the ledger's head was changed (its count {shown(count)} is not a count)"
    if not isinstance(last_hash, str) or not _HASH.fullmatch(last_hash):
        return f"the ledger's head was changed (its last hash {shown(last_hash)} is not one)"
    return Head(count, last_hash)


def _holds(by_seq: dict[Any, Row], last: int, expect: Head) -> str | None:
    """Whether the whole chain still holds the head an operator kept."""
    if expect.count > last:
        return (
            f"entry {last + 1} was removed (the head you kept counts {expect.count} entries, "
            f"{last} remain)"
        )
    kept = GENESIS if expect.count == 0 else by_seq[expect.count][-1]
    if kept != expect.last_hash:
        return (
            f"entry {expect.count} was changed, or one before it (its hash is not the head "
            "you kept: the chain was rewritten since)"
        )
    return None
