"""The agent speaks first: what a due firing of the scheduler becomes, and the taps and
commands that go with it.

    briefing  ─► Briefings.compose (parts by direct tool calls; the model writes, or the
                 template) ─► a message to the owner
    prompt    ─► a normal turn (the agent's tools, proposals with buttons, remembered) in
                 the owner's chat, its reply sent there
    reminder  ─► "⏰ <text>" with Done / Snooze 10 min / Snooze 1 h
              ─► scheduler.reminder_shown (the message it is in: its buttons act there only)
    tap on those buttons ─► scheduler.follow_up (once per firing, from that message), no
        model ─► edited (a second tap is answered and edits nothing)

The owner is the agent's first allowed user (a private chat's id is its user's id).
``/jobs`` lists the agent's jobs and reminders; ``/status`` gets the next firing of each job.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from datetime import datetime

import anyio

from meshkit.wire.scheduler import Firing, FiringKind, FollowedUp, FollowUp, Jobs, Shown
from orchestrator.core.actions import NO_LONGER_ACTIVE, Answer, Deliver, Edit
from orchestrator.core.briefing import Briefings
from orchestrator.core.callbacks import ReminderTap, decode_reminder, encode_reminder
from orchestrator.core.dispatch import Dispatcher, owner_of
from orchestrator.core.replies import Button, Reply
from orchestrator.core.turn import AgentRuntime
from orchestrator.mesh.errors import ToolCallError
from orchestrator.mesh.registry import Registry

logger = logging.getLogger(__name__)

SNOOZED_NOTICE = {
    "done": "Done ✅",
    "snooze_10": "Snoozed for 10 minutes",
    "snooze_60": "Snoozed for an hour",
}
UNAVAILABLE = "I can't reach the scheduler right now. Try again in a moment."
PROMPT_PREFIX = "(Scheduled: {name}) "


def reminder_reply(firing: Firing) -> Reply:
    text = f"⏰ {firing.payload.get('text', '')}"
    if firing.late:
        due = datetime.fromisoformat(firing.scheduled_at)
        text += f"\n(late: it was due {due:%a %-d %b, %H:%M})"
    choices: list[tuple[str, FollowUp]] = [
        ("✅ Done", "done"),
        ("💤 10 min", "snooze_10"),
        ("💤 1 h", "snooze_60"),
    ]
    buttons = [
        Button(label, encode_reminder(ReminderTap(outcome, firing.id)))
        for label, outcome in choices
    ]
    return Reply(text, [buttons])


class Proactive:
    def __init__(self, registry: Registry, dispatcher: Dispatcher) -> None:
        self._registry = registry
        self._dispatcher = dispatcher
        self._briefings = Briefings(registry)
        self.server = registry.server_for("scheduler")
        # Held from sending a reminder until the scheduler knows its message, so a tap that
        # comes back at once is not refused for a message not recorded yet.
        self._showing: defaultdict[tuple[str, str], anyio.Lock] = defaultdict(anyio.Lock)

    def install(self) -> None:
        """Give the dispatcher ``/jobs``, the reminders' taps and the lines of ``/status``."""
        self._dispatcher.extra_commands["/jobs"] = ("scheduled jobs and reminders", self.jobs)
        self._dispatcher.tap_handlers.append(self.tap)
        self._dispatcher.status_probes.append(self.status_lines)

    def runtime(self, agent: str) -> AgentRuntime | None:
        return self._dispatcher.agents.get(agent)

    async def handle(self, firing: Firing, deliver: Deliver) -> bool:
        """Deliver what ``firing`` says to its agent's owner; False when there is nobody
        to send it to (the firing is done all the same)."""
        runtime = self._dispatcher.agents.get(firing.agent)
        owner = None if runtime is None else owner_of(runtime)
        if runtime is None or owner is None:
            logger.warning(
                "firing %s: agent %s has no owner to tell; dropped", firing.key, firing.agent
            )
            return False
        kind: FiringKind = firing.kind
        if kind == "reminder":
            async with self._showing[(firing.agent, owner)]:
                message_id = await deliver(reminder_reply(firing))
                await self._shown(firing, owner, message_id)
        elif kind == "briefing":
            await deliver(Reply(await self._briefings.compose(runtime, firing, owner)))
        else:
            name = firing.source.rsplit("/", 1)[-1]
            prompt = PROMPT_PREFIX.format(name=name) + str(firing.payload.get("prompt", ""))
            await self._dispatcher.on_text(
                runtime.id,
                owner,
                prompt,
                message_id=f"fire:{firing.key}",
                user_id=owner,
                deliver=deliver,
                from_user=False,  # a question waiting in the chat is the user's to answer
            )
        return True

    async def _shown(self, firing: Firing, chat_id: str, message_id: str | None) -> None:
        """Record the message a reminder is in; unrecorded, its buttons answer that they are
        no longer active (a firing sent again after a crash is recorded then)."""
        if message_id is None or self.server is None:
            logger.warning("reminder %s: sent, but its message is not known", firing.key)
            return
        arguments = {
            "agent": firing.agent, "firing_id": firing.id, "chat_id": chat_id,
            "message_id": message_id,
        }  # fmt: skip
        try:
            await self._registry.call_as(self.server, "reminder_shown", arguments, Shown)
        except ToolCallError as error:
            logger.warning("reminder %s: its message was not recorded (%s)", firing.key, error)

    async def tap(  # noqa: PLR0917 (the dispatcher's tap signature)
        self,
        agent: str,
        chat_id: str,
        user_id: str,
        message_id: str | None,
        data: str,
        answer: Answer,
        edit: Edit,
        tap_id: str | None = None,
    ) -> bool:
        """A tap on a reminder's button (False: not one of ours). A reminder's buttons act
        in the message it was sent in, in the owner's chat: a tap anywhere else (the same
        button's data replayed on another message, or by another user of the agent in
        their chat) changes nothing. A second tap is answered and edits nothing; the same
        tap handed over again after a crash (``tap_id``) redraws the message."""
        tap = decode_reminder(data)
        if tap is None:
            return False
        runtime = self.runtime(agent)
        owner = None if runtime is None else owner_of(runtime)
        if owner is None or (chat_id, user_id) != (owner, owner) or message_id is None:
            await answer(NO_LONGER_ACTIVE)
            return True
        if self.server is None:
            await answer(UNAVAILABLE)
            return True
        async with self._showing[(agent, chat_id)]:
            pass  # a reminder being sent in this chat: its message is recorded first
        arguments = {
            "agent": agent, "firing_id": tap.firing_id, "chat_id": chat_id,
            "message_id": message_id, "outcome": tap.outcome, "tap_id": tap_id,
        }  # fmt: skip
        try:
            done = await self._registry.call_as(self.server, "follow_up", arguments, FollowedUp)
        except ToolCallError as error:
            logger.warning("reminder tap %s: %s", data, error)
            await answer(NO_LONGER_ACTIVE if error.answered else UNAVAILABLE)
            return True
        if not done.changed:  # the message shows how it was followed up already
            await answer("Already done.")
            return True
        await answer(SNOOZED_NOTICE[done.outcome])
        await edit(Reply(done.message))
        return True

    async def jobs(self, runtime: AgentRuntime, chat_id: str) -> Reply:
        listed = await self._jobs(runtime.id)
        if listed is None:
            return Reply(UNAVAILABLE)
        lines = (
            ["Scheduled jobs:"] if listed.jobs else ["No scheduled jobs (config/schedule.yaml)."]
        )
        lines += [
            f"• {j.id.split('/', 1)[1]}: {j.when}, next {_short(j.next_at)}" for j in listed.jobs
        ]
        lines.append("Reminders:" if listed.reminders else "No reminders.")
        for r in listed.reminders:
            again = f" ({r.repeat})" if r.repeat else ""
            waiting = " — waiting for Done" if r.state == "waiting" else ""
            lines.append(f"• {_short(r.due_at)}{again}: {r.text}{waiting}")
        return Reply("\n".join(lines))

    async def status_lines(self, agent: str) -> list[str]:
        """The next firing of each of the asking agent's jobs (never another agent's)."""
        listed = await self._jobs(agent)
        if listed is None:
            return ["Scheduler: unavailable"]
        return [f"⏱ {j.id}: next {_short(j.next_at)}" for j in listed.jobs]

    async def _jobs(self, agent: str) -> Jobs | None:
        if self.server is None:
            return None
        try:
            return await self._registry.call_as(self.server, "jobs", {"agent": agent}, Jobs)
        except ToolCallError as error:
            logger.warning("scheduler jobs: %s", error)
            return None


def _short(iso: str | None) -> str:
    if iso is None:
        return "none"
    return f"{datetime.fromisoformat(iso):%a %-d %b %H:%M}"
