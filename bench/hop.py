"""Latency of one trivial tool call over each hop a clawmesh server offers.

uv run python -m bench.hop [--iterations 500] [--warmup 50] [--rounds 10]

Every server runs in its own process, as in a deployment: the echo server under
``meshkit.serve`` (guarded Streamable HTTP, and a stdio child), fastmcp's default
``http_app()`` and a bare Starlette JSON echo (the floor) under the same uvicorn
settings. This process is the client. Rounds interleave the paths, so machine
noise spreads over all of them; the figures are medians and 99th percentiles.

"raw POST" rows send the exact ``tools/call`` request the SDK client sends (same
headers, same body) with one httpx2 client, so they compare directly with the
floor; the client rows add each client library's own cost.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from subprocess import DEVNULL

import anyio
import fastmcp
import httpx2
from anyio.abc import Process
from mcp import Client as SdkClient
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    PROTOCOL_VERSION_META_KEY,
)

from bench._echo_server import build_server
from meshkit.credentials import token_digest

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "bench-token-0123456789abcdef"
PROTOCOL = "2026-07-28"
START_TIMEOUT_S = 30.0
CHILD_ENV = {
    "FASTMCP_SHOW_SERVER_BANNER": "false",
    "FASTMCP_CHECK_FOR_UPDATES": "off",
    "LOG_LEVEL": "WARNING",
}

# What the official SDK client POSTs for call_tool("echo", {"x": 1}).
TOOLS_CALL = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {
            "name": "echo",
            "arguments": {"x": 1},
            "_meta": {
                PROTOCOL_VERSION_META_KEY: PROTOCOL,
                CLIENT_INFO_META_KEY: {"name": "mcp", "version": "0.1.0"},
                CLIENT_CAPABILITIES_META_KEY: {},
            },
        },
    },
    separators=(",", ":"),
).encode()
TOOLS_CALL_HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": PROTOCOL,
    "mcp-method": "tools/call",
    "mcp-name": "echo",
    "authorization": f"Bearer {TOKEN}",
}

Call = Callable[[], Awaitable[None]]


@dataclass
class Hop:
    name: str
    call: Call
    samples_ms: list[float] = field(default_factory=list)

    @property
    def p50(self) -> float:
        return statistics.median(self.samples_ms)

    @property
    def p99(self) -> float:
        return statistics.quantiles(self.samples_ms, n=100, method="inclusive")[98]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def rss_mb(pid: int) -> float | None:
    """Resident memory of a process from /proc (Linux), or None elsewhere."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return None


def child_pids(marker: str) -> list[int]:
    """Children of this process whose command line contains ``marker`` (Linux)."""
    me = os.getpid()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            # Field 4 of stat is the parent pid; the command name (field 2) may hold spaces.
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, IndexError, ValueError):
            continue
        if parent == me and marker in cmdline:
            found.append(int(entry.name))
    return found


@asynccontextmanager
async def http_server(args: list[str], ready: str, env: dict[str, str]) -> AsyncIterator[Process]:
    """Start ``python -m ...`` and yield it once ``GET ready`` answers at all."""
    process = await anyio.open_process(
        [sys.executable, "-m", *args],
        cwd=ROOT,
        env={**os.environ, **CHILD_ENV, **env},
        stdin=DEVNULL,
        stdout=DEVNULL,
        stderr=None,
    )
    async with process:
        try:
            await wait_until_answering(process, ready)
            yield process
        finally:
            process.terminate()
            with anyio.move_on_after(5):
                await process.wait()
            if process.returncode is None:
                process.kill()


async def wait_until_answering(process: Process, url: str) -> None:
    async with httpx2.AsyncClient(timeout=1.0) as http:
        with anyio.fail_after(START_TIMEOUT_S):
            while True:
                if process.returncode is not None:
                    raise RuntimeError(f"server exited with {process.returncode}: {url}")
                try:
                    await http.get(url)
                except httpx2.TransportError:
                    await anyio.sleep(0.05)
                else:
                    return


def raw_post(http: httpx2.AsyncClient, url: str) -> Call:
    async def call() -> None:
        response = await http.post(url, content=TOOLS_CALL, headers=TOOLS_CALL_HEADERS)
        if response.status_code != 200:
            raise RuntimeError(f"{url} answered {response.status_code}: {response.text[:200]}")

    return call


async def check_raw_answer(http: httpx2.AsyncClient, url: str, *, echoed: bool) -> None:
    """Fail loudly if a raw path does not do what its row claims."""
    response = await http.post(url, content=TOOLS_CALL, headers=TOOLS_CALL_HEADERS)
    body = response.json()
    expected = json.loads(TOOLS_CALL) if echoed else {"result": 1}
    ok = (body if echoed else body["result"]["structuredContent"]) == expected
    if response.status_code != 200 or not ok:
        raise RuntimeError(f"{url}: unexpected answer {response.status_code} {response.text[:300]}")


def fastmcp_call(client: fastmcp.Client[fastmcp.client.transports.ClientTransport]) -> Call:
    async def call() -> None:
        result = await client.call_tool("echo", {"x": 1})
        if result.data != 1:
            raise RuntimeError(f"fastmcp client: unexpected result {result}")

    return call


def sdk_call(client: SdkClient) -> Call:
    async def call() -> None:
        result = await client.call_tool("echo", {"x": 1})
        if result.is_error or result.structured_content != {"result": 1}:
            raise RuntimeError(f"SDK client: unexpected result {result}")

    return call


async def measure(hops: list[Hop], *, iterations: int, warmup: int, rounds: int) -> None:
    for hop in hops:
        for _ in range(warmup):
            await hop.call()
    per_round = max(1, iterations // rounds)
    for _ in range(rounds):
        for hop in hops:
            for _ in range(per_round):
                start = time.perf_counter_ns()
                await hop.call()
                hop.samples_ms.append((time.perf_counter_ns() - start) / 1e6)


def print_table(hops: list[Hop], floor: Hop) -> None:
    width = max(len(hop.name) for hop in hops)
    print(f"{'path':<{width}} | {'p50 ms':>7} | {'p99 ms':>7} | {'p50 / floor':>11}")
    print(f"{'-' * width}-+-{'-' * 7}-+-{'-' * 7}-+-{'-' * 11}")
    for hop in hops:
        ratio = hop.p50 / floor.p50
        print(f"{hop.name:<{width}} | {hop.p50:7.2f} | {hop.p99:7.2f} | {ratio:10.2f}x")


async def run(iterations: int, warmup: int, rounds: int) -> None:
    fastmcp.settings.show_server_banner = False
    fastmcp.settings.check_for_updates = "off"
    mesh_port, default_port, floor_port = free_port(), free_port(), free_port()
    mesh_url = f"http://127.0.0.1:{mesh_port}/mcp"
    default_url = f"http://127.0.0.1:{default_port}/mcp"
    floor_url = f"http://127.0.0.1:{floor_port}/mcp"
    auth = {"Authorization": f"Bearer {TOKEN}"}

    async with AsyncExitStack() as stack:
        async with anyio.create_task_group() as starting:
            # Start the three HTTP servers side by side: each imports fastmcp (seconds).
            started: dict[str, Process] = {}

            async def start(key: str, args: list[str], ready: str, env: dict[str, str]) -> None:
                started[key] = await stack.enter_async_context(http_server(args, ready, env))

            mesh_env = {"MESH_TOKEN_SHA256": token_digest(TOKEN), "MCP_PORT": str(mesh_port)}
            starting.start_soon(
                start, "mesh", ["bench._echo_server"], mesh_url.replace("/mcp", "/health"), mesh_env
            )
            starting.start_soon(
                start,
                "default",
                ["bench._reference", "fastmcp-default", str(default_port)],
                default_url,
                {},
            )
            starting.start_soon(
                start, "floor", ["bench._reference", "floor", str(floor_port)], floor_url, {}
            )

        http = await stack.enter_async_context(httpx2.AsyncClient())
        for url, echoed in ((mesh_url, False), (default_url, False), (floor_url, True)):
            await check_raw_answer(http, url, echoed=echoed)

        in_memory = await stack.enter_async_context(fastmcp.Client(build_server()))
        stdio = await stack.enter_async_context(
            SdkClient(
                StdioServerParameters(
                    command=sys.executable,
                    args=["-m", "bench._echo_server", "--stdio"],
                    cwd=ROOT,
                    env=CHILD_ENV,
                )
            )
        )
        fastmcp_http = await stack.enter_async_context(fastmcp.Client(mesh_url, auth=TOKEN))
        sdk_http_client = await stack.enter_async_context(httpx2.AsyncClient(headers=auth))
        sdk_http = await stack.enter_async_context(
            SdkClient(streamable_http_client(mesh_url, http_client=sdk_http_client))
        )

        floor = Hop("floor: Starlette+uvicorn JSON echo, raw POST", raw_post(http, floor_url))
        hops = [
            floor,
            Hop("HTTP meshkit, raw POST", raw_post(http, mesh_url)),
            Hop("HTTP fastmcp default http_app(), raw POST", raw_post(http, default_url)),
            Hop("HTTP meshkit, fastmcp.Client", fastmcp_call(fastmcp_http)),
            Hop("HTTP meshkit, SDK client", sdk_call(sdk_http)),
            Hop("stdio, SDK client", sdk_call(stdio)),
            Hop("in-memory, fastmcp.Client(server)", fastmcp_call(in_memory)),
        ]
        began = time.perf_counter()
        await measure(hops, iterations=iterations, warmup=warmup, rounds=rounds)
        elapsed = time.perf_counter() - began

        print(
            f"one echo(x:int) tool call, {len(floor.samples_ms)} calls per path "
            f"after {warmup} warm-up, {rounds} interleaved rounds, {elapsed:.1f} s\n"
        )
        print_table(hops, floor)
        print()
        for label, pid in (
            ("HTTP meshkit server", started["mesh"].pid),
            *(("stdio server", pid) for pid in child_pids("bench._echo_server --stdio")),
        ):
            rss = rss_mb(pid)
            if rss is not None:
                print(f"RSS {label} (pid {pid}): {rss:.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.hop",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--iterations", type=int, default=500, help="timed calls per path")
    parser.add_argument("--warmup", type=int, default=50, help="untimed calls per path first")
    parser.add_argument("--rounds", type=int, default=10, help="interleaved rounds")
    args = parser.parse_args()
    anyio.run(run, args.iterations, args.warmup, args.rounds)


if __name__ == "__main__":
    main()
