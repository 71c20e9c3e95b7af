"""Tool calls and proposals the pending-actions tests share."""

from __future__ import annotations

from typing import Any

from fastmcp import Client

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
