"""What the scheduler tests share: the files it reads, a moving clock, tool calls."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from fastmcp import Client

from fakes.approval_keys import signer
from fakes.clock import Clock
from fakes.tool_calls import call
from mcp_scheduler.server import build_server
from mcp_scheduler.settings import SchedulerSettings

AGENT = "clawdia"
BERLIN = ZoneInfo("Europe/Berlin")
AGENTS_YAML = """\
agents:
  clawdia:
    name: Clawdia
    persona: agents/clawdia
    timezone: Europe/Berlin
  other:
    name: Other
    persona: agents/clawdia
"""


def local(text: str) -> float:
    """A wall-clock time in Berlin, as Unix seconds."""
    return datetime.fromisoformat(text).replace(tzinfo=BERLIN).timestamp()


def settings_for(tmp_path: Path, schedule: str) -> SchedulerSettings:
    """Every field explicit, so SCHEDULER_* and DATA_DIR in the environment change nothing."""
    (tmp_path / "schedule.yaml").write_text(schedule, encoding="utf-8")
    (tmp_path / "agents.yaml").write_text(AGENTS_YAML, encoding="utf-8")
    return SchedulerSettings(
        schedule=tmp_path / "schedule.yaml",
        agents=tmp_path / "agents.yaml",
        data_dir=tmp_path / "data",
        lease_s=60,
    )


@asynccontextmanager
async def running(settings: SchedulerSettings, clock: Clock) -> AsyncIterator[Client[Any]]:
    """The scheduler started (a start reads the schedule and syncs the jobs), then stopped."""
    async with Client(build_server(settings, clock=clock)) as client:
        yield client


async def due(
    client: Client[Any], run: str = "run-1", consumer: str = "orchestrator"
) -> list[dict[str, Any]]:
    """The firings next_due hands out now, without waiting."""
    result = await call(client, "next_due", consumer=consumer, run=run, wait_s=0)
    firings: list[dict[str, Any]] = result["firings"]
    return firings


async def fire_through(
    client: Client[Any], clock: Clock, until: float, step_s: float = 1800
) -> list[dict[str, Any]]:
    """Move the clock to ``until`` in steps, handling (acking) every firing on the way, as
    the orchestrator does; the firings in the order they came."""
    fired = []
    while clock.now < until:
        clock.advance(min(step_s, until - clock.now))
        for firing in await due(client):
            fired.append(firing)
            await call(client, "ack", keys=[firing["key"]])
    return fired


def mint(clock: Clock, kind: str, payload: dict[str, Any], agent: str = AGENT) -> str:
    """The token pending-actions signs at the Confirm tap."""
    action = "act_" + secrets.token_hex(6)
    return signer(clock).mint(action, "scheduler", kind, payload, agent=agent)
