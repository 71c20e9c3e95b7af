"""``GET /health`` for the orchestrator's container: it serves no MCP, so no uvicorn.

A minimal HTTP/1.1 responder on 127.0.0.1 only (the container's own healthcheck,
``python -m meshkit.healthcheck``, is its one client): 200 once the registry is connected
and the channel is running, 404 for any other path. It never reads more than one request
head and closes every connection after answering.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from anyio.abc import SocketStream

HEAD_LIMIT = 8192
READ_TIMEOUT_S = 5.0


def _answer(status: str, body: dict[str, str]) -> bytes:
    payload = json.dumps(body).encode()
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + payload


async def _handle(stream: SocketStream) -> None:
    async with stream:
        head = b""
        with anyio.move_on_after(READ_TIMEOUT_S):
            while b"\r\n\r\n" not in head and len(head) < HEAD_LIMIT:
                try:
                    head += await stream.receive(1024)
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    return
        parts = head.split(b" ", 2)
        if len(parts) >= 2 and parts[0] == b"GET" and parts[1].split(b"?")[0] == b"/health":
            answer = _answer("200 OK", {"status": "ok", "server": "orchestrator"})
        else:
            answer = _answer("404 Not Found", {"error": "only GET /health is served"})
        try:
            await stream.send(answer)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            return


@asynccontextmanager
async def serving_health(port: int | None) -> AsyncIterator[None]:
    """Answer /health on 127.0.0.1:``port`` while the block runs (nothing when None)."""
    if port is None:
        yield
        return
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=port)
    async with listener, anyio.create_task_group() as group:
        group.start_soon(listener.serve, _handle)
        try:
            yield
        finally:
            group.cancel_scope.cancel()
