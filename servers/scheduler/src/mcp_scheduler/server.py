"""The scheduler MCP surface: reminders for the model (read, producer: ``tools``), their
change kinds with the confirm tools from the consent kernel (``changes``), and the
orchestrator's internal tools (due firings, acks, follow-ups, the jobs list)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from importlib.metadata import version
from typing import Any

from fastmcp import FastMCP

from mcp_scheduler.changes import change_kinds
from mcp_scheduler.reminders import SERVER, ReminderDesk
from mcp_scheduler.schedule import load_schedule
from mcp_scheduler.service import Scheduler
from mcp_scheduler.settings import DEFAULT_SCHEDULE, SchedulerSettings
from mcp_scheduler.store import SchedulerStore
from mcp_scheduler.tools import add_internal_tools, add_reminder_tools
from meshkit.consent import Consent
from meshkit.server import create_server
from meshkit.settings import load_settings
from meshkit.stopping import Stopping

INSTRUCTIONS = (
    "Reminders the user asked for, and the scheduled jobs of the assistant (a morning "
    "briefing, scheduled prompts). Setting or cancelling a reminder is a proposal the user "
    "confirms with a tap."
)


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
    desk = ReminderDesk(store, clock=clock, changed=scheduler.changed)
    if stopping is not None:
        stopping.on_stop(scheduler.stop_waiting)

    @asynccontextmanager
    async def lifespan(_: FastMCP[Any]) -> AsyncIterator[None]:
        await scheduler.sync()
        yield

    mcp = create_server(
        SERVER,
        version=version("mcp-scheduler"),
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        checks={"database": scheduler.check},
        stores=[store],
    )
    consent = Consent.from_settings(mcp, SERVER, settings, clock=clock)
    consent.declare(*change_kinds(store, clock, scheduler.changed))
    add_reminder_tools(mcp, desk, consent)
    add_internal_tools(mcp, scheduler, desk)
    return mcp
