"""``clawmesh mcp CLIENT_FILE``: one local stdio MCP endpoint for Claude Desktop (or any stdio
MCP client, on the Pi or on a laptop) that forwards to the mesh's servers over HTTP with a
client credential bound to one agent and one user.

It is FastMCP's own proxy and mount: a proxy per server (``create_proxy`` of a
``StreamableHttpTransport`` sending ``Authorization: Bearer <the client's token>``), each
mounted on one hub under its server's name. The servers decide what the client may do, as
for any bound client: they list only its ``read`` and ``producer`` tools, fill in and check
its context arguments, and a proposal is staged for the bound user through pending-actions
and shown on Telegram (consent from any client, ``meshkit.consent``). The hub also hides
``confirm`` and ``internal`` tools, should a server ever list one.

Names are the mesh's, ``<server>__<tool>`` (the namespace ``weather_`` plus FastMCP's own
``_``), not FastMCP's default ``weather_<tool>``: they are the names the agents' model
sees (DESIGN "Names"), the logs and the ledger show, and they split back unambiguously
(no ``__`` inside a part; ``pending-actions_get_action`` would not).

It runs on the client's machine, outside the containers: no second Python in a capped one.
Before serving it asks each server once whether the credential is admitted, so a wrong or
revoked token, or a Pi that refuses the host name, stops it with one line (Claude Desktop
shows it in its log); a server that is down only leaves its tools out until it is up.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated, Any

import anyio
import fastmcp
import httpx2
from cyclopts import Parameter
from fastmcp import FastMCP
from fastmcp.client.transports import StreamableHttpTransport
from fastmcp.server import create_proxy

from meshkit.client_file import ClientFile, read_client_file
from meshkit.command import CliError, guarded
from meshkit.logs import configure_logging
from meshkit.settings import load_dotenv
from meshkit.tool_classes import CONFIRM, INTERNAL

logger = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 5.0
_PING = {"jsonrpc": "2.0", "id": "clawmesh-mcp", "method": "ping"}
_HEADERS = {"Accept": "application/json, text/event-stream"}
_REMAKE = (
    "make client NAME={client} AGENT=... USER=... on the Pi, set the MESH_CLIENTS line it prints"
)


def mcp(client_file: Annotated[Path, Parameter(help="the client file make client wrote")]) -> None:
    """The description is clawmesh's (cli/main.py)."""
    guarded(lambda: serve(client_file), as_json=False)


def serve(path: Path) -> None:
    load_dotenv()
    fastmcp.settings.show_server_banner = False
    fastmcp.settings.check_for_updates = "off"
    fastmcp.settings.telemetry_mode = "off"
    client, token = read_client_file(path)
    configure_logging("WARNING", secrets=[token])  # stderr: stdout is the protocol's
    anyio.run(_serve, client, token)


async def _serve(client: ClientFile, token: str) -> None:
    await check_admitted(client, token)
    await hub(client, token).run_stdio_async(show_banner=False)


def hub(client: ClientFile, token: str) -> FastMCP[Any]:
    """One FastMCP server that forwards to each of the client file's servers."""
    endpoint: FastMCP[Any] = FastMCP(
        "clawmesh",
        instructions=(
            "Tools of a clawmesh assistant, named <server>__<tool>. Changes are proposed, "
            "never made: the user confirms each on Telegram; follow one with the server's "
            "get_action."
        ),
    )
    for name, url in client.servers.items():
        transport = StreamableHttpTransport(url, auth=token)
        endpoint.mount(create_proxy(transport, name=name), namespace=f"{name}_")
    endpoint.disable(tags={CONFIRM, INTERNAL})
    return endpoint


async def check_admitted(client: ClientFile, token: str) -> None:
    """CliError if a server refuses the credential (401) or the host name (421); a server
    that cannot be reached is logged, and its tools are missing until it is up."""
    refusals: dict[str, int] = {}
    async with httpx2.AsyncClient(timeout=PROBE_TIMEOUT_S) as http:

        async def probe(name: str, url: str) -> None:
            headers = {**_HEADERS, "Authorization": f"Bearer {token}"}
            try:
                response = await http.post(url, json=_PING, headers=headers)
            except httpx2.HTTPError as error:
                logger.warning("%s (%s) is not reachable now: %s", name, url, type(error).__name__)
                return
            if response.status_code in (401, 421):
                refusals[name] = response.status_code

        async with anyio.create_task_group() as probes:
            for name, url in client.servers.items():
                probes.start_soon(probe, name, url)
    refused = sorted(name for name, status in refusals.items() if status == 401)
    if refused:
        raise CliError(
            f"{', '.join(refused)} refused the credential of client {client.client!r} (401: "
            "its token is not in the servers' MESH_CLIENTS, or was revoked)",
            _REMAKE.format(client=client.client)
            + " in .env and restart the servers (make up), then use the new client file",
            code=2,
        )
    if refusals:
        names = ", ".join(sorted(refusals))
        raise CliError(
            f"{names} refused the host name of its URL in the client file (421)",
            "add that name or address to MESH_ALLOWED_HOSTS in the Pi's .env and run make up",
            code=2,
        )
