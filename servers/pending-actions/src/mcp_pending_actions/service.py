"""Pending actions: stage proposals, decide on each once, record how it ended.

    stage ──► pending ──approve──► executing ──complete──► done
                 │                     └───────fail──────► failed
                 ├──cancel──► cancelled
                 └──ttl─────► expired

- Every change is one conditional update in the store, so of a double tap, a tap after
  cancel or a tap after expiry, only a change whose condition still holds happens.
- A pending action past its expiry is marked expired as soon as a call touches it, and by
  the sweep that starts ``list_pending`` and ``get_batch``. Nothing is deleted.
- ``approve`` and ``cancel`` answer with a Decision, never an error: a refusal says why in
  words the user can read.
- A tap acts only where it was shown: a batch is staged with the idempotency key its
  message is sent under (``message_key``, known before the send), and a tap names its
  agent, chat and the key of the message it came from (telegram-io reports it with the
  tap). An action of another agent, chat, message or user, or of a batch with no key, is
  "not found", exactly like an unknown id, so nothing about it leaks. Since the key is
  kept before the message exists, no tap can come before it.
- An action left executing longer than the lease (the orchestrator crashed between approve
  and complete) may be approved again from its chat: a fresh token, marked ``resumed``.
  Confirm tools record the action id, so the change still happens at most once.
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from mcp_pending_actions import views
from mcp_pending_actions.checks import Tap, check_present, check_size, new_id, shown_there, yours
from mcp_pending_actions.errors import InvalidRequest, UnknownAction, UnknownBatch, WrongState
from mcp_pending_actions.models import (
    ActionList,
    ActionView,
    BatchDecisions,
    BatchView,
    Decision,
    Event,
    History,
    Staged,
    State,
)
from mcp_pending_actions.rows import ActionRow, BatchRow, Change
from mcp_pending_actions.settings import PendingSettings
from mcp_pending_actions.store import PendingStore
from meshkit.proposals import ACTION_ID, SERVER_PATTERN, ApprovalSigner, Proposal

BATCH_ID = re.compile(r"bat_[0-9a-f]{12}")
DecidedT = TypeVar("DecidedT", Decision, BatchDecisions)
SERVER_NAME = re.compile(SERVER_PATTERN)
EXPIRY_DETAIL = "its time to decide ran out"
RESUME_DETAIL = "approved again: the previous approval was never completed"
Decide = Callable[[ActionRow, str, float], Awaitable[Decision]]  # (settled row, user, now)


class PendingActions:
    def __init__(
        self,
        settings: PendingSettings,
        store: PendingStore,
        signer: ApprovalSigner,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._settings = settings
        self._store = store
        self._signer = signer
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
    ) -> Staged:
        """Store a proposal as a pending action, in a new batch or in ``batch_id``; a new
        batch takes taps from the message sent under ``message_key`` only."""
        check_present(
            agent=agent,
            chat_id=chat_id,
            user_id=user_id,
            batch_text=batch_text,
            message_key=message_key,
        )
        if not SERVER_NAME.fullmatch(server):
            raise InvalidRequest(
                f"server {server!r} is not a server name: lowercase letters, digits and "
                "underscores, starting with a letter, at most 40 characters."
            )
        check_size("payload", proposal.payload)
        now = self._clock()
        new_batch = None
        if batch_id is None:
            batch_id = new_id("bat_")
            new_batch = BatchRow(batch_id, agent, chat_id, batch_text, now, message_key)
        else:
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
        action = ActionRow(
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
        )
        await self._store.add(action, new_batch=new_batch, text=batch_text)
        return Staged(
            action_id=action.action_id,
            batch_id=batch_id,
            state=action.state,
            expires_at=action.expires_at,
            summary=action.summary,
        )

    async def approve(self, action_id: str, tap: Tap) -> Decision:
        """pending → executing, with an approval token for the confirm tool."""
        decision = await self._decide(self._approve, action_id, tap)
        return await self._with_batch(decision)

    async def cancel(self, action_id: str, tap: Tap) -> Decision:
        """pending → cancelled."""
        decision = await self._decide(self._cancel, action_id, tap)
        return await self._with_batch(decision)

    async def approve_batch(self, batch_id: str, tap: Tap) -> BatchDecisions:
        """Approve each pending action of the batch, each on its own."""
        decisions = await self._decide_batch(self._approve, batch_id, tap)
        return await self._with_batch(decisions)

    async def cancel_batch(self, batch_id: str, tap: Tap) -> BatchDecisions:
        """Cancel each pending action of the batch, each on its own."""
        decisions = await self._decide_batch(self._cancel, batch_id, tap)
        return await self._with_batch(decisions)

    async def _with_batch(self, decided: DecidedT) -> DecidedT:
        """The decision with its batch as it stands now, so the tapped message can be
        redrawn without another call; nothing for an action or batch not found."""
        found = decided.decisions if isinstance(decided, BatchDecisions) else decided.batch_id
        if not found or decided.batch_id is None:
            return decided
        found_batch = await self._store.batch_with_actions(decided.batch_id)
        if found_batch is None:
            return decided
        return decided.model_copy(update={"batch": views.batch(*found_batch)})

    async def complete(self, action_id: str, result: dict[str, Any]) -> ActionView:
        """executing → done, keeping what the confirm tool returned."""
        check_size("result", result)
        change = Change(State.EXECUTING, State.DONE, at=self._clock(), result=result)
        return await self._finish(action_id, change)

    async def fail(self, action_id: str, error: str) -> ActionView:
        """executing → failed, keeping why."""
        check_present(error=error)
        change = Change(State.EXECUTING, State.FAILED, at=self._clock(), error=error, detail=error)
        return await self._finish(action_id, change)

    async def list_pending(self, agent: str, chat_id: str) -> ActionList:
        """The chat's actions still waiting for a tap, oldest first."""
        check_present(agent=agent, chat_id=chat_id)
        now = self._clock()
        await self._store.expire_due(now, EXPIRY_DETAIL)
        rows = await self._store.live(agent, chat_id, now)
        return ActionList(actions=[views.view(row) for row in rows])

    async def get_batch(self, batch_id: str) -> BatchView:
        """The batch and its actions in staging order, to render the message from."""
        await self._store.expire_due(self._clock(), EXPIRY_DETAIL)
        found = (
            await self._store.batch_with_actions(batch_id) if BATCH_ID.fullmatch(batch_id) else None
        )
        if found is None:
            raise UnknownBatch(f"There is no batch {batch_id!r}.")
        return views.batch(*found)

    async def history(self, action_id: str) -> History:
        """Every state change of the action, oldest first."""
        await self._settle(await self._existing(action_id), self._clock())
        events = await self._store.events(action_id)
        return History(
            action_id=action_id,
            events=[Event.model_validate(event, from_attributes=True) for event in events],
        )

    async def _decide(self, decide: Decide, action_id: str, tap: Tap) -> Decision:
        _check_tap(tap)
        now = self._clock()
        row = await self._store.action(action_id) if ACTION_ID.fullmatch(action_id) else None
        batch = None if row is None else await self._store.batch(row.batch_id)
        if row is None or batch is None or not yours(row, batch, tap):
            return views.not_found(action_id)
        return await decide(await self._settle(row, now), tap.user_id, now)

    async def _decide_batch(self, decide: Decide, batch_id: str, tap: Tap) -> BatchDecisions:
        _check_tap(tap)
        now = self._clock()
        batch = await self._store.batch(batch_id) if BATCH_ID.fullmatch(batch_id) else None
        if batch is None or not shown_there(batch, tap):
            return BatchDecisions(batch_id=batch_id, decisions=[])
        decisions = []
        for row in await self._store.batch_actions(batch_id):  # staging order
            if yours(row, batch, tap):
                decisions.append(await decide(await self._settle(row, now), tap.user_id, now))
            else:
                decisions.append(views.not_found(row.action_id))
        return BatchDecisions(batch_id=batch_id, decisions=decisions)

    async def _approve(self, row: ActionRow, user_id: str, now: float) -> Decision:
        lease_start = now - self._settings.executing_lease_s
        if row.state == State.PENDING:
            change = Change(State.PENDING, State.EXECUTING, at=now, actor=user_id, live_at=now)
        elif row.state == State.EXECUTING and row.updated_at <= lease_start:
            change = Change(
                State.EXECUTING,
                State.EXECUTING,
                at=now,
                actor=user_id,
                detail=RESUME_DETAIL,
                idle_since=lease_start,
            )
        else:
            return views.refused(row)
        outcome = await self._store.change(row.action_id, change)
        if outcome is None:
            return views.not_found(row.action_id)
        if not outcome.changed:  # another call got there first
            return views.refused(await self._settle(outcome.row, now))
        done = outcome.row
        return views.decision(
            done,
            ok=True,
            payload=done.payload,
            approval=self._signer.mint(
                done.action_id, done.server, done.kind, done.payload, agent=done.agent
            ),
            resumed=change.from_state == State.EXECUTING,
        )

    async def _cancel(self, row: ActionRow, user_id: str, now: float) -> Decision:
        if row.state != State.PENDING:
            return views.refused(row)
        change = Change(State.PENDING, State.CANCELLED, at=now, actor=user_id, live_at=now)
        outcome = await self._store.change(row.action_id, change)
        if outcome is None:
            return views.not_found(row.action_id)
        if not outcome.changed:
            return views.refused(await self._settle(outcome.row, now))
        return views.decision(outcome.row, ok=True)

    async def _finish(self, action_id: str, change: Change) -> ActionView:
        await self._settle(await self._existing(action_id), change.at)
        outcome = await self._store.change(action_id, change)
        if outcome is None:
            raise UnknownAction(f"There is no action {action_id!r}.")
        if not outcome.changed:
            raise WrongState(
                f"Action {action_id} is {outcome.row.state}, not executing: nothing was "
                "recorded. Only an approved action can be completed or failed, once."
            )
        return views.view(outcome.row)

    async def _existing(self, action_id: str) -> ActionRow:
        row = await self._store.action(action_id) if ACTION_ID.fullmatch(action_id) else None
        if row is None:
            raise UnknownAction(f"There is no action {action_id!r}.")
        return row

    async def _settle(self, row: ActionRow, now: float) -> ActionRow:
        """The row, marked expired first if it is pending past its expiry."""
        if row.state != State.PENDING or row.expires_at > now:
            return row
        change = Change(State.PENDING, State.EXPIRED, at=now, detail=EXPIRY_DETAIL, due_at=now)
        outcome = await self._store.change(row.action_id, change)
        return row if outcome is None else outcome.row


def _check_tap(tap: Tap) -> None:
    check_present(
        agent=tap.agent, chat_id=tap.chat_id, message_key=tap.message_key, user_id=tap.user_id
    )
