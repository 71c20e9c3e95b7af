"""Pausing, resuming and looking at a running agent (``clawmesh agent stop|start|status``).

The paused state lives with the queues that hold the agent's work, in their databases:

    telegram-io  its inbox keeps the paused agent's updates (the bot still polls, Telegram
                 is confirmed, nothing is lost) and hands none out; resumed, they go out
                 oldest first
    scheduler    none of its jobs or reminders fires or is handed out; resumed, they are
                 caught up as after a downtime

So the running orchestrator, which only ever asks these two for work, gets none for the
agent from its next poll on, without a restart and without a change of its own; the other
agents go on; a restart of anything keeps the pause. What the orchestrator holds already (a
turn under way, messages queued behind it in their chat) is finished.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any, TypeVar

from pydantic import BaseModel, Field

from meshkit.command import CliError
from meshkit.wire.pause import Paused
from meshkit.wire.scheduler import Jobs
from meshkit.wire.telegram_io import Status
from meshkit.wire.usage import PeriodSpend, UsageTotals
from orchestrator.cli.mesh import role_servers, unreachable
from orchestrator.config.fleet import Agent
from orchestrator.config.registry import Role
from orchestrator.core.allowance_limits import periods
from orchestrator.core.usage_book import totals_arguments
from orchestrator.mesh.errors import ToolCallError
from orchestrator.mesh.registry import Registry
from orchestrator.settings import OrchestratorSettings

HOLDERS: tuple[Role, ...] = ("telegram-io", "scheduler")
M = TypeVar("M", bound=BaseModel)


class PauseResult(BaseModel):
    agent: str
    paused: bool
    changed: bool = Field(description="false: it was so already")
    inbox_waiting: int | None = Field(description="its updates waiting in telegram-io")
    firings_waiting: int | None = Field(description="its firings due in the scheduler")


class Firing(BaseModel):
    what: str  # a job id, or "reminder: <text>"
    at: str | None  # ISO 8601 in the agent's zone


class AgentStatus(BaseModel):
    agent: str
    name: str
    state: str = Field(description="running, paused, partly paused, or unknown")
    paused_in: list[str] = Field(description="the servers that hold it paused")
    bot_username: str | None
    bot_state: str | None = Field(
        description="as telegram-io's pollers know it; none: not polled there (no token), "
        "or not known here (embedded mode: the orchestrator's process polls)"
    )
    last_activity: str | None = Field(description="its newest update, ISO 8601 UTC")
    inbox_backlog: int | None
    next_firings: list[Firing] | None
    usage: PeriodSpend | None = Field(description="today and this month, if recorded")
    unavailable: list[str] = Field(description="servers that did not answer")


async def set_paused(config: OrchestratorSettings, agent: str, pause: bool) -> PauseResult:
    """Pause or resume ``agent`` in every server that holds its work."""
    answers: dict[str, Paused] = {}
    failed: CliError | None = None
    async with role_servers(config, HOLDERS) as registry:
        holders = [s for s in (registry.server_for(r) for r in HOLDERS) if s is not None]
        for server in holders:
            try:
                arguments = {"agent": agent, "paused": pause}
                answers[server] = await registry.call_as(server, "set_paused", arguments, Paused)
            except ToolCallError as error:
                failed = unreachable(registry, server, str(error))
                break
    if not holders:
        raise CliError(
            f"{config.registry} has no server with role telegram-io or scheduler",
            "add them (see the shipped config/mcp_servers.yaml): they hold an agent's work",
        )
    if failed is not None:
        done = ", ".join(answers) or "none"
        raise CliError(
            f"{failed.what} (done in: {done})",
            f"{failed.fix}; then run the command again",
        )
    roles = {registry.server_for(r): r for r in HOLDERS}
    by_role = {roles[s]: a for s, a in answers.items()}
    inbox, scheduler = by_role.get("telegram-io"), by_role.get("scheduler")
    return PauseResult(
        agent=agent,
        paused=pause,
        changed=any(a.changed for a in answers.values()),
        inbox_waiting=inbox.waiting if inbox else None,
        firings_waiting=scheduler.waiting if scheduler else None,
    )


async def statuses(
    config: OrchestratorSettings, agents: list[Agent], now: float | None = None
) -> list[AgentStatus]:
    """What telegram-io, the scheduler and memory know of each agent; a server that does
    not answer is named in ``unavailable``, the rest is still shown."""
    now = time.time() if now is None else now
    async with role_servers(config, (*HOLDERS, "memory")) as registry:
        down: list[str] = []
        inbox = await _ask(registry, "telegram-io", "status", {}, Status, down=down)
        return [await _status(registry, agent, inbox, down, now) for agent in agents]


async def _ask(
    registry: Registry,
    role: Role,
    tool: str,
    arguments: dict[str, Any],
    model: type[M],
    *,
    down: list[str],
) -> M | None:
    """``tool`` of the ``role`` server; None when there is none, or it did not answer (then
    it is named in ``down``)."""
    server = registry.server_for(role)
    if server is None:
        return None
    try:
        return await registry.call_as(server, tool, arguments, model)
    except ToolCallError:
        down.append(server)
        return None


async def _status(
    registry: Registry, agent: Agent, inbox: Status | None, down: list[str], now: float
) -> AgentStatus:
    unavailable = list(down)
    paused_in: list[str] = []
    io = registry.server_for("telegram-io")
    bot = next((b for b in inbox.bots if b.agent == agent.id), None) if inbox else None
    mine = next((a for a in inbox.agents if a.agent == agent.id), None) if inbox else None
    if mine is not None and mine.paused and io is not None:
        paused_in.append(io)
    jobs = await _ask(registry, "scheduler", "jobs", {"agent": agent.id}, Jobs, down=unavailable)
    if jobs is not None and jobs.paused:
        paused_in.append(registry.server_for("scheduler") or "scheduler")
    bounds = periods(agent.entry.timezone, datetime.fromtimestamp(now, UTC))
    arguments = totals_arguments(agent.id, bounds)
    totals = await _ask(
        registry, "memory", "usage_totals", arguments, UsageTotals, down=unavailable
    )
    holders = [s for s in (registry.server_for(r) for r in HOLDERS) if s and s not in unavailable]
    state = (
        "unknown"
        if not holders
        else "running"
        if not paused_in
        else "paused"
        if set(paused_in) >= set(holders)
        else "partly paused"
    )
    return AgentStatus(
        agent=agent.id,
        name=agent.entry.name,
        state=state,
        paused_in=paused_in,
        bot_username=bot.username if bot else None,
        bot_state=bot.state if bot else None,
        last_activity=_iso(mine.last_update_at) if mine and mine.last_update_at else None,
        inbox_backlog=(mine.waiting if mine else 0) if inbox else None,
        next_firings=_firings(jobs) if jobs is not None else None,
        usage=totals.total if totals is not None else None,
        unavailable=unavailable,
    )


def _firings(jobs: Jobs, most: int = 5) -> list[Firing]:
    found = [Firing(what=j.id, at=j.next_at) for j in jobs.jobs if j.next_at]
    found += [
        Firing(what=f"reminder: {r.text}", at=r.due_at)
        for r in jobs.reminders
        if r.state == "active"
    ]
    return sorted(found, key=lambda f: _instant(f.at))[:most]


def _instant(at: str | None) -> float:
    return datetime.fromisoformat(at).timestamp() if at else float("inf")


def _iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="seconds")
