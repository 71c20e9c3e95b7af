"""The scheduler MCP surface: reminders for the model (read, producer), their confirm tools,
and the orchestrator's internal tools (due firings, acks, follow-ups, the jobs list)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from importlib.metadata import version
from typing import Annotated, Any

from fastmcp import FastMCP
from pydantic import BaseModel, Field

from mcp_scheduler.reminders import ReminderDesk, Repeat, views
from mcp_scheduler.schedule import load_schedule
from mcp_scheduler.service import Scheduler
from mcp_scheduler.settings import DEFAULT_SCHEDULE, SchedulerSettings
from mcp_scheduler.store import SchedulerStore
from meshkit.approval_keys import public_key
from meshkit.params import ChatId
from meshkit.proposals import Approvals, Proposal
from meshkit.server import create_server
from meshkit.settings import load_settings
from meshkit.stopping import Stopping
from meshkit.tool_classes import confirm, internal, producer, read
from meshkit.wire.scheduler import Acked, Due, FollowedUp, FollowUp, Jobs, Reminders, Shown

INSTRUCTIONS = (
    "Reminders the user asked for, and the scheduled jobs of the assistant (a morning "
    "briefing, scheduled prompts). Setting or cancelling a reminder is a proposal the user "
    "confirms with a tap."
)

Agent = Annotated[
    str, Field(description="filled in by the assistant", min_length=1, max_length=200)
]
Zone = Annotated[str, Field(description="filled in by the assistant", max_length=64)]
Payload = Annotated[
    dict[str, Any], Field(description="The proposal's payload, exactly as it was proposed")
]
ApprovalToken = Annotated[
    str, Field(max_length=500, description="The token pending-actions minted at the Confirm tap")
]
Holder = Annotated[str, Field(min_length=1, max_length=100)]
FiringId = Annotated[str, Field(pattern=r"^fir_[0-9a-f]{12}$", max_length=16)]
MessageId = Annotated[str, Field(min_length=1, max_length=100)]
FiringKeys = Annotated[
    tuple[Annotated[str, Field(max_length=1000)], ...],
    Field(max_length=100, description="keys of firings handled: never handed out again"),
]


class ReminderChange(BaseModel):
    message: str
    reminder_id: str
    replayed: bool


def build_server(
    settings: SchedulerSettings | None = None,
    *,
    clock: Callable[[], float] = time.time,
    stopping: Stopping | None = None,
) -> FastMCP[Any]:
    """The scheduler; ``settings`` default to the environment (embedded mode). The schedule
    file is read now: a mistake stops the start (ConfigError)."""
    settings = settings or load_settings(SchedulerSettings)
    configured = load_schedule(
        settings.schedule or DEFAULT_SCHEDULE, settings.agents, required=bool(settings.schedule)
    )
    store = SchedulerStore(settings.db_path, max_bytes=settings.max_db_bytes, clock=clock)
    scheduler = Scheduler(store, configured, clock=clock, lease_s=settings.lease_s)
    desk = ReminderDesk(
        store,
        Approvals(public_key(settings), clock=clock),
        clock=clock,
        changed=scheduler.changed,
    )
    if stopping is not None:
        stopping.on_stop(scheduler.stop_waiting)

    @asynccontextmanager
    async def lifespan(_: FastMCP[Any]) -> AsyncIterator[None]:
        async with store.lifespan():
            await scheduler.sync()
            yield

    mcp = create_server(
        "scheduler",
        version=version("mcp-scheduler"),
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        checks={"database": scheduler.check},
        stores=[store],
    )

    # --- read and producer ---------------------------------------------------------------

    @mcp.tool(**read(title="Reminders", context=("agent",)))
    async def list_reminders(agent: Agent = "default") -> Reminders:
        """The user's reminders still to come or not yet done, with their ids and times."""
        return Reminders(reminders=views(await desk.listed(agent)))

    @mcp.tool(**producer(title="Propose a reminder", context=("agent", "timezone")))
    async def propose_reminder(
        text: Annotated[
            str, Field(min_length=1, max_length=300, description="What to remind, e.g. 'call mum'")
        ],
        when: Annotated[
            str,
            Field(
                max_length=40,
                description="When, resolved from the user's words ('tomorrow 9am', 'in 2 "
                "hours', 'every Monday at 8': the first Monday) to YYYY-MM-DDTHH:MM in the "
                "user's zone",
            ),
        ],
        repeat: Annotated[
            Repeat | None, Field(description="daily, weekdays, weekly or monthly; null: once")
        ] = None,
        agent: Agent = "default",
        timezone: Zone = "UTC",
    ) -> Proposal:
        """Propose a reminder sent to the user at a time. Nothing is set until the user taps
        Set reminder. Use the user's local time (it is in your instructions)."""
        return desk.propose(agent, text, when, repeat, timezone)

    @mcp.tool(**producer(title="Propose cancelling a reminder", context=("agent",)))
    async def propose_cancel_reminder(
        reminder_id: Annotated[
            str, Field(min_length=1, max_length=40, description="The id list_reminders gave")
        ],
        agent: Agent = "default",
    ) -> Proposal:
        """Propose cancelling a reminder. Nothing changes until the user taps Cancel reminder."""
        return await desk.propose_cancel(agent, reminder_id)

    # --- confirm -------------------------------------------------------------------------

    @mcp.tool(**confirm(title="Set a reminder"))
    async def confirm_reminder(payload: Payload, approval: ApprovalToken) -> ReminderChange:
        """Set an approved reminder. Needs the user's approval token."""
        return ReminderChange.model_validate(await desk.confirm_set(payload, approval))

    @mcp.tool(**confirm(title="Cancel a reminder", destructive=True))
    async def confirm_cancel_reminder(payload: Payload, approval: ApprovalToken) -> ReminderChange:
        """Cancel an approved reminder. Needs the user's approval token."""
        return ReminderChange.model_validate(await desk.confirm_cancel(payload, approval))

    # --- internal (the orchestrator) -----------------------------------------------------

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

    @mcp.tool(**internal(title="Reminder shown", idempotent=True))
    async def reminder_shown(
        agent: Agent, firing_id: FiringId, chat_id: ChatId, message_id: MessageId
    ) -> Shown:
        """The reminder's firing was sent in this message: its buttons act there only
        (recorded once)."""
        await desk.shown(agent, firing_id, chat_id, message_id)
        return Shown(firing_id=firing_id, message_id=message_id)

    @mcp.tool(**internal(title="Follow up a reminder", idempotent=True))
    async def follow_up(  # noqa: PLR0917 (a tool's parameters are its schema)
        agent: Agent,
        firing_id: FiringId,
        chat_id: ChatId,
        message_id: MessageId,
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
        in: once per firing."""
        return await desk.follow_up(agent, firing_id, chat_id, message_id, outcome, tap_id)

    @mcp.tool(**internal(title="Jobs", read_only=True, idempotent=True))
    async def jobs(agent: Agent) -> Jobs:
        """The agent's scheduled jobs with their next firing, and its reminders."""
        return await scheduler.jobs_of(agent)

    return mcp
