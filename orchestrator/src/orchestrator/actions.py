"""Pending actions, seen from the orchestrator: stage proposals, act on taps.

    turn ─► proposals in producer tools' results ─► pending_actions.stage (one batch)
         ─► reply: the model's text, each change's summary (the server's words, not the
            model's), and buttons
    tap  ─► answer it ─► approve / cancel (pending-actions decides, atomically)
         ─► <server>.confirm_<kind>(payload, approval) ─► complete / fail
         ─► the message edited to show each outcome; the conversation told

No model is involved in a tap. Double taps, taps after cancel or expiry, and forged
data get a clear answer and never a second execution: pending-actions lets one
approval through, and the confirm tool performs an action id once.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.abc
from pydantic import ValidationError

from meshkit.proposals import Proposal
from meshkit.tool_classes import CONFIRM, PRODUCER
from orchestrator.callbacks import Tap, decode, encode
from orchestrator.connection import ToolInfo
from orchestrator.conversation import Conversation
from orchestrator.registry import Registry, ToolOutcome
from orchestrator.replies import Button, Reply

logger = logging.getLogger(__name__)

PENDING_ACTIONS = "pending_actions"
NO_LONGER_ACTIVE = "That button is no longer active."
UNAVAILABLE = "I can't reach the confirmations service right now; nothing was changed. Try again."
NOT_STAGED = (
    "⚠️ I could not put this up for your confirmation (the confirmations service is "
    "unavailable), so nothing will change. Ask me again in a moment."
)
FULL_TEXT_LIMIT = 3500  # above this the reply went out in parts: an edit shows the list only
MARKS = {
    "pending": "•",
    "executing": "⏳",
    "done": "✅",
    "cancelled": "❌",
    "expired": "⌛",
    "failed": "⚠️",
}
OPEN = frozenset({"pending", "executing"})

Answer = Callable[[str], Coroutine[Any, Any, None]]
Edit = Callable[[Reply], Coroutine[Any, Any, None]]
Record = dict[str, Any]


def proposals_of(outcomes: Sequence[tuple[ToolInfo, ToolOutcome]]) -> list[tuple[str, Proposal]]:
    """The (server, proposal) pairs a turn's producer tools returned, in call order."""
    found = []
    for tool, outcome in outcomes:
        if tool.tool_class != PRODUCER or not outcome.ok or outcome.structured is None:
            continue
        try:
            found.append((tool.server, Proposal.model_validate(outcome.structured)))
        except ValidationError as error:
            logger.warning("%s returned no valid proposal: %s", tool.qualified, error)
    return found


@dataclass(frozen=True)
class Decision:
    ok: bool
    action_id: str
    batch_id: str
    state: str
    summary: str
    reason: str
    server: str
    kind: str
    payload: dict[str, Any]
    approval: str

    @classmethod
    def of(cls, record: Record) -> Decision:
        return cls(
            ok=bool(record.get("ok")),
            action_id=str(record.get("action_id") or ""),
            batch_id=str(record.get("batch_id") or ""),
            state=str(record.get("state") or "unknown"),
            summary=str(record.get("summary") or ""),
            reason=str(record.get("reason") or ""),
            server=str(record.get("server") or ""),
            kind=str(record.get("kind") or ""),
            payload=dict(record.get("payload") or {}),
            approval=str(record.get("approval") or ""),
        )


@dataclass(frozen=True)
class Outcome:
    """How an approved action went, known before pending-actions has recorded it."""

    action_id: str
    state: str  # done | failed | executing (no answer: left to resume)
    fields: Record  # result or error, as in pending-actions' view
    note: str  # for the conversation ("" = nothing to tell)
    record: tuple[str, Record] | None = None  # the pending-actions call that records it


def _overlay(views: list[Record], outcomes: list[Outcome]) -> list[Record]:
    """The batch as fetched, with the outcomes that may not be recorded yet."""
    known = {o.action_id: o for o in outcomes}
    merged = []
    for view in views:
        outcome = known.get(str(view.get("action_id")))
        merged.append(
            view if outcome is None else {**view, "state": outcome.state, **outcome.fields}
        )
    return merged


class ActionDesk:
    def __init__(self, registry: Registry, conversation: Conversation) -> None:
        self._registry = registry
        self._conversation = conversation

    async def stage(
        self,
        agent: str,
        chat_id: str,
        user_id: str | None,
        text: str,
        proposals: list[tuple[str, Proposal]],
    ) -> Reply:
        """The reply for a turn that proposed changes: one batch, summaries, buttons."""
        batch_id: str | None = None
        views: list[Record] = []
        for server, proposal in proposals:
            arguments: Record = {
                "agent": agent,
                "chat_id": chat_id,
                "server": server,
                "proposal": proposal.model_dump(mode="json"),
                "batch_text": text,
            }
            if batch_id is not None:
                arguments["batch_id"] = batch_id
            if user_id is not None:
                arguments["user_id"] = user_id
            staged = await self._call("stage", arguments)
            if staged is None:
                # Those staged so far stay pending until they expire; no button reaches them.
                return Reply(f"{text}\n\n{NOT_STAGED}")
            batch_id = str(staged["batch_id"])
            views.append(
                {
                    "action_id": staged["action_id"],
                    "summary": proposal.summary,
                    "confirm_label": proposal.confirm_label,
                    "cancel_label": proposal.cancel_label,
                    "state": "pending",
                }
            )
        assert batch_id is not None
        return render(text, batch_id, views)

    async def tap(  # noqa: PLR0917 (who, what, and the two ways back)
        self, agent: str, chat_id: str, user_id: str, data: str, answer: Answer, edit: Edit
    ) -> None:
        """Do what a button says, once.

        ``answer`` stops the button's spinner with a short notice, as soon as
        pending-actions has decided; ``edit`` gets the tapped message's new content (not
        called when the tap concerns nothing of this chat's). Only approve (which answers
        with the batch), the confirm tool and the edit wait for each other: answering runs
        beside them; recording the outcomes and telling the conversation follow the edit.
        (A crash before they are recorded leaves the actions executing: a later tap
        resumes them, and the confirm tool, which performs an action id once, answers
        with its first result.)
        """
        tap = decode(data)
        if tap is None:
            await answer(NO_LONGER_ACTIVE)
            return
        decided = await self._decide(tap, user_id, chat_id)
        if decided is None:
            await answer(UNAVAILABLE)
            return
        decisions, batch = decided
        async with anyio.create_task_group() as beside:
            beside.start_soon(answer, notice(tap, decisions))
            if batch is None:
                return  # nothing of this chat's (or nothing at all): leave the message alone
            if not any(d.ok for d in decisions) and any(
                a.get("state") == "executing" for a in batch["actions"]
            ):
                return  # another tap is at work on it: its edit shows how it ends
            outcomes = [
                await self._execute(decision)
                for decision in decisions
                if decision.ok and tap.verb == "confirm"
            ]
            views = _overlay(list(batch["actions"]), outcomes)
            await edit(render(str(batch.get("text") or ""), str(batch["batch_id"]), views))
            for outcome in outcomes:
                if outcome.record is not None:
                    beside.start_soon(self._call, *outcome.record)
            told = [o.note for o in outcomes if o.note] + [
                f"The user cancelled: {d.summary}"
                for d in decisions
                if d.ok and tap.verb == "cancel"
            ]
            if told:
                note = {"type": "message", "role": "developer", "content": "\n".join(told)}
                beside.start_soon(self._conversation.append, agent, chat_id, [note])

    async def _decide(
        self, tap: Tap, user_id: str, chat_id: str
    ) -> tuple[list[Decision], Record | None] | None:
        """The decisions, and the batch as it stands after them (None: nothing found)."""
        who = {"user_id": user_id, "chat_id": chat_id}
        if tap.scope == "action":
            tool = "approve" if tap.verb == "confirm" else "cancel"
            record = await self._call(tool, {"action_id": tap.target, **who})
            return None if record is None else ([Decision.of(record)], record.get("batch"))
        tool = "approve_batch" if tap.verb == "confirm" else "cancel_batch"
        record = await self._call(tool, {"batch_id": tap.target, **who})
        if record is None:
            return None
        return [Decision.of(item) for item in record.get("decisions", [])], record.get("batch")

    async def _execute(self, decision: Decision) -> Outcome:
        """Run the approved action's confirm tool; how it went, to be recorded."""
        name = f"confirm_{decision.kind}"
        tool = self._registry.find(decision.server, name)
        action = decision.action_id
        if tool is None and self._registry.has_server(decision.server):
            # Down, or no such tool yet: left executing, a later tap resumes it.
            logger.warning(
                "%s.%s unavailable; action %s left to resume", decision.server, name, action
            )
            return Outcome(action, "executing", {}, "")
        if tool is None or tool.tool_class != CONFIRM:
            error = (
                f"the {decision.server} server is not configured"
                if tool is None
                else f"{decision.server}.{name} is not a confirm tool"
            )
            note = f"Failed: {decision.summary} ({error})"
            failed = ("fail", {"action_id": action, "error": error})
            return Outcome(action, "failed", {"error": error}, note, failed)
        outcome = await self._registry.call(
            tool, {"payload": decision.payload, "approval": decision.approval}
        )
        if outcome.ok:
            result = outcome.structured or {"message": outcome.output}
            note = f"The user confirmed and it is done: {decision.summary} ({message_of(result)})"
            done = ("complete", {"action_id": action, "result": result})
            return Outcome(action, "done", {"result": result}, note, done)
        if not outcome.answered:
            # It may or may not have happened: left executing; a later tap resumes it and
            # the confirm tool, which performs an action id once, settles it.
            logger.warning("action %s: %s got no answer; left to resume", action, name)
            return Outcome(action, "executing", {}, "")
        error = error_of(outcome.output)
        note = f"The user confirmed but it failed: {decision.summary} ({error})"
        failed = ("fail", {"action_id": action, "error": error})
        return Outcome(action, "failed", {"error": error}, note, failed)

    async def _call(self, name: str, arguments: Record) -> Record | None:
        tool = self._registry.find(PENDING_ACTIONS, name)
        if tool is None:
            logger.warning("%s.%s is unavailable (server down or missing)", PENDING_ACTIONS, name)
            return None
        outcome = await self._registry.call(tool, arguments)
        if not outcome.ok:
            logger.warning("%s.%s failed: %s", PENDING_ACTIONS, name, outcome.output[:300])
            return None
        return outcome.structured or {}


def render(text: str, batch_id: str, actions: list[Record]) -> Reply:
    """The message for a batch: the text, a line per action, buttons for the pending ones."""
    many = len(actions) > 1
    lines = []
    for number, action in enumerate(actions, start=1):
        state = str(action.get("state"))
        head = f"{MARKS.get(state, '•')} {f'{number}. ' if many else ''}{action.get('summary')}"
        lines.append(head + _outcome(action))
    listing = "\n".join(lines)
    body = (
        f"{text}\n\n{listing}" if text and len(text) + len(listing) < FULL_TEXT_LIMIT else listing
    )
    # An action left executing (its confirm tool did not answer) keeps its buttons: a
    # later tap resumes it, and its confirm tool settles it once.
    open_ = [(n, a) for n, a in enumerate(actions, start=1) if a.get("state") in OPEN]
    rows = []
    for number, action in open_:
        prefix = f"{number}. " if many else ""
        action_id = str(action["action_id"])
        rows.append(
            [
                Button(
                    f"{prefix}{action['confirm_label']}",
                    encode(Tap("action", "confirm", action_id)),
                ),
                Button(
                    f"{prefix}{action['cancel_label']}", encode(Tap("action", "cancel", action_id))
                ),
            ]
        )
    pending = [a for _, a in open_ if a.get("state") == "pending"]
    if len(pending) > 1:
        rows.append(
            [
                Button(f"✅ Confirm all {len(pending)}", encode(Tap("batch", "confirm", batch_id))),
                Button("❌ Cancel all", encode(Tap("batch", "cancel", batch_id))),
            ]
        )
    return Reply(body, rows)


def notice(tap: Tap, decisions: list[Decision]) -> str:
    """The few words shown when a tap is answered."""
    ok = [d for d in decisions if d.ok]
    if tap.scope == "action":
        decision = decisions[0] if decisions else None
        if decision is None or decision.state == "unknown":
            return NO_LONGER_ACTIVE
        if decision.ok:
            return (
                "Confirmed: on it." if tap.verb == "confirm" else "Cancelled: nothing will change."
            )
        return decision.reason or f"Nothing to do: it is {decision.state}."
    if not ok:
        return "Nothing left to do here." if decisions else NO_LONGER_ACTIVE
    if tap.verb == "confirm":
        return f"Confirmed {len(ok)}: on it."
    return f"Cancelled {len(ok)}: nothing will change."


def message_of(result: Record) -> str:
    return str(result.get("message") or "done")


def error_of(output: str) -> str:
    try:
        parsed = json.loads(output)
    except json.JSONDecodeError:
        return output[:300]
    return str(parsed.get("error", output))[:300] if isinstance(parsed, dict) else output[:300]


def _outcome(action: Record) -> str:
    state = action.get("state")
    if state == "done":
        return f" — {message_of(dict(action.get('result') or {}))}"
    if state == "failed":
        return f" — failed: {action.get('error') or 'unknown error'}"
    if state == "cancelled":
        return " — cancelled"
    if state == "expired":
        return " — expired, nothing was done"
    if state == "executing":
        return " — not finished yet: tap Confirm again to retry"
    return ""
