"""Serve an ASGI app on a free loopback port inside the test's event loop."""

from __future__ import annotations

import itertools
import os
import random
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import anyio
import httpx2
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from starlette.types import ASGIApp

from meshkit.credentials import token_digest
from meshkit.secret_files import render_credentials

# The ports servers started by tests listen on: below the kernel's ephemeral range (32768
# and up by default), where every outgoing connection of every worker takes its port and
# could take one picked here before its server binds it; one block per pytest-xdist
# worker, so that two workers never pick the same port; in each block, taken in turn, so
# a port handed out is not handed out again before its server had time to bind it. Each
# process starts at its own place in its block, so that two test runs on one machine (two
# checkouts, two terminals) do not hand out the same ports in the same order.
PORTS_FROM = 20_000
PORTS_PER_WORKER = 1_000
_handed_out = itertools.count(random.SystemRandom().randrange(PORTS_PER_WORKER))


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on, for a server a test starts."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    first = PORTS_FROM + (int(worker) % 12 if worker.isdigit() else 0) * PORTS_PER_WORKER
    for _ in range(PORTS_PER_WORKER):
        port = first + next(_handed_out) % PORTS_PER_WORKER
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue  # in use, or still closing
            return port
    raise RuntimeError(f"no free port in {first}-{first + PORTS_PER_WORKER - 1}")


def credentials_file(directory: Path, tokens: Mapping[str, str]) -> Path:
    """The orchestrator's MESH_CREDENTIALS_FILE for ``tokens`` (server → its credential)."""
    path = directory / "mesh_credentials"
    path.write_text(render_credentials(tokens))
    return path


@asynccontextmanager
async def sdk_client(url: str, token: str, *, timeout_s: float = 5.0) -> AsyncIterator[Client]:
    """The official SDK client on ``url`` (``.../mcp``) over Streamable HTTP with the bearer
    token, as any MCP client would connect (``timeout_s``: httpx's, per request)."""
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=timeout_s)
    async with http, Client(streamable_http_client(url, http_client=http)) as client:
        yield client


@asynccontextmanager
async def serving(
    app: ASGIApp, *, port: int = 0, start_timeout_s: float = 10.0
) -> AsyncIterator[str]:
    """Yield the base URL (``http://127.0.0.1:PORT``) while uvicorn serves ``app``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        port = sock.getsockname()[1]
        config = uvicorn.Config(app, log_config=None, lifespan="auto", access_log=False)
        server = uvicorn.Server(config)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(server.serve, [sock])
            with anyio.fail_after(start_timeout_s):
                while not server.started:  # noqa: ASYNC110 (uvicorn offers no event)
                    await anyio.sleep(0.01)
            try:
                yield f"http://127.0.0.1:{port}"
            finally:
                server.should_exit = True


@contextmanager
def serving_in_thread(app: ASGIApp, *, start_timeout_s: float = 10.0) -> Iterator[str]:
    """Like :func:`serving`, in a thread of its own: for module-scoped fixtures."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, lifespan="auto", access_log=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + start_timeout_s
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the fake server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=5)
        sock.close()


class ServerProcess:
    """``python -m <module>`` over HTTP, started at once and waited for only when a test
    needs it (so its start overlaps the tests that come before)."""

    def __init__(
        self,
        module: str,
        data_dir: Path,
        token: str,
        *,
        command: list[str] | None = None,
        **env: str,
    ) -> None:
        """``command`` runs the server another way (by default ``python -m <module>``)."""
        self.module = module
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "DATA_DIR": str(data_dir),
            # A server knows the orchestrator's credential by its digest only.
            "MESH_TOKEN_SHA256": token_digest(token),
            "MCP_PORT": str(self.port),
            "FASTMCP_CHECK_FOR_UPDATES": "off",
            **env,
        }
        self.process = subprocess.Popen(
            command or [sys.executable, "-m", module],
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )

    def ready(self, timeout_s: float = 30) -> str:
        """The base URL once ``/health`` answers 200."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.module} exited: {self.stop()}")
            try:
                if httpx2.get(f"{self.url}/health", timeout=1).status_code == 200:
                    return self.url
            except httpx2.TransportError:
                pass
            time.sleep(0.05)
        raise TimeoutError(f"{self.module} did not become healthy")

    def stop(self) -> str:
        """Stop it (SIGTERM); what it wrote to stderr (its log)."""
        self.process.terminate()
        _, stderr = self.process.communicate(timeout=10)
        return stderr
