"""What the shopping tests share: a clock, tool calls, tokens and a look at the DB."""

from __future__ import annotations

import secrets
import sqlite3
from contextlib import closing
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from fastmcp import Client

from fakes.approval_keys import SIGNING_KEY
from fakes.clock import Clock
from fakes.tool_calls import call
from meshkit.proposals import ApprovalSigner
from meshkit.wire.proposals import Proposal

ACTION = "act_0123456789ab"
AGENT = "clawdia"
TODAY = date(2026, 10, 20)
START = datetime(2026, 10, 20, 12, tzinfo=UTC).timestamp()
WATER = "Kirkland Signature Purified Water 40pk"
ORDERS_CSV = """\
date,item,store,quantity,price
2026-08-14,Kirkland Signature Purified Water 40pk,Costco,1,4.99
2026-08-14,Kirkland Signature Paper Towels 12 rolls,Costco,1,22.99
2026-08-21,Oat Milk Barista Edition,Trader Joe's,2,3.99
2026-09-03,Kirkland Signature Purified Water 40pk,Costco,2,9.98
2026-09-11,Sparkling Water Lemon 12pk,Safeway,1,5.49
2026-09-11,Whole Milk 1 gal,Safeway,1,4.29
2026-10-02,Kirkland Signature Purified Water 40pk,Costco,1,4.99
2026-10-02,Avocados 5ct bag,Costco,1,
"""


def mint(
    clock: Clock,
    kind: str,
    payload: dict[str, Any],
    *,
    action_id: str = ACTION,
    key: Ed25519PrivateKey = SIGNING_KEY,
    agent: str | None = None,
) -> str:
    """An approval token, as pending-actions mints it when the user taps Confirm on an
    action ``agent`` staged (by default the payload's agent, as the producer filled it in)."""
    staged_by = payload["agent"] if agent is None else agent
    return ApprovalSigner(key, clock=clock).mint(
        action_id, "shopping", kind, payload, agent=staged_by
    )


def action_id() -> str:
    """A fresh pending-actions id."""
    return f"act_{secrets.token_hex(6)}"


async def propose(client: Client[Any], tool: str, **arguments: Any) -> dict[str, Any]:
    """A proposal, checked against meshkit's model."""
    proposal = await call(client, tool, **arguments)
    Proposal.model_validate(proposal)
    return proposal


async def approve(
    client: Client[Any], clock: Clock, proposal: dict[str, Any], *, action: str | None = None
) -> dict[str, Any]:
    """What the orchestrator does after the tap: confirm_<kind> with a fresh token."""
    token = mint(clock, proposal["kind"], proposal["payload"], action_id=action or action_id())
    return await call(
        client, f"confirm_{proposal['kind']}", payload=proposal["payload"], approval=token
    )


async def add(client: Client[Any], clock: Clock, name: str, **arguments: Any) -> dict[str, Any]:
    """Put an item on a list the way a user does: propose, then tap Add."""
    proposal = await propose(client, "propose_add_to_list", name=name, **arguments)
    return await approve(client, clock, proposal)


def snapshot(db_path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table, to show that a call changed nothing."""
    with closing(sqlite3.connect(db_path)) as db:
        return {
            table: db.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()
            for table in ("list_items", "orders", "confirmations")
        }
