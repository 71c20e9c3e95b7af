"""Tool calls and proposals the pending-actions tests share."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from fastmcp import Client

from fakes.clock import Clock
from fakes.tool_calls import call

AGENT = "clawdia"
CHAT = "42"
USER = "7001"
MESSAGE = "reply:1:900"  # the key the message with the batch's buttons is sent under
MILK: dict[str, Any] = {
    "kind": "add_item",
    "summary": "Add milk to the shopping list",
    "payload": {"list": "groceries", "item": "milk", "quantity": 2},
}
EGGS: dict[str, Any] = {
    "kind": "add_item",
    "summary": "Add eggs to the shopping list",
    "payload": {"list": "groceries", "item": "eggs"},
}


async def stage(
    client: Client[Any],
    proposal: dict[str, Any] | None = None,
    *,
    shown_in: str | None = MESSAGE,
    **arguments: Any,
) -> dict[str, Any]:
    """Stage ``proposal`` (MILK by default) from the shopping server in AGENT's CHAT, its
    batch shown in the message sent under key ``shown_in`` (None: no key, shown nowhere;
    left out when staging into a batch)."""
    defaults: dict[str, Any] = {
        "agent": AGENT, "chat_id": CHAT, "server": "shopping", "proposal": proposal or MILK,
    }  # fmt: skip
    if shown_in is not None and "batch_id" not in arguments:
        defaults["message_key"] = shown_in
    return await call(client, "stage", **{**defaults, **arguments})


def tap(**arguments: Any) -> dict[str, Any]:
    """Where a tap comes from: USER, in AGENT's CHAT, on MESSAGE, unless told otherwise."""
    return {"user_id": USER, "chat_id": CHAT, "agent": AGENT, "message_key": MESSAGE, **arguments}


async def approve(client: Client[Any], action_id: str, **arguments: Any) -> dict[str, Any]:
    return await call(client, "approve", action_id=action_id, **tap(**arguments))


async def cancel(client: Client[Any], action_id: str, **arguments: Any) -> dict[str, Any]:
    return await call(client, "cancel", action_id=action_id, **tap(**arguments))


async def approve_batch(client: Client[Any], batch_id: str, **arguments: Any) -> dict[str, Any]:
    return await call(client, "approve_batch", batch_id=batch_id, **tap(**arguments))


async def cancel_batch(client: Client[Any], batch_id: str, **arguments: Any) -> dict[str, Any]:
    return await call(client, "cancel_batch", batch_id=batch_id, **tap(**arguments))


async def transitions(client: Client[Any], action_id: str) -> list[tuple[str | None, str]]:
    """The action's history as (from_state, to_state) pairs."""
    history = await call(client, "history", action_id=action_id)
    return [(event["from_state"], event["to_state"]) for event in history["events"]]


CLIENT = "claude-desktop"


def write_fleet(path: Path, consent: dict[str, Any], **others: dict[str, Any]) -> None:
    """A fleet file where AGENT has the ``consent`` rules and each of ``others`` its own."""
    agents = {
        AGENT: {"consent": consent},
        **{name: {"consent": rules} for name, rules in others.items()},
    }
    path.write_text(yaml.safe_dump({"agents": agents}), encoding="utf-8")


async def stage_for_client(
    client: Client[Any], proposal: dict[str, Any] | None = None, **arguments: Any
) -> dict[str, Any]:
    """Stage ``proposal`` (MILK) as the shopping server does for CLIENT, bound to AGENT and
    USER."""
    defaults: dict[str, Any] = {
        "server": "shopping", "agent": AGENT, "user_id": USER, "client": CLIENT,
        "proposal": proposal or MILK,
    }  # fmt: skip
    # Not through call(): its own first parameter is named client too.
    result = await client.call_tool("stage_for_client", {**defaults, **arguments})
    assert result.structured_content is not None
    return result.structured_content


async def notices(client: Client[Any], **arguments: Any) -> list[dict[str, Any]]:
    """The notices next_notices hands to the orchestrator's run 'r1' now."""
    defaults: dict[str, Any] = {"consumer": "orchestrator", "run": "r1"}
    found = await call(client, "next_notices", **{**defaults, **arguments})
    listed: list[dict[str, Any]] = found["notices"]
    return listed


async def audit(client: Client[Any], user_id: str = USER, limit: int = 100) -> list[dict[str, Any]]:
    found = await call(client, "audit", agent=AGENT, user_id=user_id, limit=limit)
    entries: list[dict[str, Any]] = found["entries"]
    return entries


async def some_history(client: Client[Any], clock: Clock) -> None:
    """Seven ledger entries: proposed, confirmed and done; proposed and cancelled; proposed
    and expired; in that order."""
    done = await stage(client, user_id=USER, shown_in="reply:1:1")
    await approve(client, done["action_id"], message_key="reply:1:1")
    await call(client, "complete", action_id=done["action_id"], result={"message": "Added milk"})
    cancelled = await stage(client, EGGS, user_id=USER, shown_in="reply:1:2")
    await cancel(client, cancelled["action_id"], message_key="reply:1:2")
    await stage(client, {**MILK, "ttl_s": 10}, user_id=USER, shown_in="reply:1:3")
    clock.advance(10)
    await call(client, "list_pending", agent=AGENT, chat_id=CHAT)
