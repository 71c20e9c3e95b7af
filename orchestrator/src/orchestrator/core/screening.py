"""A change the agent's policy denies, refused where the ledger is kept.

    producer result ─► the orchestrator's reading of the policy (agents.yaml, read at start)
        ├─ not deny ─► the model reads the proposal; it is staged after the turn (no call)
        └─ deny ─────► pending-actions.screen: its own rule decides (it reads the fleet file
                       again when it changes) ─► denied: the denial is in the ledger, the
                       model is told; not denied: the proposal goes on as any other

A plain turn makes no call here: only a proposal the orchestrator reads as denied, which is
rare, costs one. When pending-actions does not answer, the orchestrator's reading stands (the
model is told it is not allowed; the log says the ledger could not be told).
"""

from __future__ import annotations

import logging

from meshkit.wire.pending_actions import Screened
from meshkit.wire.proposals import Proposal
from orchestrator.mesh.registry import Registry
from orchestrator.mesh.roles import RoleClient

logger = logging.getLogger(__name__)


class Screen:
    def __init__(self, registry: Registry) -> None:
        self._pending = RoleClient(registry, "pending-actions")

    async def denied(
        self, agent: str, user_id: str | None, server: str, proposal: Proposal
    ) -> bool:
        """Whether ``server``'s ``proposal`` is denied for ``agent`` (and ``user_id``), as
        pending-actions decides and records it."""
        arguments: dict[str, object] = {
            "agent": agent,
            "server": server,
            "proposal": proposal.model_dump(mode="json"),
        }
        if user_id is not None:
            arguments["user_id"] = user_id
        screened = await self._pending.call("screen", arguments, Screened)
        if screened is None:
            logger.warning(
                "agent %s: %s.%s denied by the policy read at start; pending-actions did not "
                "answer, so the ledger does not have this denial",
                agent, server, proposal.kind,
            )  # fmt: skip
            return True
        return screened.denied
