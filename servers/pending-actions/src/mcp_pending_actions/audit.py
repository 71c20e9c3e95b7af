"""``python -m mcp_pending_actions audit``: the ledger for an operator, and its check.

    audit                     every entry, oldest first, one line each
    audit --since 2h          entries of the last two hours (or --since 2026-11-01,
                              --since 2026-11-01T09:30; a time without a zone is UTC)
    audit --agent clawdia --user 4242
    audit --json              the entries as JSON (the audit tool's shape)
    audit --verify            check the hash chain: exit 0 and its head (8:<hash>) when
                              whole, exit 1 naming the first entry changed or removed
    audit --verify --expect 8:<hash>
                              and the chain still holds that head, a copy kept elsewhere
                              (catches the last entries removed with the head rewritten)

A row a hand changed to a value no entry holds is named, never a traceback: "entry 3 was
changed (…)", exit 1.

Reads the database read-only, beside a running server (WAL): no server needs to stop.
"""

from __future__ import annotations

import argparse
import re
import sqlite3
import sys
import time
from collections.abc import Sequence
from contextlib import closing
from datetime import UTC, datetime

from mcp_pending_actions import chain, ledger
from mcp_pending_actions.settings import PendingSettings
from meshkit.consent_policy import parse_duration
from meshkit.settings import fail, load_settings
from meshkit.wire.pending_actions import Ledger, LedgerEntry

BROKEN_EXIT = 1
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


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mcp_pending_actions audit",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--since", help="2h, 7d, 2026-11-01 or 2026-11-01T09:30 (UTC)")
    parser.add_argument("--agent")
    parser.add_argument("--user")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--verify", action="store_true", help="check the hash chain")
    parser.add_argument(
        "--expect",
        type=_head,
        metavar="COUNT:HASH",
        help="with --verify: the head a former --verify printed, kept elsewhere; the chain "
        "must still hold it",
    )
    args = parser.parse_args(argv)
    if args.expect is not None and not args.verify:
        parser.error("--expect goes with --verify")
    settings = load_settings(PendingSettings)
    since = None
    if args.since is not None:
        try:
            since = parse_since(args.since, time.time())
        except ValueError as error:
            fail(f"--since: {error}")
    path = settings.db_path
    if not path.is_file():
        fail(f"{path}: no pending-actions database there; set DATA_DIR to the server's")
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        if args.verify:
            return _verify(db, args.expect)
        found = ledger.read(db, agent=args.agent, user_id=args.user, since=since)
    readable = [item for item in found if isinstance(item, LedgerEntry)]
    broken = [item for item in found if isinstance(item, ledger.Unreadable)]
    if args.json:
        print(Ledger(entries=readable).model_dump_json(indent=2))
        for unread in broken:
            print(f"ledger broken: {unread}; left out (--verify checks it all)", file=sys.stderr)
    else:
        for item in found:
            print(line(item) if isinstance(item, LedgerEntry) else f"#{item.seq} {item}")
    return BROKEN_EXIT if broken else 0


def _verify(db: sqlite3.Connection, expect: chain.Head | None) -> int:
    broken = chain.verify(db, expect)
    if broken is not None:
        print(f"ledger broken: {broken}", file=sys.stderr)
        return BROKEN_EXIT
    head = db.execute("SELECT count, last_hash FROM ledger_head WHERE id = 1").fetchone()
    kept = chain.Head(*head) if head is not None else chain.Head(0, ledger.GENESIS)
    said = f"ledger whole: {kept.count} entries, last hash {kept.last_hash}; head {kept}"
    if expect is not None:
        said += f"; it holds the head you kept ({expect})"
    print(said)
    return 0


def _head(text: str) -> chain.Head:
    try:
        return chain.parse_head(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


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
