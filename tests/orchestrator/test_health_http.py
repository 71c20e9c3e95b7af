"""The orchestrator's ``GET /health`` (its container's healthcheck), on 127.0.0.1 only."""

from __future__ import annotations

import anyio
import httpx2
import pytest

from fakes.serving import free_port
from orchestrator.health_http import serving_health

pytestmark = pytest.mark.anyio


async def test_health_answers_200_while_served_and_404_elsewhere() -> None:
    port = free_port()
    async with serving_health(port), httpx2.AsyncClient() as http:
        health = await http.get(f"http://127.0.0.1:{port}/health")
        other = await http.get(f"http://127.0.0.1:{port}/mcp")
    assert health.status_code == 200
    assert health.json() == {"status": "ok", "server": "orchestrator"}
    assert other.status_code == 404


async def test_nothing_is_served_after_the_block_or_without_a_port() -> None:
    port = free_port()
    async with serving_health(port):
        pass
    async with serving_health(None):
        with pytest.raises(OSError, match="connection attempts failed"):
            await anyio.connect_tcp("127.0.0.1", port)
