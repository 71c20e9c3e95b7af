"""Reminders in the chat: the message a due reminder becomes, its buttons, and ``/jobs``.

    reminder  ─► "⏰ <text>" with Done / Snooze 10 min / Snooze 1 h, sent under
                 ``fire:<firing key>`` (its buttons act in that message only)
    tap on those buttons (``rm``) ─► scheduler.follow_up (once per firing, from the
        message sent under its key), no model ─► edited (a second tap is answered and
        edits nothing)

``/jobs`` lists the agent's jobs and reminders; ``/status`` gets the next firing of each
job (``status_lines``). The app gives these to the dispatcher when it builds it; without a
scheduler in the registry, a reminder's button is refused like any unknown one.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime

from meshkit.wire.scheduler import Firing, FollowedUp, FollowUp, Jobs
from orchestrator.core.actions import NO_LONGER_ACTIVE
from orchestrator.core.callbacks import ReminderTap, decode_reminder, encode_reminder
from orchestrator.core.dispatch import owner_of
from orchestrator.core.replies import Button, Reply
from orchestrator.core.routes import CommandContext, TapContext
from orchestrator.core.runtime import AgentRuntime
from orchestrator.mesh.errors import ToolCallError
from orchestrator.mesh.registry import Registry
from orchestrator.mesh.roles import RoleClient

logger = logging.getLogger(__name__)

SNOOZED_NOTICE = {
    "done": "Done ✅",
    "snooze_10": "Snoozed for 10 minutes",
    "snooze_60": "Snoozed for an hour",
}
UNAVAILABLE = "I can't reach the scheduler right now. Try again in a moment."
JOBS = "scheduled jobs and reminders"  # /jobs in /help and Telegram's "/" menu


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


class Reminders:
    def __init__(self, registry: Registry, agents: Mapping[str, AgentRuntime]) -> None:
        self._registry = registry
        self._agents = agents
        self._scheduler = RoleClient(registry, "scheduler")
        self.server = self._scheduler.server

    async def tap(self, tap: TapContext) -> None:
        """A tap on a reminder's button (``rm``). It acts in the message the reminder was
        sent in (the scheduler checks its key), in the owner's chat: a tap anywhere else
        (the same button's data replayed on another message, or by another user of the
        agent in their chat) changes nothing. A second tap is answered and edits nothing;
        the same tap handed over again after a crash (``tap.tap_id``) redraws the message."""
        decoded = decode_reminder(tap.data)
        runtime = self._agents.get(tap.agent)
        owner = None if runtime is None else owner_of(runtime)
        ours = owner is not None and (tap.chat, tap.user) == (owner, owner)
        if decoded is None or not ours or tap.key is None or self.server is None:
            await tap.answer(NO_LONGER_ACTIVE)
            return
        arguments = {
            "agent": tap.agent, "firing_id": decoded.firing_id, "message_key": tap.key,
            "outcome": decoded.outcome, "tap_id": tap.tap_id,
        }  # fmt: skip
        try:
            done = await self._registry.call_as(self.server, "follow_up", arguments, FollowedUp)
        except ToolCallError as error:
            logger.warning("reminder tap %s: %s", tap.data, error)
            await tap.answer(NO_LONGER_ACTIVE if error.answered else UNAVAILABLE)
            return
        if not done.changed:  # the message shows how it was followed up already
            await tap.answer("Already done.")
            return
        await tap.answer(SNOOZED_NOTICE[done.outcome])
        await tap.edit(Reply(done.message))

    async def jobs(self, command: CommandContext) -> Reply:
        """``/jobs``: the agent's scheduled jobs and its reminders."""
        listed = await self._jobs(command.runtime.id)
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
        return await self._scheduler.call("jobs", {"agent": agent}, Jobs)


def _short(iso: str | None) -> str:
    if iso is None:
        return "none"
    return f"{datetime.fromisoformat(iso):%a %-d %b %H:%M}"
