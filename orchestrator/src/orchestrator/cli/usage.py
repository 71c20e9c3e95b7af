"""``clawmesh usage``: what the model cost, for the operator.

    clawmesh usage [--json] [--agent ID] [--month YYYY-MM | --day YYYY-MM-DD]

It reads the orchestrator's own configuration and asks the memory server the registry names
(``role: memory``), as the orchestrator would (cli/mesh.py): in-process on ``DATA_DIR`` after
``make run``, over HTTP with the orchestrator's credential in the mesh
(``docker compose exec orchestrator clawmesh usage``).

Each agent's periods are its own, in its time zone: without ``--month`` or ``--day``, its
today and this month, with where each limit of its allowance stands. Every mistake is one
line naming what to fix, exit 2, never a traceback.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Annotated, Literal
from zoneinfo import ZoneInfo

import anyio
from cyclopts import Parameter
from pydantic import BaseModel

from meshkit.command import CliError, Json, guarded
from meshkit.logs import configure_logging
from meshkit.settings import CONFIG_ERROR_EXIT, environment
from meshkit.wire.usage import Spend, UsageReport, UsageTotals
from meshkit.yaml_config import ConfigError
from orchestrator.cli.mesh import role_servers, settings, unreachable
from orchestrator.config.fleet import Agent, load_fleet
from orchestrator.config.prices import load_prices
from orchestrator.config.registry import load_registry
from orchestrator.core.allowance_limits import (
    Period,
    Periods,
    amount_text,
    limits,
    periods,
    spend_of,
    standing,
)
from orchestrator.core.usage_book import UsageBook
from orchestrator.core.usage_view import (
    PURPOSE_NAME,
    calls_text,
    cost_text,
    tokens_known,
    uncounted,
)
from orchestrator.mesh.errors import ToolCallError
from orchestrator.settings import OrchestratorSettings


class Asked(BaseModel):
    """What the operator asked: whose usage, of which period (None: today and this month)."""

    agent: str | None = None
    period: Period | None = None
    name: str | None = None  # 2026-11 or 2026-11-27, with period


class LimitState(BaseModel):
    """Where one limit of an allowance stands in its current period."""

    scope: Literal["agent", "user"]
    user: str | None
    period: Period
    unit: Literal["money", "tokens"]
    limit: float
    allowed: float  # the limit plus the day's grants
    spent: float
    fraction: float
    reached: bool
    uncounted: int  # calls of unknown usage (or, in money, of unknown cost)
    renews_at: str  # ISO 8601 in the agent's zone


class PeriodUsage(BaseModel):
    period: Period
    name: str
    since: float
    until: float
    report: UsageReport


class AgentUsage(BaseModel):
    agent: str
    name: str
    timezone: str
    periods: list[PeriodUsage]
    limits: list[LimitState]


class UsageOutput(BaseModel):
    currency: str
    agents: list[AgentUsage]


def usage(
    *,
    agent: Annotated[str | None, Parameter(help="one agent id (default: every agent)")] = None,
    month: Annotated[str | None, Parameter(help="YYYY-MM, in each agent's time zone")] = None,
    day: Annotated[str | None, Parameter(help="YYYY-MM-DD, in each agent's time zone")] = None,
    verbose: Annotated[bool, Parameter(negative=(), help="logs on stderr")] = False,
    as_json: Json = False,
) -> None:
    """The description is clawmesh's (cli/main.py)."""

    def run() -> None:
        asked = asked_of(month, day, agent)
        config = settings()
        # Quiet unless asked: the table is the answer, and a down server is said in one line.
        configure_logging(config.log_level if verbose else "CRITICAL", secrets=config.secrets())
        output = anyio.run(collect, config, asked, time.time())
        print(output.model_dump_json(indent=2) if as_json else table(output))

    guarded(run, as_json=as_json)


def asked_of(month: str | None, day: str | None, agent: str | None) -> Asked:
    """The period asked for; a CliError naming a malformed or doubled one."""
    if month is not None and day is not None:
        raise _mistake("--month and --day: give one of them, not both")
    if month is not None:
        if not _is(month, "%Y-%m"):
            raise _mistake(f"--month {month!r} is not a month", "write YYYY-MM, e.g. 2026-11")
        return Asked(agent=agent, period="month", name=month)
    if day is not None:
        if not _is(day, "%Y-%m-%d"):
            raise _mistake(f"--day {day!r} is not a day", "write YYYY-MM-DD, e.g. 2026-11-27")
        return Asked(agent=agent, period="day", name=day)
    return Asked(agent=agent)


def _mistake(what: str, fix: str = "see clawmesh usage --help") -> CliError:
    return CliError(what, fix, code=CONFIG_ERROR_EXIT)


def _is(text: str, form: str) -> bool:
    """Whether ``text`` is a date in ``form``, written out in full (2026-01, not 2026-1)."""
    try:
        return datetime.strptime(text, form).strftime(form) == text
    except ValueError:
        return False


async def collect(settings: OrchestratorSettings, asked: Asked, now: float) -> UsageOutput:
    """Every asked agent's usage, read from the memory server the registry names."""
    environ = environment()
    entries = load_registry(settings.registry, environ)
    fleet = load_fleet(settings.agents, entries, environ, root=settings.root)
    currency = load_prices(settings.agents, environ).currency
    if asked.agent is not None and asked.agent not in fleet:
        raise ConfigError(
            f"{settings.agents}: agents: no agent {asked.agent!r}; choose one of {sorted(fleet)}"
        )
    if not any(entry.role == "memory" for entry in entries.values()):
        raise ConfigError(
            f"{settings.registry}: servers: no server with 'role: memory', which keeps the "
            "usage; add it (see the shipped config/mcp_servers.yaml)"
        )
    chosen = [fleet[asked.agent]] if asked.agent else list(fleet.values())
    failed: CliError | None = None
    async with role_servers(settings, ["memory"]) as registry:
        book = UsageBook(registry)
        try:
            agents = [await _agent_usage(book, agent, asked, now) for agent in chosen]
        except ToolCallError as error:  # raised below, not in the registry's task group
            failed = unreachable(registry, error.server, str(error))
    if failed is not None:
        raise failed
    return UsageOutput(currency=currency, agents=agents)


async def _agent_usage(book: UsageBook, agent: Agent, asked: Asked, now: float) -> AgentUsage:
    zone = agent.entry.timezone
    current = periods(zone, datetime.fromtimestamp(now, UTC))
    shown: list[tuple[Period, Periods]] = (
        [("day", current), ("month", current)]
        if asked.period is None or asked.name is None
        else [(asked.period, _periods_of(zone, asked.period, asked.name))]
    )
    usages = []
    for period, bounds in shown:
        since, until = bounds.start(period), bounds.end(period)
        report = await book.report(since, until, agent=agent.id)
        usages.append(PeriodUsage(period=period, name=bounds.name(period), since=since,
                                  until=until, report=report))  # fmt: skip
    # A limit stands in its current period: shown when that period is.
    standing_in = {p for p, bounds in shown if bounds.name(p) == current.name(p)}
    states: list[LimitState] = []
    if standing_in and limits(agent.entry.allowance):
        totals = await book.totals(agent.id, current)
        states = _limit_states(agent, totals, current, standing_in)
    return AgentUsage(
        agent=agent.id, name=agent.entry.name, timezone=zone, periods=usages, limits=states
    )


def _periods_of(zone: str, period: Period, name: str) -> Periods:
    """The agent's periods of a named day or month (its middle, in the agent's zone)."""
    year, month = int(name[:4]), int(name[5:7])
    day = int(name[8:10]) if period == "day" else 15
    return periods(zone, datetime(year, month, day, 12, tzinfo=ZoneInfo(zone)))


def _limit_states(
    agent: Agent, totals: UsageTotals, current: Periods, shown: set[Period]
) -> list[LimitState]:
    zone = ZoneInfo(current.timezone)
    states = []
    for limit in limits(agent.entry.allowance):
        if limit.period not in shown:
            continue
        users: list[str | None] = [None] if limit.scope == "agent" else [*sorted(totals.users)]
        for user in users:
            where = standing(limit, totals, user or "")
            spend = spend_of(totals, limit.scope, limit.period, user or "")
            renews = datetime.fromtimestamp(current.end(limit.period), zone)
            states.append(
                LimitState(
                    scope=limit.scope,
                    user=user,
                    period=limit.period,
                    unit=limit.amount.unit,
                    limit=limit.amount.value,
                    allowed=where.allowed,
                    spent=where.spent,
                    fraction=round(where.fraction, 4),
                    reached=where.reached,
                    uncounted=uncounted(spend, limit.amount.unit),
                    renews_at=renews.isoformat(),
                )
            )
    return states


COLUMNS = f"{'':<28}{'cost':>12}{'tokens':>14}{'calls':>8}{'no usage':>10}{'no price':>10}"


def table(output: UsageOutput) -> str:
    """The operator's table: per agent and period, the total and its parts (purpose,
    model, user), the most expensive turns, the grants, and where each limit stands."""
    lines: list[str] = []
    for agent in output.agents:
        if lines:
            lines.append("")
        lines.append(f"{agent.agent} ({agent.name}) · {agent.timezone} · {output.currency}")
        for number, shown in enumerate(agent.periods):
            lines += [""] if number else []
            lines += _period_lines(shown, output.currency, agent.timezone)
        if agent.limits:
            lines.append("limits")
            lines += [_limit_line(state, output.currency) for state in agent.limits]
    if not output.agents:
        lines.append("no agents in agents.yaml")
    return "\n".join(lines)


def _period_lines(shown: PeriodUsage, currency: str, timezone: str) -> list[str]:
    report = shown.report
    lines = [COLUMNS.replace(" " * 28, f"{shown.period} {shown.name}".ljust(28), 1)]
    lines.append(_row("total", report.total, currency))
    parts = [
        ("purpose ", report.by_purpose),
        ("model ", report.by_model),
        ("user ", report.by_user),
    ]
    for prefix, spends in parts:
        for key, spend in sorted(spends.items()):
            lines.append(_row(f"  {prefix}{key}", spend, currency))
    zone = ZoneInfo(timezone)
    if report.top:
        lines.append("  most expensive")
    for number, turn in enumerate(report.top, 1):
        at = datetime.fromtimestamp(turn.at, zone)
        cost = cost_text(turn.spend, currency, "unknown")
        tokens = f"{turn.spend.tokens:,} tokens" if tokens_known(turn.spend) else "tokens unknown"
        lines.append(
            f"  {number:>2}. {cost:>10}  {at:%Y-%m-%d %H:%M}  {PURPOSE_NAME[turn.purpose]:<16} "
            f"user {turn.user}  {calls_text(turn.spend.calls)}  {tokens}"
            + (f"  turn {turn.turn_id}" if turn.turn_id else "")
        )
    if report.grants:
        lines.append("  grants")
    for grant in report.grants:
        at = datetime.fromtimestamp(grant.at, zone)
        amount = amount_text(grant.amount, grant.unit, currency)
        lines.append(
            f"    +{amount} for user {grant.user} on {grant.day} "
            f"(granted {at:%Y-%m-%d %H:%M}, {grant.id})"
        )
    return lines


def _row(label: str, spend: Spend, currency: str) -> str:
    tokens = f"{spend.tokens:,}" if tokens_known(spend) else "-"
    return (
        f"{label[:28]:<28}{cost_text(spend, currency, 'unknown'):>12}{tokens:>14}{spend.calls:>8}"
        f"{spend.unknown_usage:>10}{spend.unknown_cost:>10}"
    )


def _limit_line(state: LimitState, currency: str) -> str:
    who = "agent" if state.user is None else f"user {state.user}"
    spent = amount_text(state.spent, state.unit, currency)
    allowed = amount_text(state.allowed, state.unit, currency)
    granted = state.allowed - state.limit
    extra = f" (+{amount_text(granted, state.unit, currency)} granted)" if granted > 0 else ""
    status = "reached" if state.reached else f"{state.fraction * 100:.0f} %"
    missed = f", {state.uncounted} calls not counted" if state.uncounted else ""
    renews = datetime.fromisoformat(state.renews_at)
    return (
        f"  {who} {state.period}: {spent} of {allowed}{extra} · {status}{missed} · "
        f"renews {renews:%Y-%m-%d %H:%M}"
    )
