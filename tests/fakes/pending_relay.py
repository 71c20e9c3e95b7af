"""The real pending-actions over HTTP, as a server with change kinds reaches it at
``MESH_RELAY_URL`` with its own relay credential (``MESH_RELAY_TOKEN``), and the user's tap
on what it shows: enough to follow a bound client's proposal from the producer call to the
change performed once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
from fastmcp import Client, FastMCP
from pydantic import SecretStr

from fakes.approval_keys import SIGNING_ENV, write_signing_key
from fakes.clock import Clock
from fakes.serving import serving
from fakes.tool_calls import call
from mcp_pending_actions.server import build_server as build_pending
from mcp_pending_actions.settings import PendingSettings
from meshkit.bindings import bind_local_client
from meshkit.credentials import Caller, PeerCredential, token_digest
from meshkit.http import build_http_app
from meshkit.settings import ApprovalSettings

S = TypeVar("S", bound=ApprovalSettings)

ORCHESTRATOR_TOKEN = "orchestrator-token-pending-relay-0123456"


@dataclass(frozen=True)
class Relayed:
    """pending-actions in process (``server``) and over HTTP (``url``, for ``token``)."""

    server: FastMCP[Any]
    url: str
    token: SecretStr

    def configure(self, settings: S) -> S:
        """A server's ``settings`` with MESH_RELAY_URL and MESH_RELAY_TOKEN set to this."""
        return settings.model_copy(update={"relay_url": self.url, "relay_token": self.token})

    async def tap_confirm(self, user_id: str, agent: str) -> dict[str, Any]:
        """The user taps Confirm under the one proposal shown: the decision, with the
        payload and a fresh approval for the confirm tool."""
        async with Client(self.server) as actions:
            [shown] = (await call(actions, "next_notices", consumer="o", run="r"))["notices"]
            [action] = shown["batch"]["actions"]
            tap = {"user_id": user_id, "chat_id": user_id, "agent": agent}
            return dict(
                await call(
                    actions,
                    "approve",
                    action_id=action["action_id"],
                    message_key=shown["key"],
                    **tap,
                )
            )

    async def complete(self, action_id: str, result: dict[str, Any]) -> None:
        """What the orchestrator records once the confirm tool answered."""
        async with Client(self.server) as actions:
            await call(actions, "complete", action_id=action_id, result=result)


@asynccontextmanager
async def relayed(
    tmp_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch, server: str
) -> AsyncIterator[Relayed]:
    """pending-actions admitting ``server``'s relay credential as ``MESH_PEERS`` does (every
    agent: ask)."""
    monkeypatch.setenv(SIGNING_ENV, str(write_signing_key(tmp_path / "signing")))
    settings = PendingSettings(data_dir=tmp_path / "pending", agents=tmp_path / "no-agents.yaml")
    pending = build_pending(settings, clock=clock)
    token = f"{server}-relay-token-0123456789abcdef"
    peer = PeerCredential(server, token_digest(token))
    app = build_http_app(
        pending,
        token=SecretStr(ORCHESTRATOR_TOKEN),
        peers=[peer],
        allowed_hosts=[],
        max_body_bytes=1 << 20,
    )
    async with serving(app) as base:
        yield Relayed(pending, f"{base}/mcp", SecretStr(token))


@asynccontextmanager
async def bound_stdio(server: FastMCP[Any], caller: Caller) -> AsyncIterator[Client[Any]]:
    """``server`` as a client bound to a person sees it over stdio (MESH_STDIO_AGENT/_USER)."""
    bind_local_client(server, caller)
    async with Client(server) as client:
        yield client
