"""Claude Desktop asks the shopping server for oat milk: the proposal reaches its person on
Telegram through the real pending-actions, nothing changes until the tap, the tap changes the
list once, and the client follows it with get_action."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client, FastMCP
from pydantic import SecretStr

from fakes.approval_keys import SIGNING_ENV, write_signing_key
from fakes.clock import Clock
from fakes.serving import serving
from fakes.tool_calls import call
from mcp_pending_actions.server import build_server as build_pending
from mcp_pending_actions.settings import PendingSettings
from mcp_shopping.server import build_server
from mcp_shopping.settings import ShoppingSettings
from meshkit.bindings import bind_local_client
from meshkit.credentials import Binding, Caller, ClientCredential, token_digest
from meshkit.http import build_http_app
from meshkit.tool_classes import PRODUCER, READ, RELAY
from shopping.calls import TODAY, snapshot

pytestmark = pytest.mark.anyio

DESKTOP_BINDING = Binding("clawdia", "1001")
DESKTOP = Caller("claude-desktop", frozenset({READ, PRODUCER}), DESKTOP_BINDING)
RELAY_TOKEN = "shopping-relay-token-0123456789"


@pytest.fixture
def pending(tmp_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> FastMCP[Any]:
    monkeypatch.setenv(SIGNING_ENV, str(write_signing_key(tmp_path / "signing")))
    settings = PendingSettings(data_dir=tmp_path / "pending", agents=tmp_path / "agents.yaml")
    return build_pending(settings, clock=clock)


@pytest.fixture
async def pending_url(pending: FastMCP[Any]) -> AsyncIterator[str]:
    """pending-actions over HTTP, admitting the shopping server's relay credential."""
    peer = ClientCredential("shopping", (RELAY,), DESKTOP_BINDING, token_digest(RELAY_TOKEN))
    app = build_http_app(
        pending,
        token=SecretStr("orchestrator-token-shopping-clients-0123"),
        clients=[peer],
        allowed_hosts=[],
        max_body_bytes=1 << 20,
    )
    async with serving(app) as base:
        yield f"{base}/mcp"


@pytest.fixture
async def desktop(
    settings: ShoppingSettings, pending_url: str, clock: Clock
) -> AsyncIterator[Client[Any]]:
    """shopping --stdio bound to user 1001 of clawdia, with MESH_RELAY_URL and its token."""
    relayed = settings.model_copy(
        update={"relay_url": pending_url, "relay_token": SecretStr(RELAY_TOKEN)}
    )
    server = build_server(relayed, clock=clock, today=lambda: TODAY)
    bind_local_client(server, DESKTOP)
    async with Client(server) as client:
        yield client


async def test_oat_milk_from_claude_desktop_waits_for_the_tap_then_is_added_once(
    desktop: Client[Any], client: Client[Any], pending: FastMCP[Any], settings: ShoppingSettings
) -> None:
    proposal = await call(
        desktop, "propose_add_to_list", name="oat milk", quantity=2, list_name="Trader Joe's"
    )
    staged = proposal["staged"]
    assert staged["state"] == "pending"
    assert staged["summary"] == "Add 2 oat milk to trader joe's"
    assert "Follow it with get_action" in proposal["note"]
    assert snapshot(settings.db_path)["list_items"] == []

    async with Client(pending) as actions:
        [shown] = (await call(actions, "next_notices", consumer="o", run="r"))["notices"]
        assert shown["batch"]["text"] == "From Claude Desktop:"
        tap = {"user_id": "1001", "chat_id": "1001", "agent": "clawdia"}
        decision = await call(
            actions, "approve", action_id=staged["action_id"], message_key=shown["key"], **tap
        )
        done = await call(
            client,
            "confirm_add_to_list",
            payload=decision["payload"],
            approval=decision["approval"],
        )
        await call(actions, "complete", action_id=staged["action_id"], result=done)
    followed = await call(desktop, "get_action", action_id=staged["action_id"])

    assert done["message"] == "Added 2 oat milk to trader joe's"
    listed = [row[1:4] for row in snapshot(settings.db_path)["list_items"]]
    assert listed == [("clawdia", "trader joe's", "oat milk")]
    assert (followed["state"], followed["result"]["message"]) == ("done", done["message"])
