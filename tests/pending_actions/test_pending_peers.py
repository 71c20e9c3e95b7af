"""Over HTTP, a server's own credential stages and follows its own changes only.

The peer credential is ``MESH_PEERS``'s (``meshkit.credentials.PeerCredential``: a caller named
after its server, with the relay scope only)."""

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp_types import TextContent
from pydantic import SecretStr

from fakes.clock import Clock
from fakes.serving import sdk_client, serving
from mcp_pending_actions.server import build_server
from mcp_pending_actions.settings import PendingSettings
from meshkit.credentials import PeerCredential, token_digest
from meshkit.http import build_http_app
from pending_actions.calls import AGENT, CLIENT, MILK, USER, write_fleet

pytestmark = pytest.mark.anyio

ORCHESTRATOR_TOKEN = "orchestrator-token-for-pending-actions-peers"
SHOPPING_TOKEN = "shopping-relay-token-for-pending-actions"


@pytest.fixture
async def url(settings: PendingSettings, clock: Clock) -> AsyncIterator[str]:
    write_fleet(settings.agents, {})
    shopping = PeerCredential("shopping", token_digest(SHOPPING_TOKEN))
    app = build_http_app(
        build_server(settings, clock=clock),
        token=SecretStr(ORCHESTRATOR_TOKEN),
        allowed_hosts=[],
        max_body_bytes=1 << 20,
        peers=[shopping],
    )
    async with serving(app) as base:
        yield f"{base}/mcp"


def proposal_from(server: str) -> dict[str, Any]:
    return {"server": server, "agent": AGENT, "user_id": USER, "client": CLIENT, "proposal": MILK}


async def error_of(client: Client, tool: str, arguments: dict[str, Any]) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error
    [content] = result.content
    assert isinstance(content, TextContent)
    return content.text


async def test_a_server_stages_its_own_changes_and_no_other_servers(
    url: str, tmp_path: Path
) -> None:
    async with sdk_client(url, SHOPPING_TOKEN) as shopping:
        tools = {tool.name for tool in (await shopping.list_tools()).tools}
        staged = await shopping.call_tool("stage_for_client", proposal_from("shopping"))
        assert staged.structured_content is not None
        action_id = staged.structured_content["action_id"]
        followed = await shopping.call_tool(
            "action_status",
            {"action_id": action_id, "agent": AGENT, "user_id": USER, "server": "shopping"},
        )
        forged = await error_of(shopping, "stage_for_client", proposal_from("calendar"))
        peeked = await error_of(
            shopping,
            "action_status",
            {"action_id": action_id, "agent": AGENT, "user_id": USER, "server": "calendar"},
        )
        tapped = await error_of(
            shopping,
            "approve",
            {"action_id": action_id, "user_id": USER, "chat_id": USER, "agent": AGENT,
             "message_key": "x"},
        )  # fmt: skip

    assert tools == {"stage_for_client", "action_status"}
    assert followed.structured_content is not None
    assert followed.structured_content["state"] == "pending"
    assert forged == "forbidden: shopping may stage and follow its own changes only, not calendar's"
    assert peeked.startswith("forbidden: shopping")
    assert tapped.startswith("forbidden (403): approve is a internal tool")


async def test_the_orchestrator_cannot_stage_for_a_client(url: str) -> None:
    async with sdk_client(url, ORCHESTRATOR_TOKEN) as orchestrator:
        tools = {tool.name for tool in (await orchestrator.list_tools()).tools}
        refused = await error_of(orchestrator, "stage_for_client", proposal_from("shopping"))

    assert "stage_for_client" not in tools
    assert refused.startswith("forbidden (403): stage_for_client is a relay tool")
