"""A note proposed from Claude Desktop (a stdio client bound to one user) is remembered only
after that user's tap on Telegram; a policy that denies remembering is told to the client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from fastmcp import Client, FastMCP
from pydantic import SecretStr

from fakes.approval_keys import SIGNING_ENV, write_public_key, write_signing_key
from fakes.clock import Clock
from fakes.serving import serving
from fakes.tool_calls import call, call_error
from mcp_memory.server import build_server
from mcp_memory.settings import MemorySettings
from mcp_pending_actions.server import build_server as build_pending
from mcp_pending_actions.settings import PendingSettings
from meshkit.bindings import bind_local_client
from meshkit.credentials import Binding, Caller, ClientCredential, token_digest
from meshkit.http import build_http_app
from meshkit.tool_classes import PRODUCER, READ, RELAY

pytestmark = pytest.mark.anyio

BINDING = Binding("clawdia", "1001")
DESKTOP = Caller("claude-desktop", frozenset({READ, PRODUCER}), BINDING)
RELAY_TOKEN = "memory-relay-token-0123456789"


@pytest.fixture
def fleet(tmp_path: Path) -> Path:
    return tmp_path / "agents.yaml"  # not there: every change asks


@pytest.fixture
async def pending_url(
    tmp_path: Path, fleet: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[str]:
    """pending-actions over HTTP, admitting the memory server's relay credential."""
    monkeypatch.setenv(SIGNING_ENV, str(write_signing_key(tmp_path / "signing")))
    pending = build_pending(
        PendingSettings(data_dir=tmp_path / "pending", agents=fleet), clock=clock
    )
    peer = ClientCredential("memory", (RELAY,), BINDING, token_digest(RELAY_TOKEN))
    app = build_http_app(
        pending,
        token=SecretStr("orchestrator-token-memory-clients-0123"),
        clients=[peer],
        allowed_hosts=[],
        max_body_bytes=1 << 20,
    )
    async with serving(app) as base:
        yield f"{base}/mcp"


@pytest.fixture
def relayed(settings: MemorySettings, pending_url: str, tmp_path: Path) -> MemorySettings:
    """MESH_RELAY_URL and the memory server's token; pending-actions' public key."""
    return settings.model_copy(
        update={
            "relay_url": pending_url,
            "relay_token": SecretStr(RELAY_TOKEN),
            "approval_public_key_file": write_public_key(tmp_path / "public"),
        }
    )


@pytest.fixture
async def desktop(relayed: MemorySettings, clock: Clock) -> AsyncIterator[Client[Any]]:
    server = build_server(relayed, clock=clock)
    bind_local_client(server, DESKTOP)
    async with Client(server) as client:
        yield client


async def test_a_clients_note_is_remembered_only_after_the_users_tap(
    desktop: Client[Any], relayed: MemorySettings, pending_url: str, clock: Clock
) -> None:
    proposal = await call(desktop, "propose_remember", text="Likes green tea")
    action_id = proposal["staged"]["action_id"]
    assert proposal["staged"]["state"] == "pending"
    assert (await call(desktop, "list_memories"))["memories"] == []

    orchestrator: FastMCP[Any] = build_server(relayed, clock=clock)
    pending_token = "orchestrator-token-memory-clients-0123"
    async with Client(pending_url, auth=pending_token) as actions, Client(orchestrator) as memory:
        [shown] = (await call(actions, "next_notices", consumer="o", run="r"))["notices"]
        tap = {"user_id": "1001", "chat_id": "1001", "agent": "clawdia"}
        decision = await call(
            actions, "approve", action_id=action_id, message_key=shown["key"], **tap
        )
        done = await call(
            memory, "confirm_remember", payload=decision["payload"], approval=decision["approval"]
        )
        await call(actions, "complete", action_id=action_id, result=done)

    remembered = (await call(desktop, "list_memories"))["memories"]
    followed = await call(desktop, "get_action", action_id=action_id)
    assert [(m["text"], m["scope"]) for m in remembered] == [("Likes green tea", "user")]
    assert (followed["state"], followed["kind"], followed["server"]) == (
        "done",
        "remember",
        "memory",
    )


async def test_a_policy_that_denies_remembering_is_told_to_the_client(
    desktop: Client[Any], fleet: Path
) -> None:
    consent = {"memory.remember": "deny"}
    await anyio.Path(fleet).write_text(
        yaml.safe_dump({"agents": {"clawdia": {"consent": consent}}})
    )
    refused = await call_error(desktop, "propose_remember", text="Likes green tea")
    assert refused.startswith("Not allowed by clawdia's policy: memory.remember")
