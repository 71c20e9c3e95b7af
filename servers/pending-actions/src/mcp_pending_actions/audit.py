"""The ledger for an operator, and its check (``clawmesh audit``: commands.py).

A row a hand changed to a value no entry holds is named, never a traceback: "entry 3 was
changed (…)", exit 1.
"""

from __future__ import annotations

import re
import sqlite3
import sys
from datetime import UTC, datetime

from mcp_pending_actions import chain, ledger
from meshkit.consent_policy import parse_duration
from meshkit.wire.pending_actions import Ledger, LedgerEntry

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
EVENTS = {
    "proposed": "proposed",
    "denied": "refused by the policy",
    "decided": "decided",
    "executed": "done",
    "failed": "failed",
    "expired": "expired unanswered",
    "granted": "allowed for a while",
    "grant_ended": "allowance ended",
}


class BrokenChain(Exception):
    """The ledger's chain does not hold: the first entry changed or removed."""


def show(
    db: sqlite3.Connection,
    agent: str | None,
    user: str | None,
    since: float | None,
    *,
    as_json: bool,
) -> int:
    """Print the entries (one line each, or JSON); how many could not be read."""
    found = ledger.read(db, agent=agent, user_id=user, since=since)
    readable = [item for item in found if isinstance(item, LedgerEntry)]
    broken = [item for item in found if isinstance(item, ledger.Unreadable)]
    if as_json:
        print(Ledger(entries=readable).model_dump_json(indent=2))
        for unread in broken:
            print(f"ledger broken: {unread}; left out (--verify checks it all)", file=sys.stderr)
    else:
        for item in found:
            print(line(item) if isinstance(item, LedgerEntry) else f"#{item.seq} {item}")
    return len(broken)


def verified(db: sqlite3.Connection, expect: chain.Head | None) -> str:
    """The chain's head when it is whole (and holds ``expect``); else BrokenChain."""
    broken = chain.verify(db, expect)
    if broken is not None:
        raise BrokenChain(f"ledger broken: {broken}")
    head = db.execute("SELECT count, last_hash FROM ledger_head WHERE id = 1").fetchone()
    kept = chain.Head(*head) if head is not None else chain.Head(0, ledger.GENESIS)
    said = f"ledger whole: {kept.count} entries, last hash {kept.last_hash}; head {kept}"
    if expect is not None:
        said += f"; it holds the head you kept ({expect})"
    return said


def parse_since(text: str, now: float) -> float:
    """``2h``/``7d`` ago, or an ISO date or date-time (UTC unless it names a zone)."""
    text = text.strip()
    if not _DATE.match(text):
        return now - _duration(text)
    try:
        at = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{text[:40]!r} is not a date: write e.g. 2026-11-01T09:30") from None
    return (at if at.tzinfo else at.replace(tzinfo=UTC)).timestamp()


def _duration(text: str) -> int:
    try:
        return parse_duration(text)
    except ValueError:
        raise ValueError(f"{text[:40]!r}: write e.g. 2h, 7d or 2026-11-01") from None


def line(entry: LedgerEntry) -> str:
    """One entry in plain words: when, what, for whom, through which client, how."""
    when = datetime.fromtimestamp(entry.at, UTC).strftime("%Y-%m-%d %H:%M:%SZ")
    what = EVENTS[entry.event]
    if entry.event == "decided":
        what = f"{entry.outcome or 'decided'} by {entry.how or 'someone'}"
    elif entry.outcome and entry.event != "denied":
        what = f"{what}: {entry.outcome}"
    change = f"{entry.server}.{entry.kind}" if entry.server else ""
    who = f"{entry.agent}/{entry.user_id or '-'} via {entry.client}"
    summary = f" “{entry.summary}”" if entry.summary else ""
    return f"{when} #{entry.seq} {who} {change}{summary}: {what}"
