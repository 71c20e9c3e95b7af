"""The consent kernel: a server declares each kind of change once, meshkit does the rest.

A server with changes builds one :class:`Consent` (:meth:`Consent.from_settings`: its name,
pending-actions' public key, the relay ``meshkit.relay.relay_from(settings)``) and declares
each :class:`ChangeKind`: its name, payload model (with ``agent``, the agent whose data it
changes), title, result model, executor, and optionally a summary, button labels, a
destructive flag, a staleness check and ``tap_only`` (every proposal of it waits for the
user's tap: its proposals carry ``tap_only``, and pending-actions then ignores an ``auto``
policy and grants for it).
Its producer tools build the payload (or the whole ``Proposal``) and return
``await consent.propose(kind, payload)`` (or ``consent.offer(proposal)``); meshkit gives it
``confirm_<kind>(payload, approval)`` (the orchestrator's tool, unchanged: approval checked for
the payload's agent, payload read as its model, the staleness check, the executor, the result
read as its model) and the clients-only read tool ``get_action(action_id)``. The executor
performs the change once: in a store's confirm-once transaction
(``meshkit.proposals.confirm_once``, which records the result; a replay returns it), e.g.
``lambda change, approval: store.confirm(approval, perform, at=clock())``::

    consent = Consent.from_settings(mcp, "echo", settings)
    consent.declare(ChangeKind("shout", ShoutPayload, Shouted, title="Shout",
                               summary=lambda p: f"Shout {p.text!r}", execute=store.shout))

    @mcp.tool(**producer(title="Propose a shout", context=("agent",)))
    async def propose_shout(text: Text, agent: ContextAgent = "default") -> Proposal:
        return await consent.propose("shout", ShoutPayload(agent=agent, text=text))

Who proposes decides what happens to a proposal (``meshkit.scopes.current_caller``): for the
orchestrator (or an unfiltered local client) it is returned as it is, and the orchestrator
stages it in the chat; for a client bound to a person (``MESH_CLIENTS``, a bound stdio
server) it is staged at once through pending-actions (``stage_for_client``: the person's
agent's policy applies, and it is queued for the user's Telegram chat, "From <client>"), and
the client gets the proposal with ``staged`` (the action to follow with ``get_action``, which
says when the chat has it, or why it failed) and a note for its model that says queued, not
sent. Nothing blocks the client's call waiting for a human, or for Telegram. Past
``PENDING_CLIENT_MAX_PENDING`` proposals waiting for the user, the client is refused in words.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any, Generic, TypeVar

from fastmcp import FastMCP
from pydantic import BaseModel, Field

from meshkit.approval_keys import public_key
from meshkit.errors import ModelError
from meshkit.params import ContextAgent, ContextUser
from meshkit.proposals import Approval, Approvals, Confirmed, approved_payload, payload_agent
from meshkit.relay import Stager, relay_from
from meshkit.scopes import current_caller
from meshkit.settings import ApprovalSettings
from meshkit.tool_classes import confirm, read
from meshkit.wire.pending_actions import ActionStatus, State
from meshkit.wire.proposals import ALLOWED_NOTE, QUEUED_NOTE, Proposal

logger = logging.getLogger(__name__)

P = TypeVar("P", bound=BaseModel)

Payload = Annotated[
    dict[str, Any], Field(description="The proposal's payload, exactly as it was proposed")
]
ApprovalToken = Annotated[
    str,
    Field(
        max_length=500,
        description="The approval token pending-actions minted when the user tapped Confirm",
    ),
]
ActionId = Annotated[
    str,
    Field(
        pattern=r"^act_[0-9a-f]{12}$",
        max_length=16,
        description="The action_id the proposal's 'staged' gave",
    ),
]

NO_RELAY = (
    "This server cannot ask the user for you: it has no way to reach pending-actions "
    "(MESH_RELAY_URL is not set; the operator can set it). Nothing was proposed."
)


@dataclass(frozen=True)
class ChangeKind(Generic[P]):
    """One kind of change a server proposes and, after a tap, performs.

    ``execute(change, approval)`` performs it once (see the module docstring) and returns the
    stored result, which ``result`` reads with ``replayed`` added. ``stale(change)`` runs
    before it on every confirm and raises a ``ModelError`` when the change can no longer be
    made as proposed (a replay must pass it: check what the change needs, not its effect).
    ``tap_only``: never done without the user's tap ("allow more": an assistant never raises
    its own allowance); every proposal of the kind says so to pending-actions, which then
    asks whatever a policy (``auto``) or a running grant says and offers no grant (a
    ``deny`` still denies).
    """

    name: str
    payload: type[P]
    result: type[BaseModel]
    title: str
    execute: Callable[[P, Approval], Awaitable[Confirmed]]
    summary: Callable[[P], str] | None = None
    confirm_label: str = "✅ Confirm"
    cancel_label: str = "❌ Cancel"
    destructive: bool = False
    stale: Callable[[P], Awaitable[None]] | None = None
    description: str = ""  # more for the confirm tool's docstring
    tap_only: bool = False


class Consent:
    """A server's change kinds: their confirm tools, proposals and the client branch."""

    def __init__(
        self, mcp: FastMCP[Any], server: str, approvals: Approvals, *, relay: Stager | None
    ) -> None:
        """``server``: the registry name approvals are minted for; ``relay``: None when
        pending-actions cannot be reached from here (bound clients are told so)."""
        self._mcp = mcp
        self._server = server
        self._approvals = approvals
        self._relay = relay
        self._kinds: dict[str, ChangeKind[Any]] = {}
        self._add_get_action()

    @classmethod
    def from_settings(
        cls,
        mcp: FastMCP[Any],
        server: str,
        settings: ApprovalSettings,
        *,
        clock: Callable[[], float] = time.time,
    ) -> Consent:
        """As every server builds it: approvals checked with pending-actions' public key
        (``meshkit.approval_keys.public_key``), the relay ``relay_from(settings)``."""
        approvals = Approvals(public_key(settings), clock=clock)
        return cls(mcp, server, approvals, relay=relay_from(settings))

    def declare(self, *kinds: ChangeKind[Any]) -> None:
        """Add each kind's ``confirm_<kind>`` tool."""
        for kind in kinds:
            if kind.name in self._kinds:
                raise ValueError(f"change kind {kind.name!r} is declared twice")
            self._kinds[kind.name] = kind
            self._add_confirm(kind)

    async def propose(
        self,
        name: str,
        change: BaseModel,
        *,
        summary: str | None = None,
        detail: str | None = None,
    ) -> Proposal:
        """The producer result for ``change`` (see :meth:`offer`); ``summary`` overrides the
        kind's; ``detail``: the whole change, for a person to read in full."""
        kind = self._kind(name)
        if not isinstance(change, kind.payload):
            raise TypeError(f"{name}: expected a {kind.payload.__name__}")
        text = summary or (kind.summary(change) if kind.summary is not None else None)
        if not text:
            raise ValueError(f"change kind {name!r} has no summary: declare one or give it")
        proposal = Proposal(
            kind=name,
            summary=text,
            payload=change.model_dump(),
            confirm_label=kind.confirm_label,
            cancel_label=kind.cancel_label,
            tap_only=kind.tap_only,
            detail=detail,
        )
        return await self.offer(proposal)

    async def offer(self, proposal: Proposal) -> Proposal:
        """``proposal`` as its caller gets it: unchanged for the orchestrator; for a client
        bound to a person, staged for that person (``staged`` set), or a ModelError saying
        why not (no relay, a policy that denies it, pending-actions unreachable)."""
        kind = self._kind(proposal.kind)
        approved_payload(kind.payload, kind.name, proposal.payload)  # a server's own mistake
        if kind.tap_only and not proposal.tap_only:  # whoever built it, the kind's word holds
            proposal = proposal.model_copy(update={"tap_only": True})
        caller = current_caller()
        if caller is None or caller.binding is None:
            return proposal
        binding = caller.binding
        if payload_agent(proposal.payload) != binding.agent:
            raise ModelError(
                f"forbidden (403): this client speaks for agent {binding.agent} only. "
                "Nothing was proposed."
            )
        if self._relay is None:
            raise ModelError(NO_RELAY)
        staged = await self._relay.stage(
            self._server, binding.agent, binding.user, caller.name, proposal
        )
        logger.info(
            "%s proposed %s.%s for %s: %s (%s)",
            caller.name,
            self._server,
            kind.name,
            binding,
            staged.action_id,
            staged.state,
        )
        note = QUEUED_NOTE if staged.state == State.PENDING else ALLOWED_NOTE
        return proposal.model_copy(update={"staged": staged, "note": note})

    async def confirm(self, name: str, payload: dict[str, Any], approval: str) -> BaseModel:
        """Perform an approved change of kind ``name`` once; ApprovalRefused without a token
        pending-actions signed for exactly this payload, server, kind and agent."""
        kind = self._kind(name)
        granted = self._approvals.check(
            approval, self._server, name, payload, agent=payload_agent(payload)
        )
        change = approved_payload(kind.payload, name, payload)
        if kind.stale is not None:
            await kind.stale(change)
        done = await kind.execute(change, granted)
        return kind.result.model_validate({**done.result, "replayed": done.replayed})

    async def action(self, action_id: str, agent: str, user: str) -> ActionStatus:
        """A proposal's state, for the agent and user who made it (``get_action``)."""
        if self._relay is None:
            raise ModelError(NO_RELAY.replace("Nothing was proposed.", "Nothing to follow."))
        if not user:
            raise ModelError("Only a client bound to a person can follow its proposals.")
        return await self._relay.status(self._server, agent, user, action_id)

    def _kind(self, name: str) -> ChangeKind[Any]:
        kind = self._kinds.get(name)
        if kind is None:
            raise ValueError(f"{self._server} declares no change kind {name!r}")
        return kind

    def _add_confirm(self, kind: ChangeKind[Any]) -> None:
        async def perform(payload: Payload, approval: ApprovalToken) -> Any:
            return await self.confirm(kind.name, payload, approval)

        perform.__annotations__ = {
            "payload": Payload,
            "approval": ApprovalToken,
            "return": kind.result,
        }
        perform.__doc__ = " ".join(
            part
            for part in (
                f"Perform an approved {kind.name} proposal.",
                kind.description,
                "Needs the user's approval token.",
            )
            if part
        )
        options = confirm(title=kind.title, destructive=kind.destructive)
        self._mcp.tool(name=f"confirm_{kind.name}", **options)(perform)

    def _add_get_action(self) -> None:
        @self._mcp.tool(
            **read(title="A proposal's state", context=("agent", "user"), clients_only=True)
        )
        async def get_action(
            action_id: ActionId, agent: ContextAgent = "default", user: ContextUser = ""
        ) -> ActionStatus:
            """How a change you proposed stands: pending (waiting for the user's tap on
            Telegram), executing, done (with its result), failed (with why), cancelled or
            expired."""
            return await self.action(action_id, agent, user)
