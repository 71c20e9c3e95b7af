"""pending-actions' two relay tools as their contract says (``stage_for_client``,
``action_status``), served over HTTP: what a server with change kinds reaches at
``MESH_RELAY_URL`` when a client bound to a person proposes a change.

It records what it was asked and stages every proposal as pending (no policy, no Telegram):
enough to prove a server hands a bound client's proposal over, under its own name, and
changes nothing itself. The real server's staging is tested in tests/pending_actions.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from fastmcp import FastMCP

from fakes.serving import serving_in_thread
from meshkit.errors import ModelError
from meshkit.proposals import Proposal
from meshkit.wire.pending_actions import ActionStatus, ClientStaged, State

TTL_S = 3600


@dataclass
class Staged:
    server: str
    agent: str
    user_id: str
    client: str
    proposal: Proposal
    action_id: str


@dataclass
class PendingRelay:
    """The fake's state: every proposal staged, in order."""

    now: float
    staged: list[Staged] = field(default_factory=list)
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    def server(self) -> FastMCP[Any]:
        mcp: FastMCP[Any] = FastMCP("pending-actions")

        @mcp.tool
        async def stage_for_client(
            server: str, agent: str, user_id: str, client: str, proposal: Proposal
        ) -> ClientStaged:
            action_id = f"act_{next(self._ids):012x}"
            self.staged.append(Staged(server, agent, user_id, client, proposal, action_id))
            return ClientStaged(
                action_id=action_id,
                state=State.PENDING,
                expires_at=self.now + TTL_S,
                summary=proposal.summary,
            )

        @mcp.tool
        async def action_status(
            action_id: str, agent: str, user_id: str, server: str
        ) -> ActionStatus:
            for staged in self.staged:
                if (staged.action_id, staged.agent, staged.user_id, staged.server) == (
                    action_id,
                    agent,
                    user_id,
                    server,
                ):
                    return ActionStatus(
                        action_id=action_id,
                        state=State.PENDING,
                        summary=staged.proposal.summary,
                        server=server,
                        kind=staged.proposal.kind,
                        client=staged.client,
                        created_at=self.now,
                        expires_at=self.now + TTL_S,
                    )
            raise ModelError(f"No action {action_id} of yours.")

        return mcp


@contextmanager
def pending_relay(now: float) -> Iterator[tuple[PendingRelay, str]]:
    """The fake served on a loopback port, and its MCP URL (a server's MESH_RELAY_URL)."""
    fake = PendingRelay(now)
    with serving_in_thread(fake.server().http_app()) as base:
        yield fake, f"{base}/mcp"
