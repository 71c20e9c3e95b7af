"""The scheduler's tools: reminders for the model and any client (read, producer), and the
orchestrator's internal tools (due firings, acks, follow-ups, the jobs list).

A proposal goes through the consent kernel (``meshkit.consent``): the orchestrator gets it
back to stage in its chat, a client bound to a person gets it staged for that person on
Telegram. The confirm tools come from the kernel too (``mcp_scheduler.changes``).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastmcp import FastMCP
from pydantic import Field

from mcp_scheduler.reminders import ReminderDesk, Repeat, views
from mcp_scheduler.service import Scheduler
from meshkit.consent import Consent
from meshkit.params import ContextAgent, ContextZone, MessageKey
from meshkit.tool_classes import internal, producer, read
from meshkit.wire.pause import Paused
from meshkit.wire.proposals import Proposal
from meshkit.wire.scheduler import Acked, Due, FollowedUp, FollowUp, Jobs, Reminders

Holder = Annotated[str, Field(min_length=1, max_length=100)]
FiringId = Annotated[str, Field(pattern=r"^fir_[0-9a-f]{12}$", max_length=16)]
FiringKeys = Annotated[
    tuple[Annotated[str, Field(max_length=1000)], ...],
    Field(max_length=100, description="keys of firings handled: never handed out again"),
]


def add_reminder_tools(mcp: FastMCP[Any], desk: ReminderDesk, consent: Consent) -> None:
    @mcp.tool(**read(title="Reminders", context=("agent",)))
    async def list_reminders(agent: ContextAgent = "default") -> Reminders:
        """The user's reminders to come or not yet done, with ids and times."""
        return Reminders(reminders=views(await desk.listed(agent)))

    @mcp.tool(**producer(title="Propose a reminder", context=("agent", "timezone")))
    async def propose_reminder(
        text: Annotated[str, Field(min_length=1, max_length=300, description="e.g. 'call mum'")],
        when: Annotated[
            str,
            Field(
                max_length=40,
                description="YYYY-MM-DDTHH:MM in the user's zone ('every Monday at 8': the "
                "first Monday)",
            ),
        ],
        repeat: Annotated[Repeat | None, Field(description="null: once")] = None,
        agent: ContextAgent = "default",
        timezone: ContextZone = "UTC",
    ) -> Proposal:
        """Propose a reminder sent to the user at a time."""
        return await consent.offer(desk.propose(agent, text, when, repeat, timezone))

    @mcp.tool(**producer(title="Propose cancelling a reminder", context=("agent",)))
    async def propose_cancel_reminder(
        reminder_id: Annotated[
            str, Field(min_length=1, max_length=40, description="From list_reminders")
        ],
        agent: ContextAgent = "default",
    ) -> Proposal:
        """Propose cancelling a reminder."""
        return await consent.offer(await desk.propose_cancel(agent, reminder_id))


def add_internal_tools(mcp: FastMCP[Any], scheduler: Scheduler, desk: ReminderDesk) -> None:
    @mcp.tool(**internal(title="Due firings"))
    async def next_due(
        consumer: Holder,
        run: Holder,
        max: Annotated[int, Field(ge=1, le=100)] = 10,
        wait_s: Annotated[float, Field(ge=0, le=25)] = 0,
        ack: FiringKeys = (),
    ) -> Due:
        """Firings due now (briefings, scheduled prompts, reminders), leased to this run;
        waits up to wait_s when none is. Ack each once handled: in the next call's ``ack``
        (marked done before anything is leased, in the same transaction), or with ``ack``."""
        return await scheduler.next_due(consumer, run, max, wait_s, ack=ack)

    @mcp.tool(**internal(title="Ack firings", idempotent=True))
    async def ack(keys: FiringKeys) -> Acked:
        """Mark handled firings done (by key): they are never handed out again."""
        return Acked(acked=await scheduler.ack(list(keys)))

    @mcp.tool(**internal(title="Follow up a reminder", idempotent=True))
    async def follow_up(
        agent: ContextAgent,
        firing_id: FiringId,
        message_key: MessageKey,
        outcome: FollowUp,
        tap_id: Annotated[
            str | None,
            Field(
                max_length=100,
                description="The tap's own id (e.g. its Telegram update): the same tap again "
                "after a crash is still the one that changed it (changed: true)",
            ),
        ] = None,
    ) -> FollowedUp:
        """Done, or snooze 10 min / 1 h, from a tap on a reminder in the message it was sent
        in (under ``fire:<firing key>``): once per firing."""
        return await desk.follow_up(agent, firing_id, message_key, outcome, tap_id)

    @mcp.tool(**internal(title="Pause or resume an agent", idempotent=True))
    async def set_paused(
        agent: ContextAgent,
        paused: Annotated[bool, Field(description="true: pause; false: resume")],
    ) -> Paused:
        """Pause an agent (the operator's ``clawmesh agent stop``): none of its jobs or
        reminders fires or is handed out until it is resumed; then they are caught up as
        after a downtime. Durable: a restart keeps it paused."""
        return await scheduler.set_paused(agent, paused)

    @mcp.tool(**internal(title="Jobs", read_only=True, idempotent=True))
    async def jobs(agent: ContextAgent) -> Jobs:
        """The agent's scheduled jobs with their next firing, and its reminders."""
        return await scheduler.jobs_of(agent)
