"""meshkit.tool_schemas rests on fastmcp's private ``_mcp_server``: these fail when it moves.

The SDK checks each ``tools/call`` against the tool's input schema through the low-level
server's ``get_tool_input_schema``; the snapshot installs it at startup. If fastmcp renames
its low-level server attribute, startup fails here; if the SDK stops asking, the count is 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from fastmcp import FastMCP
from pydantic import SecretStr

from fakes.mcp_toys import build_toys
from fakes.serving import sdk_client, serving
from meshkit.http import MeshGuard
from meshkit.tool_schemas import ToolSchemaSnapshot

pytestmark = pytest.mark.anyio
TOKEN = "schema-test-token"


class CountingSnapshot(ToolSchemaSnapshot):
    def __init__(self, app: Any, server: FastMCP[Any]) -> None:
        super().__init__(app, server)
        self.asked: list[str] = []

    def lookup(self, name: str) -> Mapping[str, Any] | None:
        self.asked.append(name)
        return super().lookup(name)


async def test_tool_calls_over_http_are_checked_against_the_startup_snapshot() -> None:
    server = build_toys()
    inner = server.http_app(path="/mcp", stateless_http=True, json_response=True)
    snapshot = CountingSnapshot(inner, server)
    app = MeshGuard(
        snapshot, token=SecretStr(TOKEN), allowed_hosts=["127.0.0.1"], max_body_bytes=1 << 20
    )
    async with serving(app) as base, sdk_client(f"{base}/mcp", TOKEN) as client:
        result = await client.call_tool("echo", {"text": "hi"})
    assert not result.is_error
    assert snapshot.lookup("echo") is not None  # listed at startup, as tools/list shows it
    assert "echo" in snapshot.asked[:-1]  # the SDK asked the snapshot for the called tool
