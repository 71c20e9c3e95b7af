"""`python -m mcp_shopping` as a real process: the import command, then the server over HTTP
with the official SDK client."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from fakes.serving import ServerProcess, sdk_client
from shopping.calls import WATER

pytestmark = pytest.mark.anyio

TOKEN = "shopping-process-test-token-3"
EXAMPLE = Path(__file__).parents[2] / "servers/shopping/src/mcp_shopping/example_orders.csv"
TOOLS = {
    "get_list",
    "find_item",
    "get_recent_orders",
    "propose_add_to_list",
    "propose_remove_from_list",
    "propose_reorder",
    "confirm_add_to_list",
    "confirm_remove_from_list",
    "confirm_reorder",
    "get_action",  # clients follow their proposals (meshkit.consent)
}


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("shopping-http")


@pytest.fixture(scope="module")
def imported(data_dir: Path) -> subprocess.CompletedProcess[str]:
    """The example orders imported for clawdia."""
    return subprocess.run(
        [sys.executable, "-m", "mcp_shopping", "import", str(EXAMPLE), "--agent", "clawdia"],
        env={**os.environ, "DATA_DIR": str(data_dir)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture(scope="module")
def server(data_dir: Path, imported: subprocess.CompletedProcess[str]) -> Iterator[ServerProcess]:
    server = ServerProcess("mcp_shopping", data_dir, TOKEN)
    try:
        yield server
    finally:
        assert TOKEN not in server.stop(), "the bearer token leaked into the server's log"


def test_the_import_command_loads_the_example_file(
    imported: subprocess.CompletedProcess[str], data_dir: Path
) -> None:
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout == "imported 10 orders (0 already present) for agent clawdia\n"
    assert (data_dir / "shopping.sqlite3").is_file()


async def test_the_official_sdk_client_finds_an_item_over_http_with_the_token(
    server: ServerProcess, data_dir: Path
) -> None:
    url = server.ready()
    health = httpx2.get(f"{url}/health")
    refused = httpx2.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})

    async with sdk_client(f"{url}/mcp", TOKEN) as client:
        tools = (await client.list_tools()).tools
        found = await client.call_tool(
            "find_item", {"query": "the Kirkland water", "agent": "clawdia"}
        )
        unsigned = await client.call_tool(
            "confirm_reorder",
            {"payload": {"agent": "clawdia", "item": WATER, "store": "Costco", "quantity": 1}},
        )

    assert (health.status_code, health.json()["checks"]) == (
        200,
        {"database": "ok", "storage": "ok"},
    )
    assert health.json()["server"] == "shopping"
    assert refused.status_code == 401
    assert {tool.name for tool in tools} == TOOLS
    assert found.structured_content is not None
    best = found.structured_content["matches"][0]
    assert (best["name"], best["last_store"], best["last_price"]) == (WATER, "Costco", 4.99)
    assert unsigned.is_error
    made = [
        name
        for name in ("approval_signing_key", "approval_public_key")
        if (data_dir / name).exists()
    ]
    assert made == [], "a confirm server makes no approval key"
