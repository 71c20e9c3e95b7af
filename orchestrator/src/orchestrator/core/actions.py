"""Pending actions, seen from the orchestrator: stage proposals, act on taps.

    turn ─► proposals in producer tools' results ─► pending-actions stage (one batch,
            bound to the key its reply will be sent under: ``reply:<update id>``)
         ─► reply: the model's text, each change's summary (the server's words, not the
            model's), and buttons ─► sent (and its update acked, in the same call)
         (a change the agent's policy or a running grant allows comes back executing,
          with its approval: it is done at once, and its line says so and why)
    tap  ─► approve / cancel (pending-actions decides, atomically, and only for the
            agent, chat and message key the buttons were sent under: telegram-io reports
            the key of the tapped message) ─► its notice
         ─► <server>.confirm_<kind>(payload, approval)
         ─► the message edited to show each outcome, with the notice (one call)
         ─► complete / fail; the conversation told

Each line names the server that makes the change ("Shopping proposes: …", "✅ Shopping: …"),
and a tap calls the confirm tool of that server only: the one the action was staged for
(pending-actions keeps it), and only when its registry entry allows it to propose.

No model is involved in a tap. Double taps, taps after cancel or expiry, and forged
data get a clear answer and never a second execution: pending-actions lets one
approval through, and the confirm tool performs an action id once. A tap on a button
already acted on ("already done", "cancelled") edits nothing: its message shows it. A
tap carrying the id of an action shown elsewhere (another bot, chat or message) is "not
found": answered, nothing done, no message edited. Since a batch is bound to its key
before its message is sent, no tap can come before the binding: nothing waits for one.
The pending-actions server is the registry's server with ``role: pending-actions``.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import anyio
from pydantic import BaseModel, ValidationError

from meshkit.tool_classes import CONFIRM
from meshkit.wire.pending_actions import (
    CHAT_CLIENT,
    ActionView,
    BatchDecisions,
    BatchView,
    Decision,
    Staged,
    State,
)
from meshkit.wire.proposals import Proposal
from meshkit.wire.usage import ALLOW_MORE, AllowedMore
from orchestrator.core.batches import Line, message_of, redrawn_text, render
from orchestrator.core.callbacks import Tap, decode
from orchestrator.core.consent_desk import Change, ConsentDesk, clock
from orchestrator.core.conversation import Conversation
from orchestrator.core.replies import Reply
from orchestrator.core.routes import TapContext, TapHandler
from orchestrator.core.usage import Meter
from orchestrator.mesh.errors import ToolCallError, ToolFailed
from orchestrator.mesh.registry import Registry
from orchestrator.mesh.roles import RoleClient

logger = logging.getLogger(__name__)

NO_LONGER_ACTIVE = "That button is no longer active."
UNAVAILABLE = "I can't reach the confirmations service right now; nothing was changed. Try again."
DENIED = "denied"  # what a line shows is the batch's: "not allowed by your policy"
NOT_STAGED = (
    "⚠️ I could not put this up for your confirmation (the confirmations service is "
    "unavailable), so nothing will change. Ask me again in a moment."
)

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Where:
    """Whose chat a turn's changes are staged for: the agent (its time zone, for the end
    of a grant), the chat, and the one user who may decide (None: anyone in the chat)."""

    agent: str
    chat: str
    user_id: str | None
    zone: str = "UTC"

    @property
    def user(self) -> str:
        return self.user_id or self.chat


@dataclass(frozen=True)
class Outcome:
    """How an approved action went, known before pending-actions has recorded it."""

    action_id: str
    state: str  # done | failed | executing (no answer: left to resume)
    result: dict[str, Any] | None = None
    error: str | None = None
    note: str = ""  # for the conversation ("" = nothing to tell)
    record: tuple[str, dict[str, Any]] | None = None  # the pending-actions call recording it
    granted: bool = False  # an "allow more" done: the meter counts it


def _overlay(views: list[ActionView], outcomes: list[Outcome]) -> list[Line]:
    """The batch as fetched, with the outcomes that may not be recorded yet."""
    known = {o.action_id: o for o in outcomes}
    lines = []
    for view in views:
        line, outcome = Line.of(view), known.get(view.action_id)
        if outcome is not None:
            line = replace(line, state=outcome.state, result=outcome.result, error=outcome.error)
        lines.append(line)
    return lines


class ActionDesk:
    def __init__(
        self,
        registry: Registry,
        conversation: Conversation,
        consent: ConsentDesk,
        zones: Mapping[str, str] | None = None,
        *,
        meter: Meter | None = None,
        granted: TapHandler | None = None,
    ) -> None:
        """``zones``: each agent's time zone, for the end of a grant a tap gives;
        ``meter`` learns the allowance a confirmed "allow more" grants, and ``granted``
        follows such a tap up (the message the cap held is answered)."""
        self._zones = zones or {}
        self._meter = meter
        self._granted = granted
        self._registry = registry
        self._conversation = conversation
        self._consent = consent
        self._pending = RoleClient(registry, "pending-actions")
        self._tapping: defaultdict[tuple[str, str], anyio.Lock] = defaultdict(anyio.Lock)

    async def stage(
        self,
        where: Where,
        text: str,
        proposals: list[tuple[str, Proposal]],
        *,
        key: str | None,
        ask: bool = False,
    ) -> Reply:
        """The reply for a turn that proposed changes: one batch, summaries, buttons. The
        buttons act in the message sent under ``key`` only (None: nowhere). A change the
        agent's policy or a running grant allows is done now, before the reply: its line
        says it is done, and why without a tap. ``ask``: every change waits for a tap,
        whatever the policy or grants say (more allowance)."""
        batch_id: str | None = None
        lines: list[Line] = []
        done: list[Outcome] = []
        for server, proposal in proposals:
            staged = await self._stage_one(where, server, proposal, text, batch_id, key, ask)
            if staged is None:
                # Those staged so far stay pending until they expire; no button reaches them.
                return Reply(f"{text}\n\n{NOT_STAGED}")
            if isinstance(staged, str):  # refused by the policy pending-actions read
                lines.append(Line("", server, proposal.summary, "", "", "denied"))
                continue
            batch_id = staged.batch_id
            line = Line(
                staged.action_id,
                server,
                proposal.summary,
                proposal.confirm_label,
                proposal.cancel_label,
                "pending",
                grant_s=staged.grant_s,
                detail=proposal.detail or "",
            )
            if staged.state == State.EXECUTING:
                by = f"Allowed without a tap (by {staged.decided_by or 'policy'})"
                outcome = await self.execute(_approved(staged, server, proposal), by=by)
                done.append(outcome)
                change = Change(where.agent, where.user, CHAT_CLIENT, server, proposal.kind)
                why = await self._consent.allowed(
                    change, staged.decided_by, where.zone, staged.granted_until
                )
                line = replace(
                    line, state=outcome.state, result=outcome.result, error=outcome.error,
                    allowed=why,
                )  # fmt: skip
            lines.append(line)
        await self.settled(where.agent, where.chat, done)
        return render(text, batch_id or "", lines)

    async def _stage_one(  # noqa: PLR0917 (one proposal, where it goes)
        self,
        where: Where,
        server: str,
        proposal: Proposal,
        text: str,
        batch_id: str | None,
        key: str | None,
        ask: bool = False,
    ) -> Staged | str | None:
        """Staged; a string saying why pending-actions refused it; None: no answer."""
        arguments: dict[str, Any] = {
            "agent": where.agent,
            "chat_id": where.chat,
            "server": server,
            "proposal": proposal.model_dump(mode="json"),
        }
        kept = redrawn_text(text)
        if kept:
            arguments["batch_text"] = kept
        if batch_id is not None:
            arguments["batch_id"] = batch_id
        elif key is not None:
            arguments["message_key"] = key
        if where.user_id is not None:
            arguments["user_id"] = where.user_id
        if ask:
            arguments["ask"] = True
        pending = self._pending.server
        if pending is None:
            return None
        try:
            return await self._registry.call_as(pending, "stage", arguments, Staged)
        except ToolFailed as refused:
            logger.info("stage of %s.%s refused: %s", server, proposal.kind, refused.message)
            return DENIED if "not allowed" in refused.message.lower() else None
        except ToolCallError as error:
            logger.warning("pending-actions: %s", error)
            return None

    async def tap(self, tap: TapContext) -> None:
        """Do what a button (``pa``, ``pb``) says, once, if it is on the message of this
        agent's chat sent under the key its batch was staged with (``tap.key``).

        ``tap.answer`` gives the notice as soon as pending-actions has decided;
        ``tap.settle`` redraws the tapped message (not when the tap concerns nothing of
        this chat's, or changed nothing), its last word. Taps in one chat are taken one at
        a time. Approve (which answers with the batch), the confirm tool and the redraw
        wait for each other; recording the outcomes and telling the conversation follow.
        (A crash before they are recorded leaves the actions executing: a later tap
        resumes them, and the confirm tool, which performs an action id once, answers
        with its first result.)
        """
        decoded = decode(tap.data)
        if decoded is None or tap.key is None:
            await tap.answer(NO_LONGER_ACTIVE)
            await tap.settle()
            return
        # A second button of a batch tapped while the first is at work decides and draws
        # from the state the first left: drawn from the same moment, the edit made last
        # would show one of the two as not done.
        async with self._tapping[(tap.agent, tap.chat)]:
            await self._tap(decoded, tap, tap.key)

    async def _tap(self, decoded: Tap, tap: TapContext, key: str) -> None:
        """The tap (``decoded``: what its button says), taken in the chat's turn."""
        where = {"agent": tap.agent, "chat_id": tap.chat, "message_key": key}
        decided = await self._decide(decoded, {"user_id": tap.user, **where})
        if decided is None:
            await tap.answer(UNAVAILABLE)
            await tap.settle()
            return
        decisions, batch = decided
        await tap.answer(notice(decoded, decisions, self._zones.get(tap.agent, "UTC")))
        if batch is None or (not any(d.ok for d in decisions) and not _redraws(decisions, batch)):
            await tap.settle()  # nothing shown in this message, or nothing to redraw
            return
        outcomes = [
            await self.execute(decision)
            for decision in decisions
            if decision.ok and decoded.confirms
        ]
        lines = _overlay(batch.actions, outcomes)
        await tap.settle(render(batch.text or "", batch.batch_id, lines, redraw=True))
        async with anyio.create_task_group() as after:
            for outcome in outcomes:
                if outcome.record is not None:
                    after.start_soon(self.record, *outcome.record)
            told = [o.note for o in outcomes if o.note] + [
                f"The user cancelled: {d.summary}"
                for d in decisions
                if d.ok and not decoded.confirms
            ]
            if told:
                after.start_soon(self.tell, tap.agent, tap.chat, told)
        if self._granted is not None and any(o.granted for o in outcomes):
            await self._granted(tap)

    async def _decide(
        self, tap: Tap, who: dict[str, str]
    ) -> tuple[list[Decision], BatchView | None] | None:
        """The decisions, and the batch as it stands after them (None: no answer)."""
        if tap.scope == "action":
            tool = "approve" if tap.confirms else "cancel"
            arguments: dict[str, Any] = {"action_id": tap.target, **who}
            if tap.verb == "grant":
                arguments["grant"] = True
            decision = await self._pending.call(tool, arguments, Decision)
            return None if decision is None else ([decision], decision.batch)
        tool = "approve_batch" if tap.confirms else "cancel_batch"
        batch = await self._pending.call(tool, {"batch_id": tap.target, **who}, BatchDecisions)
        return None if batch is None else (batch.decisions, batch.batch)

    async def settled(self, agent: str, chat: str, outcomes: list[Outcome]) -> None:
        """Outcomes of changes made without a tap: recorded, and the conversation told."""
        for outcome in outcomes:
            if outcome.record is not None:
                await self.record(*outcome.record)
        told = [o.note for o in outcomes if o.note]
        if told:
            await self.tell(agent, chat, told)

    async def tell(self, agent: str, chat: str, lines: list[str]) -> None:
        """A developer note in the conversation: what happened outside the model's turn."""
        note = {"type": "message", "role": "developer", "content": "\n".join(lines)}
        await self._conversation.append(agent, chat, [note])

    async def execute(self, decision: Decision, *, by: str = "The user confirmed") -> Outcome:
        """Run the approved action's confirm tool; how it went, to be recorded. ``by``
        says who decided, in the conversation's note."""
        server, action = decision.server or "", decision.action_id
        name = f"confirm_{decision.kind}"
        tool = self._registry.find(server, name)
        allowed = self._registry.proposes(server)
        if tool is None and allowed:
            # Down, or no such tool yet: left executing, a later tap resumes it.
            logger.warning("%s.%s unavailable; action %s left to resume", server, name, action)
            return Outcome(action, "executing")
        if tool is None or tool.tool_class != CONFIRM or not allowed:
            error = _not_performed(self._registry, server, name)
            logger.warning("action %s: %s", action, error)
            note = f"Failed: {decision.summary} ({error})"
            return Outcome(action, "failed", error=error, note=note, record=_fail(action, error))
        try:
            done = await self._registry.call(
                tool, {"payload": decision.payload or {}, "approval": decision.approval or ""}
            )
        except ToolCallError as failure:
            if not failure.answered:
                # It may or may not have happened: left executing; a later tap resumes it
                # and the confirm tool, which performs an action id once, settles it.
                logger.warning(
                    "action %s: %s got no answer (%s); left to resume", action, name, failure
                )
                return Outcome(action, "executing")
            error = failure.message if isinstance(failure, ToolFailed) else failure.detail
            error = error[:300]
            note = f"{by} but it failed: {decision.summary} ({error})"
            return Outcome(action, "failed", error=error, note=note, record=_fail(action, error))
        result = done.structured or {"message": done.text}
        memory = self._registry.server_for("memory")
        granted = (server, decision.kind) == (memory, ALLOW_MORE)
        if granted and self._meter is not None:
            _learn(self._meter, result)
        note = f"{by} and it is done: {decision.summary} ({message_of(result)})"
        record = ("complete", {"action_id": action, "result": result})
        return Outcome(action, "done", result=result, note=note, record=record, granted=granted)

    async def record(self, tool: str, arguments: dict[str, Any]) -> None:
        await self._pending.call(tool, arguments, ActionView)


def _learn(meter: Meter, result: dict[str, Any]) -> None:
    """A confirmed "allow more": the meter counts its grant from now on."""
    try:
        meter.granted(AllowedMore.model_validate(result).grant)
    except ValidationError as error:
        logger.warning("allow_more confirmed without a readable grant: %s", error)


def _approved(staged: Staged, server: str, proposal: Proposal) -> Decision:
    """A change approved at stage (policy, grant) as a tap's decision would carry it."""
    return Decision(
        ok=True,
        action_id=staged.action_id,
        batch_id=staged.batch_id,
        state=State.EXECUTING,
        summary=staged.summary,
        server=server,
        kind=proposal.kind,
        payload=staged.payload,
        approval=staged.approval,
    )


def _redraws(decisions: list[Decision], batch: BatchView) -> bool:
    """Whether a tap that changed nothing redraws its message: only when an action it names
    has expired (the message may still show its buttons). Done, failed or cancelled, it
    was decided by a tap on this message whose edit shows it already (an identical edit is
    refused by Telegram); executing, another tap is at work on it and its edit shows how
    it ends."""
    if any(a.state == State.EXECUTING for a in batch.actions):
        return False
    return any(d.state == State.EXPIRED for d in decisions)


def _not_performed(registry: Registry, server: str, name: str) -> str:
    """Why an approved action's confirm tool is not called: its server is not in the
    registry, may not make changes (``proposes``), or its tool is no confirm tool."""
    if not registry.has_server(server):
        return f"the {server} server is not configured"
    if not registry.proposes(server):
        return (
            f"the {server} server may not make changes (its registry entry does not set "
            "proposes: true)"
        )
    return f"{server}.{name} is not a confirm tool"


def _fail(action_id: str, error: str) -> tuple[str, dict[str, Any]]:
    return ("fail", {"action_id": action_id, "error": error})


def notice(tap: Tap, decisions: list[Decision], zone: str = "UTC") -> str:  # noqa: PLR0911
    """The few words shown when a tap is answered (``zone``: the end of a grant it gave)."""
    ok = [d for d in decisions if d.ok]
    if tap.scope == "action":
        decision = decisions[0] if decisions else None
        if decision is None or decision.state == "unknown":
            return NO_LONGER_ACTIVE
        if decision.ok and tap.verb == "grant":
            until = decision.granted_until
            allowed = "" if until is None else f" until {clock(until, zone)}"
            return f"Confirmed: on it. Changes like it need no tap{allowed} (/grants ends it)."
        if decision.ok:
            return (
                "Confirmed: on it." if tap.verb == "confirm" else "Cancelled: nothing will change."
            )
        return decision.reason or f"Nothing to do: it is {decision.state}."
    if not ok:
        return "Nothing left to do here." if decisions else NO_LONGER_ACTIVE
    if tap.confirms:
        return f"Confirmed {len(ok)}: on it."
    return f"Cancelled {len(ok)}: nothing will change."
