"""Staging a proposal under the agent's consent policy: from its chat, or from a client.

    policy deny ──► a tool error, never staged (the ledger keeps the denial)
    policy auto, or a running grant ──► executing at once (decided_by policy | grant)
    policy ask ──► pending (with grant_s when a tap may allow the kind for a while)
    a tap-only kind (``Proposal.tap_only``: its server declares it, e.g. memory's
    "allow more"), or ask=True (the orchestrator's own proposals that must be asked) ──►
        pending, whatever the policy (auto) or a running grant says, and no grant offered,
        from the chat or from a client alike; a deny still denies (asking never allows more
        than the policy does); the ledger's "proposed" entry says it was always asked

- ``stage`` (the orchestrator, for its own conversation, client ``chat``): an approved
  proposal comes back with its approval and payload, for the orchestrator to execute now.
- ``screen`` (the orchestrator, when its own reading of the policy denies a proposal its
  model got): pending-actions decides with its own rule; a denial is written to the ledger
  and said, anything else is left for ``stage`` (nothing recorded).
- ``stage_for_client`` (a server, for a client bound to an agent and a user): a batch in
  the user's private chat (chat id = user id), shown in the message sent under
  ``consent:<batch id>``; a ``show`` notice (pending) or an ``execute`` notice (approved)
  is queued in the same transaction, and waiting ``next_notices`` calls wake. A pending
  proposal joins the client's batch whose notice was not handed out yet (a burst becomes
  one message with Confirm all), and is refused, nothing staged, when
  ``PENDING_CLIENT_MAX_PENDING`` of the client's proposals already wait for the user: both
  read in the transaction that adds it, so concurrent relays and restarts keep the bound.
  A refusal at the bound is not in the ledger (nothing was proposed; a runaway client
  would grow it without end), only in the log.

A grant covers only what it was given for: the same agent, user, client, server and kind,
and only while the agent's rule still offers grants (an edited policy holds at once). Every
staging writes its ledger entries (proposed, and decided when approved at once) in the
transaction that stores the action.
"""

from __future__ import annotations

import logging
import re
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from mcp_pending_actions import grants, ledger, notices
from mcp_pending_actions.checks import check_present, check_size, new_id
from mcp_pending_actions.errors import InvalidRequest, NotAllowed, TooManyPending, UnknownBatch
from mcp_pending_actions.ledger import Draft
from mcp_pending_actions.notices import NoticeBoard
from mcp_pending_actions.policies import FleetPolicies
from mcp_pending_actions.rows import ActionRow, BatchRow, NoticeRow
from mcp_pending_actions.settings import PendingSettings
from mcp_pending_actions.store import PendingStore, insert
from meshkit.proposals import SERVER_PATTERN, ApprovalSigner, payload_hash
from meshkit.text import readable
from meshkit.wire.pending_actions import (
    CHAT_CLIENT,
    ClientStaged,
    How,
    Screened,
    Staged,
    State,
)
from meshkit.wire.proposals import Proposal

BATCH_ID = re.compile(r"bat_[0-9a-f]{12}")
SERVER_NAME = re.compile(SERVER_PATTERN)
CLIENT_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,31}")  # a credential's name (meshkit.credentials)
USER_ID = re.compile(r"[1-9][0-9]{0,19}")  # a Telegram user id: their private chat's id too
logger = logging.getLogger(__name__)
ALWAYS_ASKED = "always asked: this kind needs a tap each time, whatever a policy or grant says"


@dataclass(frozen=True)
class Verdict:
    """What the policy (or a grant) makes of a proposal."""

    state: State
    how: How | None = None  # policy or grant, when approved at once
    grant_s: int | None = None  # pending: the grant a tap may give
    granted_until: float | None = None  # approved by a grant: when it ends
    asked: bool = False  # pending because the kind always needs a tap (tap-only, ask)


class Staging:
    def __init__(
        self,
        settings: PendingSettings,
        store: PendingStore,
        signer: ApprovalSigner,
        policies: FleetPolicies,
        board: NoticeBoard,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._settings = settings
        self._store = store
        self._signer = signer
        self._policies = policies
        self._board = board
        self._clock = clock

    async def stage(
        self,
        agent: str,
        chat_id: str,
        server: str,
        proposal: Proposal,
        *,
        batch_id: str | None = None,
        user_id: str | None = None,
        batch_text: str | None = None,
        message_key: str | None = None,
        ask: bool = False,
    ) -> Staged:
        """Store a proposal of the agent's own conversation, in a new batch or in
        ``batch_id``; a new batch takes taps from the message sent under ``message_key``.
        ``ask`` (or a tap-only proposal): pending for a tap, neither the policy nor a grant
        approves it."""
        check_present(
            agent=agent,
            chat_id=chat_id,
            user_id=user_id,
            batch_text=batch_text,
            message_key=message_key,
        )
        _check_server(server)
        check_size("payload", proposal.payload)
        now = self._clock()
        verdict = await self._verdict(agent, user_id, CHAT_CLIENT, server, proposal, now, ask=ask)
        new_batch = None
        if batch_id is None:
            batch_id = new_id("bat_")
            new_batch = BatchRow(batch_id, agent, chat_id, batch_text, now, message_key)
        else:
            await self._check_batch(batch_id, agent, chat_id, message_key)
        action = self._row(agent, chat_id, user_id, CHAT_CLIENT, server, proposal, batch_id)
        action = _decided(action, verdict, now)
        await self._store.add(
            action,
            new_batch=new_batch,
            text=batch_text,
            then=lambda db, row: _record(db, row, asked=verdict.asked),
        )
        staged = Staged(
            action_id=action.action_id,
            batch_id=batch_id,
            state=action.state,
            expires_at=action.expires_at,
            summary=action.summary,
            decided_by=verdict.how,
            grant_s=verdict.grant_s,
            granted_until=verdict.granted_until,
        )
        if action.state != State.EXECUTING:
            return staged
        approval = self._signer.mint(
            action.action_id, server, action.kind, action.payload, agent=agent
        )
        return staged.model_copy(update={"approval": approval, "payload": action.payload})

    async def screen(
        self, agent: str, server: str, proposal: Proposal, user_id: str | None = None
    ) -> Screened:
        """Hold a proposal of the agent's conversation against the agent's rule now: a
        denial is written to the ledger (as ``stage`` writes it) and said; anything else is
        not staged here and leaves no trace (``stage`` decides it when it is staged)."""
        check_present(agent=agent, user_id=user_id)
        _check_server(server)
        try:
            await self._verdict(agent, user_id, CHAT_CLIENT, server, proposal, self._clock())
        except NotAllowed as refused:
            return Screened(denied=True, reason=str(refused))
        return Screened(denied=False)

    async def stage_for_client(
        self, server: str, agent: str, user_id: str, client: str, proposal: Proposal
    ) -> ClientStaged:
        """Store a bound client's proposal for its user, and queue what the orchestrator
        must bring to the user's chat: in the client's batch not handed out yet, if any.
        At ``client_max_pending`` of the client's proposals waiting for the user, refused
        (nothing staged, nothing in the ledger)."""
        _check_server(server)
        _check_client(client)
        if not USER_ID.fullmatch(user_id):
            raise InvalidRequest(f"user_id {user_id[:40]!r} is not a Telegram user id.")
        if not self._policies.knows(agent):
            raise InvalidRequest(f"There is no agent {agent[:64]!r} in the fleet.")
        check_size("payload", proposal.payload)
        now = self._clock()
        verdict = await self._verdict(agent, user_id, client, server, proposal, now)
        executing = verdict.state == State.EXECUTING
        most = self._settings.client_max_pending

        def write(db: sqlite3.Connection) -> ActionRow:
            batch_id = None
            if not executing:  # counted and joined in the transaction that adds it
                waiting = _waiting(db, agent, user_id, client, now)
                if waiting >= most:
                    raise TooManyPending(
                        f"Not proposed: {waiting} of your proposals already wait for the "
                        f"user's decision on Telegram, the most that may wait at once. Nothing "
                        "was staged. Let the user decide on those first (get_action follows "
                        "each), then propose this again."
                    )
                batch_id = notices.open_batch(db, agent, user_id, client)
            joined = batch_id is not None
            batch_id = batch_id or new_id("bat_")
            key = notices.show_key(batch_id)
            text = f"From {readable(client)}:"
            action = self._row(agent, user_id, user_id, client, server, proposal, batch_id)
            action = _decided(action, verdict, now)
            batch = None if joined else BatchRow(batch_id, agent, user_id, text, now, key)
            insert(db, action, new_batch=batch, text=None if joined else text)
            _record(db, action, asked=verdict.asked)
            if not joined:
                notices.queue(db, _notice(action, key, executing, now))
            return action

        try:
            action = await self._store.transact(write)
        except TooManyPending:
            logger.info("%s proposed past its bound for %s@%s: refused", client, user_id, agent)
            raise
        self._board.queued()
        return ClientStaged(
            action_id=action.action_id,
            state=action.state,
            decided_by=verdict.how,
            expires_at=action.expires_at,
            summary=action.summary,
        )

    async def _verdict(  # noqa: PLR0917
        self,
        agent: str,
        user_id: str | None,
        client: str,
        server: str,
        proposal: Proposal,
        now: float,
        *,
        ask: bool = False,
    ) -> Verdict:
        """The rule in force, applied; a denial is written to the ledger and raised.
        ``ask``, or a tap-only proposal: pending with no grant offered, unless denied."""
        rule = self._policies.rule(agent, server, proposal.kind)
        if rule.policy == "deny":
            denied = Draft(
                at=now,
                event="denied",
                agent=agent,
                user_id=user_id,
                client=client,
                server=server,
                kind=proposal.kind,
                summary=proposal.summary,
                how="policy",
                outcome="not allowed by the agent's policy",
                payload_sha256=payload_hash(proposal.payload),
            )
            await self._store.transact(lambda db: ledger.append(db, denied))
            raise NotAllowed(
                f"Not allowed by {agent}'s policy: {server}.{proposal.kind} changes are never "
                "made here, and nothing was proposed. Tell the user it is not allowed."
            )
        if ask or proposal.tap_only:
            return Verdict(State.PENDING, asked=True)
        if rule.policy == "auto":
            return Verdict(State.EXECUTING, how="policy")
        if rule.grant_s is None:
            return Verdict(State.PENDING)
        if user_id is not None:
            found = await self._store.read(
                lambda db: grants.running(db, agent, user_id, client, server, proposal.kind, now)
            )
            if found is not None:
                return Verdict(State.EXECUTING, how="grant", granted_until=found.until)
        return Verdict(State.PENDING, grant_s=rule.grant_s)

    async def _check_batch(
        self, batch_id: str, agent: str, chat_id: str, message_key: str | None
    ) -> None:
        batch = await self._store.batch(batch_id) if BATCH_ID.fullmatch(batch_id) else None
        if batch is None:
            raise UnknownBatch(
                f"There is no batch {batch_id!r}: leave batch_id out to start a new batch."
            )
        if (batch.agent, batch.chat_id) != (agent, chat_id):
            raise InvalidRequest(
                f"Batch {batch_id} belongs to another agent or chat: leave batch_id out "
                "to start a new batch."
            )
        if message_key is not None and message_key != batch.message_key:
            raise InvalidRequest(
                f"Batch {batch_id} is shown under another message key: leave "
                "message_key out to add to it, or batch_id out to start a new batch."
            )

    def _row(  # noqa: PLR0917
        self,
        agent: str,
        chat_id: str,
        user_id: str | None,
        client: str,
        server: str,
        proposal: Proposal,
        batch_id: str,
    ) -> ActionRow:
        now = self._clock()
        return ActionRow(
            action_id=new_id("act_"),
            batch_id=batch_id,
            agent=agent,
            chat_id=chat_id,
            user_id=user_id,
            server=server,
            kind=proposal.kind,
            summary=proposal.summary,
            payload=proposal.payload,
            confirm_label=proposal.confirm_label,
            cancel_label=proposal.cancel_label,
            state=State.PENDING,
            created_at=now,
            expires_at=now + min(proposal.ttl_s, self._settings.max_ttl_s),
            updated_at=now,
            client=client,
        )


def _waiting(db: sqlite3.Connection, agent: str, user_id: str, client: str, now: float) -> int:
    """How many of the client's proposals wait for the user's decision (not expired)."""
    (count,) = db.execute(
        "SELECT COUNT(*) FROM actions WHERE agent = ? AND chat_id = ? AND state = ?"
        " AND user_id = ? AND client = ? AND expires_at > ?",
        (agent, user_id, State.PENDING, user_id, client, now),
    ).fetchone()
    return int(count)


def _notice(action: ActionRow, key: str, executing: bool, now: float) -> NoticeRow:
    """What the orchestrator must do for a client's new batch: show it, or execute it."""
    return NoticeRow(
        key=notices.done_key(action.action_id) if executing else key,
        type="execute" if executing else "show",
        agent=action.agent,
        chat_id=action.chat_id,
        user_id=action.chat_id,
        client=action.client,
        batch_id=action.batch_id,
        action_id=action.action_id,
        created_at=now,
    )


def _decided(row: ActionRow, verdict: Verdict, now: float) -> ActionRow:
    """The new row as the verdict leaves it."""
    if verdict.state == State.PENDING:
        return replace(row, grant_s=verdict.grant_s)
    return replace(row, state=verdict.state, decided_by=verdict.how, decided_at=now)


def _record(db: sqlite3.Connection, row: ActionRow, *, asked: bool) -> None:
    """The ledger entries of a staging: proposed (saying so when it is always asked), and
    decided when approved at once."""
    outcome = ALWAYS_ASKED if asked else None
    ledger.append(db, ledger.about(row, "proposed", row.created_at, outcome=outcome))
    if row.decided_by is not None:
        decided = ledger.about(
            row, "decided", row.created_at, how=row.decided_by, outcome="confirmed"
        )
        ledger.append(db, decided)


def _check_server(server: str) -> None:
    if not SERVER_NAME.fullmatch(server):
        raise InvalidRequest(
            f"server {server!r} is not a server name: lowercase letters, digits and "
            "underscores, starting with a letter, at most 40 characters."
        )


def _check_client(client: str) -> None:
    if client == CHAT_CLIENT or not CLIENT_NAME.fullmatch(client):
        raise InvalidRequest(
            f"client {client[:40]!r} is not a client's name: its credential's name "
            "(lowercase letters, digits and dashes), never 'chat'."
        )
