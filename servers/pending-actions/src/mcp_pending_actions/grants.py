"""Grants: a tap's "✅ and allow for 1 h", kept as (agent, user, client, server, kind, until).

A grant lets later proposals of the same kind, from the same agent, for the same user,
through the same client execute without a tap until it ends: it never crosses any of the
five. It ends when its time runs out or when the user ends it (``/grants``); either end is
a ledger entry, the first written by whichever call notices it (:func:`sweep`).
These are queries on the store's connection, run inside the caller's transaction.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime

from mcp_pending_actions import ledger
from mcp_pending_actions.ledger import Draft
from mcp_pending_actions.rows import ActionRow, GrantRow
from meshkit.wire.pending_actions import Grant, LedgerEvent

_COLUMNS = (
    "grant_id, agent, user_id, client, server, kind, started_at, until, summary, action_id,"
    " ended_at"
)
_RUNNING = "ended_at IS NULL AND until > ?"


def running(  # noqa: PLR0917 (what a grant is for)
    db: sqlite3.Connection,
    agent: str,
    user_id: str,
    client: str,
    server: str,
    kind: str,
    now: float,
) -> GrantRow | None:
    """The grant (the one ending last) that covers this change now, if any."""
    row = db.execute(
        f"SELECT {_COLUMNS} FROM grants WHERE agent = ? AND user_id = ? AND client = ?"  # noqa: S608
        f" AND server = ? AND kind = ? AND {_RUNNING} ORDER BY until DESC LIMIT 1",
        (agent, user_id, client, server, kind, now),
    ).fetchone()
    return None if row is None else GrantRow(*row)


def give(db: sqlite3.Connection, grant: GrantRow) -> None:
    """Record a grant and its ledger entry."""
    db.execute(
        f"INSERT INTO grants ({_COLUMNS}) VALUES ({', '.join('?' * 11)})",  # noqa: S608
        (
            grant.grant_id,
            grant.agent,
            grant.user_id,
            grant.client,
            grant.server,
            grant.kind,
            grant.started_at,
            grant.until,
            grant.summary,
            grant.action_id,
            grant.ended_at,
        ),
    )
    ledger.append(db, _entry(grant, "granted", grant.started_at, f"until {iso(grant.until)}"))


def for_tap(row: ActionRow, user_id: str, grant_id: str, now: float, grant_s: int) -> GrantRow:
    """The grant a tap on ``row`` gives, by ``user_id``, for ``grant_s`` seconds."""
    return GrantRow(
        grant_id=grant_id,
        agent=row.agent,
        user_id=user_id,
        client=row.client,
        server=row.server,
        kind=row.kind,
        started_at=now,
        until=now + grant_s,
        summary=row.summary,
        action_id=row.action_id,
    )


def listed(db: sqlite3.Connection, agent: str, user_id: str, now: float) -> list[GrantRow]:
    """The user's running grants with this agent, the soonest to end first."""
    rows = db.execute(
        f"SELECT {_COLUMNS} FROM grants WHERE agent = ? AND user_id = ? AND {_RUNNING}"  # noqa: S608
        " ORDER BY until, grant_id",
        (agent, user_id, now),
    ).fetchall()
    return [GrantRow(*row) for row in rows]


def end(
    db: sqlite3.Connection, grant_id: str, agent: str, user_id: str, now: float
) -> GrantRow | None:
    """End the user's running grant now (with its ledger entry); None when there is none."""
    changed = db.execute(
        f"UPDATE grants SET ended_at = ? WHERE grant_id = ? AND agent = ? AND user_id = ?"  # noqa: S608
        f" AND {_RUNNING}",
        (now, grant_id, agent, user_id, now),
    ).rowcount
    if not changed:
        return None
    row = db.execute(
        f"SELECT {_COLUMNS} FROM grants WHERE grant_id = ?",  # noqa: S608
        (grant_id,),
    ).fetchone()
    found = GrantRow(*row)
    ledger.append(db, _entry(found, "grant_ended", now, "ended by the user"))
    return found


def sweep(db: sqlite3.Connection, now: float) -> int:
    """Mark grants whose time ran out as ended at their end, each with its ledger entry."""
    rows = db.execute(
        f"SELECT {_COLUMNS} FROM grants WHERE ended_at IS NULL AND until <= ? ORDER BY until",  # noqa: S608
        (now,),
    ).fetchall()
    for row in rows:
        found = GrantRow(*row)
        db.execute("UPDATE grants SET ended_at = until WHERE grant_id = ?", (found.grant_id,))
        ledger.append(db, _entry(found, "grant_ended", now, "its time ran out"))
    return len(rows)


def view(row: GrantRow) -> Grant:
    return Grant.model_validate(row, from_attributes=True)


def iso(at: float) -> str:
    """Unix seconds as ISO 8601 UTC, to the minute."""
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%MZ")


def _entry(grant: GrantRow, event: LedgerEvent, at: float, outcome: str) -> Draft:
    return Draft(
        at=at,
        event=event,
        agent=grant.agent,
        user_id=grant.user_id,
        client=grant.client,
        action_id=grant.action_id,
        server=grant.server,
        kind=grant.kind,
        summary=grant.summary,
        how="tap" if event == "granted" else None,
        outcome=outcome,
    )
