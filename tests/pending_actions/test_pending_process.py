"""`python -m mcp_pending_actions` as a real process over HTTP, with the official SDK client."""

from __future__ import annotations

from collections.abc import Iterator

import httpx2
import pytest

from fakes.approval_keys import PUBLIC_KEY, write_signing_key
from fakes.serving import ServerProcess, sdk_client
from meshkit.proposals import Approvals
from pending_actions.calls import AGENT, CHAT, MILK, USER

pytestmark = pytest.mark.anyio

TOKEN = "pending-actions-process-test-token-3"


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    signing_key = write_signing_key(tmp_path_factory.mktemp("pending-keys"))
    server = ServerProcess(
        "mcp_pending_actions",
        tmp_path_factory.mktemp("pending-http"),
        TOKEN,
        LOG_LEVEL="DEBUG",
        MESH_APPROVAL_SIGNING_KEY_FILE=str(signing_key),
    )
    try:
        yield server
    finally:
        log = server.stop()
        assert TOKEN not in log, "the bearer token leaked into the server's log"
        assert "PRIVATE KEY" not in log, "the signing key leaked into the server's log"


async def test_a_proposal_is_staged_and_approved_over_http_with_the_token(
    http_server: ServerProcess,
) -> None:
    url = http_server.ready()
    health = httpx2.get(f"{url}/health")
    refused = httpx2.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})

    async with sdk_client(f"{url}/mcp", TOKEN) as client:
        tools = (await client.list_tools()).tools
        staged = await client.call_tool(
            "stage",
            {
                "agent": AGENT,
                "chat_id": CHAT,
                "server": "shopping",
                "proposal": MILK,
                "message_key": "reply:1:900",
            },
        )
        assert staged.structured_content is not None
        action_id = staged.structured_content["action_id"]
        where = {"agent": AGENT, "chat_id": CHAT}
        tap = {"action_id": action_id, "user_id": USER, "message_key": "reply:1:900", **where}
        approved = await client.call_tool("approve", tap)
        again = await client.call_tool("approve", tap)

    assert (health.status_code, health.json()["checks"]) == (
        200,
        {"database": "ok", "storage": "ok"},
    )
    assert health.json()["server"] == "pending-actions"
    assert refused.status_code == 401
    assert all(
        tool.meta is not None and tool.meta["fastmcp"]["tags"] == ["internal"] for tool in tools
    )
    assert approved.structured_content is not None
    assert approved.structured_content["ok"] is True
    Approvals(PUBLIC_KEY).check(
        approved.structured_content["approval"],
        "shopping",
        "add_item",
        MILK["payload"],
        agent=AGENT,
    )
    assert again.structured_content is not None
    assert (again.structured_content["ok"], again.structured_content["state"]) == (
        False,
        "executing",
    )
