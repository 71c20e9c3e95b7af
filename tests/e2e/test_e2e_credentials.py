"""A server broken into cannot act as the orchestrator anywhere else: the mesh as processes,
with a header-recording HTTP server where the registry names ``weather`` (weather parses
third-party data and reaches the internet: the likeliest to be taken over). What the
orchestrator sends it opens no other server, for any tool."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from starlette.types import Receive, Scope, Send

from fakes.mesh import eventually, running_mesh
from fakes.serving import sdk_client, serving

pytestmark = pytest.mark.anyio


class Impostor:
    """Answers every request 503 and keeps each one's Authorization header."""

    def __init__(self) -> None:
        self.authorizations: list[str] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        headers = dict(scope["headers"])
        self.authorizations.append(headers.get(b"authorization", b"").decode())
        await send({"type": "http.response.start", "status": 503, "headers": []})
        await send({"type": "http.response.body", "body": b""})


def tool_call(name: str) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name}}


async def test_the_credential_weather_is_sent_opens_no_other_server_for_any_tool(
    tmp_path: Path,
) -> None:
    impostor = Impostor()
    async with serving(impostor) as impostor_url:
        weather = f"{impostor_url}/mcp"
        async with running_mesh(tmp_path, impostors={"weather": weather}) as mesh:

            async def captured() -> bool:
                return bool(impostor.authorizations)

            await eventually(captured)
            stolen = impostor.authorizations[0].removeprefix("Bearer ")
            assert stolen == mesh.token("weather")  # weather's own, no other
            others = [name for name in mesh.services if name != "orchestrator"]
            assert set(others) == {
                "memory",
                "telegram-io",
                "shopping",
                "pending-actions",
                "scheduler",
            }
            refused: dict[str, set[int]] = {}
            async with httpx.AsyncClient(timeout=10) as http:
                for server in others:
                    async with sdk_client(mesh.url(server), mesh.token(server)) as client:
                        tools = [tool.name for tool in (await client.list_tools()).tools]
                    assert tools, server
                    stolen_auth = {"Authorization": f"Bearer {stolen}"}
                    statuses = {
                        (
                            await http.post(mesh.url(server), json=body, headers=stolen_auth)
                        ).status_code
                        for body in [
                            {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                            *(tool_call(name) for name in tools),
                        ]
                    }
                    refused[server] = statuses
    assert refused == {server: {401} for server in others}
