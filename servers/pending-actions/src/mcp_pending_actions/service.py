"""Pending actions: decide on each once, record how it ended (staging: staging.py).

    stage ──► pending ──approve──► executing ──complete──► done
                 │                     └───────fail──────► failed
                 ├──cancel──► cancelled
                 ├──ttl─────► expired
                 └──never shown (a client's, its chat refused it: notices.py)──► failed

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
- Every decision (who, how: tap or expiry), execution and failure is a ledger entry written
  in the transaction of the state change (ledger.py). ``approve(grant=True)`` on a kind the
  agent's rule offers a grant for records the grant in that transaction too (grants.py).
- ``action_status`` is what a client follows: an action of another agent, user or server is
  not found; it says when the proposal's message reached the user's chat (``shown_at``),
  and while it has not, why the last try failed (``not_shown``).
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from mcp_pending_actions import grants, ledger, notices, views
from mcp_pending_actions.checks import Tap, check_present, check_size, new_id, shown_there, yours
from mcp_pending_actions.errors import UnknownAction, UnknownBatch, UnknownGrant, WrongState
from mcp_pending_actions.policies import FleetPolicies
from mcp_pending_actions.rows import ActionRow, Change
from mcp_pending_actions.settings import PendingSettings
from mcp_pending_actions.store import PendingStore, expired
from meshkit.proposals import ACTION_ID, ApprovalSigner
from meshkit.wire.pending_actions import (
    ActionList,
    ActionStatus,
    ActionView,
    BatchDecisions,
    BatchView,
    Decision,
    Event,
    Grant,
    Grants,
    History,
    Ledger,
    LedgerEvent,
    State,
)

BATCH_ID = re.compile(r"bat_[0-9a-f]{12}")
GRANT_ID = re.compile(r"grt_[0-9a-f]{12}")
DecidedT = TypeVar("DecidedT", Decision, BatchDecisions)
EXPIRY_DETAIL = "its time to decide ran out"
RESUME_DETAIL = "approved again: the previous approval was never completed"
Decide = Callable[[ActionRow, str, float], Awaitable[Decision]]  # (settled row, user, now)


class PendingActions:
    def __init__(
        self,
        settings: PendingSettings,
        store: PendingStore,
        signer: ApprovalSigner,
        policies: FleetPolicies,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._settings = settings
        self._store = store
        self._signer = signer
        self._policies = policies
        self._clock = clock

    async def approve(self, action_id: str, tap: Tap, *, grant: bool = False) -> Decision:
        """pending → executing, with an approval token for the confirm tool; with ``grant``
        (and a rule that offers one), later changes of the kind need no tap for a while."""
        decide = self._approve_and_grant if grant else self._approve
        decision = await self._decide(decide, action_id, tap)
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
        return await self._finish(action_id, change, "executed", _outcome(result))

    async def fail(self, action_id: str, error: str) -> ActionView:
        """executing → failed, keeping why."""
        check_present(error=error)
        change = Change(State.EXECUTING, State.FAILED, at=self._clock(), error=error, detail=error)
        return await self._finish(action_id, change, "failed", error)

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

    async def action_status(
        self, action_id: str, agent: str, user_id: str, server: str
    ) -> ActionStatus:
        """The action as its client may follow it: only this agent's, user's and server's."""
        row = await self._store.action(action_id) if ACTION_ID.fullmatch(action_id) else None
        if row is None or (row.agent, row.user_id, row.server) != (agent, user_id, server):
            raise UnknownAction(f"There is no action {action_id[:100]!r} of yours here.")
        row = await self._settle(row, self._clock())
        shown = await self._store.read(lambda db: notices.delivery(db, row.batch_id))
        status = ActionStatus.model_validate(row, from_attributes=True)
        not_shown = shown.not_shown if row.state == State.PENDING else None
        return status.model_copy(update={"shown_at": shown.shown_at, "not_shown": not_shown})

    async def list_grants(self, agent: str, user_id: str) -> Grants:
        """The user's running grants with the agent, the soonest to end first."""
        check_present(agent=agent, user_id=user_id)
        now = self._clock()

        def read(db: sqlite3.Connection) -> list[Grant]:
            grants.sweep(db, now)
            return [grants.view(row) for row in grants.listed(db, agent, user_id, now)]

        return Grants(grants=await self._store.transact(read))

    async def end_grant(self, grant_id: str, agent: str, user_id: str) -> Grant:
        """End the user's running grant now: the next change of its kind asks again."""
        check_present(agent=agent, user_id=user_id)
        now = self._clock()

        def write(db: sqlite3.Connection) -> Grant | None:
            grants.sweep(db, now)
            ended = grants.end(db, grant_id, agent, user_id, now)
            return None if ended is None else grants.view(ended)

        ended = await self._store.transact(write) if GRANT_ID.fullmatch(grant_id) else None
        if ended is None:
            raise UnknownGrant(f"There is no running grant {grant_id[:100]!r} of yours.")
        return ended

    async def audit(self, agent: str, user_id: str, limit: int) -> Ledger:
        """The user's last ``limit`` ledger entries with the agent, newest last."""
        check_present(agent=agent, user_id=user_id)
        now = self._clock()
        await self._store.expire_due(now, EXPIRY_DETAIL)

        def read(db: sqlite3.Connection) -> Ledger:
            grants.sweep(db, now)
            found = ledger.entries(db, agent=agent, user_id=user_id, limit=limit)
            return Ledger(entries=found)

        return await self._store.transact(read)

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

    async def _approve_and_grant(self, row: ActionRow, user_id: str, now: float) -> Decision:
        rule = self._policies.rule(row.agent, row.server, row.kind)
        # Only where the buttons offered one (row.grant_s): never on a proposal staged to be
        # asked each time (a tap-only kind, stage with ask), whatever the rule says now.
        offered = row.grant_s is not None
        if (
            not offered
            or row.state != State.PENDING
            or rule.policy != "ask"
            or rule.grant_s is None
        ):
            return await self._approve(row, user_id, now)
        grant = grants.for_tap(row, user_id, new_id("grt_"), now, rule.grant_s)
        decision = await self._approve(row, user_id, now, then=lambda db: grants.give(db, grant))
        return (
            decision.model_copy(update={"granted_until": grant.until}) if decision.ok else decision
        )

    async def _approve(
        self,
        row: ActionRow,
        user_id: str,
        now: float,
        then: Callable[[sqlite3.Connection], object] | None = None,
    ) -> Decision:
        lease_start = now - self._settings.executing_lease_s
        if row.state == State.PENDING:
            change = Change(
                State.PENDING,
                State.EXECUTING,
                at=now,
                actor=user_id,
                live_at=now,
                decided_by="tap",
            )
            outcome_text = "confirmed"
        elif row.state == State.EXECUTING and row.updated_at <= lease_start:
            change = Change(
                State.EXECUTING,
                State.EXECUTING,
                at=now,
                actor=user_id,
                detail=RESUME_DETAIL,
                idle_since=lease_start,
                decided_by="tap",
            )
            outcome_text = "confirmed again (the first approval was never completed)"
        else:
            return views.refused(row)

        def record(db: sqlite3.Connection, done: ActionRow) -> None:
            decided = ledger.about(
                done, "decided", now, user_id=user_id, how="tap", outcome=outcome_text
            )
            ledger.append(db, decided)
            if then is not None:
                then(db)

        outcome = await self._store.change(row.action_id, change, then=record)
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
        change = Change(
            State.PENDING, State.CANCELLED, at=now, actor=user_id, live_at=now, decided_by="tap"
        )
        decided = ledger.about(row, "decided", now, user_id=user_id, how="tap", outcome="cancelled")
        outcome = await self._store.change(
            row.action_id, change, then=lambda db, _: ledger.append(db, decided)
        )
        if outcome is None:
            return views.not_found(row.action_id)
        if not outcome.changed:
            return views.refused(await self._settle(outcome.row, now))
        return views.decision(outcome.row, ok=True)

    async def _finish(
        self, action_id: str, change: Change, event: LedgerEvent, said: str
    ) -> ActionView:
        await self._settle(await self._existing(action_id), change.at)

        def record(db: sqlite3.Connection, row: ActionRow) -> None:
            ledger.append(db, ledger.about(row, event, change.at, outcome=said))

        outcome = await self._store.change(action_id, change, then=record)
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
        change = Change(
            State.PENDING,
            State.EXPIRED,
            at=now,
            detail=EXPIRY_DETAIL,
            due_at=now,
            decided_by="expiry",
        )
        outcome = await self._store.change(
            row.action_id, change, then=lambda db, done: ledger.append(db, expired(done, now))
        )
        return row if outcome is None else outcome.row


def _check_tap(tap: Tap) -> None:
    check_present(
        agent=tap.agent, chat_id=tap.chat_id, message_key=tap.message_key, user_id=tap.user_id
    )


def _outcome(result: dict[str, Any]) -> str:
    """A confirm tool's result in one line for the ledger: its message, else 'done'."""
    for field in ("message", "summary", "detail"):
        value = result.get(field)
        if isinstance(value, str) and value.strip():
            return value.strip()[:500]
    return "done"
