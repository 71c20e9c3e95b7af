"""The one way a server process starts: settings, logging, then stdio or guarded HTTP.

    python -m mcp_<name>            Streamable HTTP at /mcp on $MCP_PORT (needs MESH_TOKEN_SHA256)
    python -m mcp_<name> --stdio    stdio, for local clients such as Claude Desktop

Over stdio a server has no credential to check: it serves every tool, as the operator who
started it beside the data (the orchestrator's ``command:`` registry entries rely on that),
unless ``MESH_STDIO_AGENT`` and ``MESH_STDIO_USER`` bind it to one person: then it serves
read and producer tools only, with that agent and user as the context arguments, like a
bound HTTP client (``meshkit.bindings``), under the name ``MESH_STDIO_CLIENT`` (default
``stdio``; Claude Desktop's entry sets ``claude-desktop``): the name a proposal it makes is
shown to the user with ("From Claude Desktop: …").

Over HTTP, pending-actions also admits ``MESH_PEERS``/``MESH_PEERS_FILE``: the servers that
stage their bound clients' proposals with it (``meshkit.credentials``).

Each server's ``__main__`` is a call to :func:`run_server` with its settings class, its
factory and its default port.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import signal
import socket
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import Any, TypeVar

import fastmcp
from fastmcp import FastMCP
from pydantic import SecretStr
from pydantic_settings import BaseSettings
from uvicorn.config import Config
from uvicorn.server import Server

from meshkit.bindings import bind_local_client
from meshkit.connections import Limits, protocol_with
from meshkit.credentials import Binding, Caller, ClientCredential, CredentialError
from meshkit.fleet import agent_zones
from meshkit.http import build_http_app
from meshkit.logs import configure_logging
from meshkit.process_memory import Trimmer
from meshkit.settings import ServeSettings, fail, load_dotenv, load_settings
from meshkit.stopping import Stopping
from meshkit.tool_classes import PRODUCER, READ
from meshkit.yaml_config import ConfigError

logger = logging.getLogger(__name__)

S = TypeVar("S", bound=BaseSettings)

# On SIGTERM, requests in flight get this long to finish (long polls end at once, see
# Stopping). Below the 10 s a container gets before SIGKILL by default; the orchestrator,
# stopped first (it depends on the servers), finishes its turns before they stop.
GRACE_S = 8

HTTP_AUTH_HELP = (
    "MESH_TOKEN_SHA256 is not set: HTTP mode admits the orchestrator by the SHA-256 of its "
    "credential for this server; set MESH_TOKEN_SHA256 (or MESH_TOKEN_SHA256_FILE, a file "
    "holding it: make up writes one per server under secrets/), or run with --stdio"
)


def run_server(
    settings_cls: type[S],
    build: Callable[[S], FastMCP[Any]],
    *,
    name: str,
    default_port: int,
    secrets: Callable[[S], Iterable[SecretStr | str | None]] = lambda _: (),
    stopping: Stopping | None = None,
    argv: Sequence[str] | None = None,
    description: str | None = None,
    commands: Iterable[str] = (),
) -> None:
    """Parse the command line, read the settings, configure logging, build and serve.

    ``secrets`` are redacted from every log line; ``stopping`` is told when the process
    is asked to stop (give the same one to the server the factory builds). A first argument
    in ``commands`` is an operator's command instead (``clawmesh``'s, run in the server's
    container): ``mcp_<name>.commands.main(argv)`` runs it, that module loaded for it only."""
    words = list(sys.argv[1:] if argv is None else argv)
    if words[:1] and words[0] in commands:
        importlib.import_module(f"mcp_{name.replace('-', '_')}.commands").main(words)
        return
    parser = argparse.ArgumentParser(
        prog=f"python -m mcp_{name.replace('-', '_')}",
        description=description or __doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--stdio", action="store_true", help="serve MCP over stdin/stdout")
    args = parser.parse_args(words)
    load_dotenv()

    # The banner of fastmcp prints to stdout (corrupting stdio) and checks for updates online.
    fastmcp.settings.show_server_banner = False
    fastmcp.settings.check_for_updates = "off"
    # Nothing here exports OpenTelemetry: fastmcp's spans (no-ops without an SDK) and the
    # trace context it handles on every call cost 5-10 % of an in-process call's CPU.
    fastmcp.settings.telemetry_mode = "off"

    serving = load_settings(ServeSettings)
    own = load_settings(settings_cls)
    try:
        orchestrator = serving.orchestrator
        local = local_caller(serving) if args.stdio else None
    except CredentialError as error:
        fail(str(error))
    if not args.stdio and orchestrator is None:
        fail(HTTP_AUTH_HELP)
    stopping = stopping or Stopping()
    try:
        known = [*secrets(own)]
        configure_logging(
            serving.log_level,
            secrets=[s.get_secret_value() if isinstance(s, SecretStr) else s for s in known if s],
        )
        bound = serving.clients if not args.stdio else [local] if local is not None else []
        zones = bound_zones(serving.agents, [c.binding for c in bound if c.binding is not None])
        server = build(own)
    except ConfigError as error:
        fail(str(error))
    if args.stdio:
        if local is not None:
            bind_local_client(server, local, zones=zones)
            logger.info("serving %s over stdio for %s", name, local.binding)
        else:
            logger.info("serving %s over stdio", name)
        Trimmer().trim()
        server.run("stdio", show_banner=False)
        return
    assert orchestrator is not None
    _serve_http(
        server, serving, orchestrator, stopping, zones, name=name, default_port=default_port
    )


def local_caller(settings: ServeSettings) -> Caller | None:
    """Whom a stdio serve speaks for (``MESH_STDIO_AGENT`` and ``MESH_STDIO_USER``): None
    when neither is set; CredentialError when only one is, or one is malformed."""
    agent, user = settings.stdio_agent, settings.stdio_user
    if agent is None and user is None:
        return None
    if agent is None or user is None:
        raise CredentialError(
            "MESH_STDIO_AGENT and MESH_STDIO_USER go together: set both (the agent and your "
            "Telegram user id) or neither"
        )
    try:
        binding = Binding.parse(agent, user)
    except CredentialError as error:
        raise CredentialError(f"MESH_STDIO_AGENT/MESH_STDIO_USER: {error}") from None
    return Caller(settings.stdio_client, frozenset({READ, PRODUCER}), binding)


def bound_zones(fleet: Path, bindings: Sequence[Binding]) -> dict[str, str]:
    """The time zone of each agent a client is bound to, from the fleet file: none when no
    client is bound or the file is not there (the clients' own zones stand); ConfigError
    when it cannot be read or lacks a bound agent."""
    if not bindings or not fleet.is_file():
        return {}
    zones = agent_zones(fleet)
    for binding in bindings:
        if binding.agent not in zones:
            raise ConfigError(
                f"{fleet}: no agent {binding.agent!r}, which a client is bound to (MESH_CLIENTS "
                f"or MESH_STDIO_AGENT): bind it to one of {', '.join(sorted(zones))}, or add "
                "the agent"
            )
    return {agent: zone.key for agent, zone in zones.items()}


def _serve_http(
    server: FastMCP[Any],
    settings: ServeSettings,
    orchestrator: str,
    stopping: Stopping,
    zones: Mapping[str, str],
    *,
    name: str,
    default_port: int,
) -> None:
    """``orchestrator``: the digest of the orchestrator's credential for this server;
    ``zones``: the time zones of the agents clients are bound to, where known."""
    trimmer = Trimmer()
    try:
        peers = settings.all_peers
    except CredentialError as error:
        fail(str(error))
    try:
        app = build_http_app(
            server,
            token=orchestrator,
            clients=settings.clients,
            peers=peers,
            allowed_hosts=settings.allowed_hosts,
            max_body_bytes=settings.max_body_bytes,
            body_timeout_s=settings.body_timeout_s,
            on_request=trimmer.request_seen,
            zones=zones,
        )
    except CredentialError as error:
        fail(f"MESH_CLIENTS is invalid: {error}")
    if settings.clients:
        logger.info("clients besides the orchestrator: %s", ", ".join(describe(settings.clients)))
    if peers:
        logger.info("servers relaying their clients: %s", ", ".join(p.name for p in peers))
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
        timeout_graceful_shutdown=GRACE_S,
        loop="asyncio",
        # httptools plus what uvicorn lacks: a request-head deadline and size, a connection cap.
        http=protocol_with(
            Limits(
                header_timeout_s=settings.header_timeout_s,
                max_connections=settings.max_connections,
            )
        ),
        ws="none",
    )

    class _Server(Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            # Started: what building the server freed goes back to the system, and so
            # does what requests free, from time to time (meshkit.process_memory).
            self._trimmer = asyncio.get_running_loop().create_task(trimmer.keep_trimmed())

        # uvicorn has no public "a stop was asked" hook: handle_exit is what its signal
        # handlers call (pinned by tests/meshkit/test_library_seams.py).
        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            super().handle_exit(sig, frame)
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                return
            loop.call_soon_threadsafe(stopping.stop)  # not from inside the signal handler

    served = _Server(config)
    stop_with_exit_0()
    served.run()
    if not served.started:
        raise SystemExit(3)


def stop_with_exit_0() -> None:
    """A stop asked for (SIGTERM from ``docker stop``, Ctrl-C) and done ends the process
    with exit 0. uvicorn serves with its own handlers and, once it has shut down gracefully,
    puts the previous handlers back and raises the signal it caught again, so that the
    default action would end the process by that signal (exit 143 for SIGTERM): a clean
    stop would read as a failure to Docker and systemd. These are the handlers it puts
    back: requests in flight have been answered by then (or given ``GRACE_S``)."""

    def stopped(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(0)

    for number in (signal.SIGTERM, signal.SIGINT):
        signal.signal(number, stopped)


def describe(clients: Iterable[ClientCredential]) -> list[str]:
    return [
        f"{client.name} ({'+'.join(client.scopes)}, for {client.binding})" for client in clients
    ]
