"""The entry point every server's ``__main__`` calls: stdio or guarded HTTP.

python -m mcp_<name>            Streamable HTTP at /mcp on $MCP_PORT (needs MESH_TOKEN)
python -m mcp_<name> --stdio    stdio, for local clients such as Claude Desktop
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import socket
import weakref
from collections.abc import Callable, Iterable, Sequence
from types import FrameType
from typing import TYPE_CHECKING, Any

from pydantic import SecretStr

from meshkit import lean, memory
from meshkit.logs import configure_logging
from meshkit.proposals import KEY_ENV
from meshkit.settings import ServeSettings, fail, load_settings

if TYPE_CHECKING:
    from fastmcp import FastMCP

logger = logging.getLogger(__name__)

_shutdown_hooks: list[weakref.WeakMethod[Callable[[], None]]] = []


def on_shutdown(hook: Callable[[], None]) -> None:
    """Call the bound method ``hook`` in the event loop as soon as a served server is asked
    to stop (SIGTERM, Ctrl-C), before uvicorn waits for the open requests: a long poll
    ends at once instead of holding the shutdown. Never called in embedded mode."""
    _shutdown_hooks.append(weakref.WeakMethod(hook))


def _shutting_down() -> None:
    for reference in _shutdown_hooks:
        hook = reference()
        if hook is not None:
            hook()


HTTP_AUTH_HELP = (
    "MESH_TOKEN is not set: HTTP mode requires a bearer token. Generate one with\n"
    "  python3 -c 'import secrets; print(secrets.token_urlsafe(32))'\n"
    "and export MESH_TOKEN=<that value> (clients send it as Authorization: Bearer ...),\n"
    "or run with --stdio for a local MCP client."
)


def serve(
    build: Callable[[ServeSettings], FastMCP[Any]],
    *,
    name: str,
    default_port: int,
    secrets: Iterable[SecretStr | None] = (),
    argv: Sequence[str] | None = None,
) -> None:
    """Parse the command line, configure logging, build the server and run it.

    fastmcp, uvicorn and the HTTP app are imported here, after the caller's
    ``meshkit.lean.install()``.
    """
    import fastmcp  # noqa: PLC0415
    from uvicorn.config import Config  # noqa: PLC0415
    from uvicorn.server import Server  # noqa: PLC0415

    from meshkit.http import build_http_app  # noqa: PLC0415

    parser = argparse.ArgumentParser(
        prog=f"python -m mcp_{name}",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--stdio", action="store_true", help="serve MCP over stdin/stdout")
    args = parser.parse_args(argv)

    # The banner of fastmcp prints to stdout (corrupting stdio) and checks for updates online.
    fastmcp.settings.show_server_banner = False
    fastmcp.settings.check_for_updates = "off"

    settings = load_settings(ServeSettings)
    known = [s.get_secret_value() for s in (settings.token, *secrets) if s is not None]
    known += [key for key in [os.environ.get(KEY_ENV, "")] if key]  # the approval key
    configure_logging(settings.log_level, secrets=known)
    if args.stdio:
        logger.info("serving %s over stdio", name)
        server = build(settings)
        lean.evict_startup_only()
        memory.trim()
        server.run("stdio", show_banner=False)
        return
    if settings.token is None:
        fail(HTTP_AUTH_HELP)

    server = build(settings)
    lean.evict_startup_only()
    app = build_http_app(
        server,
        token=settings.token,
        allowed_hosts=settings.allowed_hosts,
        max_body_bytes=settings.max_body_bytes,
    )
    port = settings.port or default_port
    logger.info("serving %s on http://%s:%d/mcp", name, settings.host, port)
    # uvicorn.run() minus reload/workers; ws="none": MCP over HTTP uses no WebSocket, and
    # "auto" would import the websockets package because it is installed.
    config = Config(
        app,
        host=settings.host,
        port=port,
        log_config=None,
        lifespan="on",
        access_log=False,
        server_header=False,
        timeout_graceful_shutdown=2,
        loop="asyncio",
        http="httptools",
        ws="none",
    )

    class _Server(Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            # Started: what building the server freed goes back to the system, and so
            # does what requests free, from time to time (meshkit.memory).
            self._trimmer = asyncio.get_running_loop().create_task(memory.keep_trimmed())

        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            super().handle_exit(sig, frame)
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                return
            loop.call_soon_threadsafe(_shutting_down)  # not from inside the signal handler

    server_ = _Server(config)
    server_.run()
    if not server_.started:
        raise SystemExit(3)
