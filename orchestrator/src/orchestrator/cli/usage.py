"""``python -m orchestrator usage``: what the model cost, for the operator.

    python -m orchestrator usage [--json] [--agent ID] [--month YYYY-MM | --day YYYY-MM-DD]

It reads the orchestrator's own configuration (``.env``, ``CLAWMESH_REGISTRY``,
``CLAWMESH_AGENTS``) and asks the memory server the registry names (``role: memory``), as
the orchestrator would: in-process on ``DATA_DIR`` in embedded mode (``make run``), over
HTTP with the orchestrator's credential in the mesh
(``docker compose exec orchestrator python -m orchestrator usage``).

Each agent's periods are its own, in its time zone: without ``--month`` or ``--day``, its
today and this month, with where each limit of its allowance stands. Every mistake is one
line naming what to fix, exit 2, never a traceback.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Literal, NoReturn
from zoneinfo import ZoneInfo

import anyio
from pydantic import BaseModel, ValidationError

from meshkit.logs import configure_logging
from meshkit.settings import CONFIG_ERROR_EXIT, describe_error, environment, fail, fail_all
from meshkit.wire.usage import Spend, UsageReport, UsageTotals
from orchestrator.config import (
    Agent,
    ConfigError,
    load_fleet,
    load_prices,
    load_registry,
    mesh_credentials,
)
from orchestrator.core.allowance import Period, Periods, amount_text, limits, periods, standing
from orchestrator.core.usage_book import UsageBook
from orchestrator.core.usage_view import PURPOSE_NAME, calls_text, uncounted
from orchestrator.mesh.errors import ToolCallError
from orchestrator.mesh.registry import Registry
from orchestrator.mesh.transports import ModuleNotLoadable
from orchestrator.settings import OrchestratorSettings

PROG = "python -m orchestrator usage"
MONTH = re.compile(r"^[0-9]{4}-([0-9]{2})$")
DAY = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
CONNECT_WAIT_S = 5.0


class Mistake(Exception):
    """A mistake in the command line: one line naming what to fix."""


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


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``usage`` subcommand, beside ``chat``."""
    usage = commands.add_parser("usage", help="what the model cost, per agent (operator)")
    usage.add_argument("--json", action="store_true", help="JSON instead of a table")
    usage.add_argument("--agent", help="one agent id from agents.yaml (default: every agent)")
    usage.add_argument("--month", help="a month, YYYY-MM, in each agent's time zone")
    usage.add_argument("--day", help="a day, YYYY-MM-DD, in each agent's time zone")
    usage.add_argument("--verbose", action="store_true", help="logs on stderr")


def asked_of(month: str | None, day: str | None, agent: str | None) -> Asked:
    """The period asked for; a Mistake naming a malformed or doubled one."""
    if month is not None and day is not None:
        raise Mistake("--month and --day: give one of them, not both")
    if month is not None:
        found = MONTH.match(month)
        if found is None or not 1 <= int(found[1]) <= 12:
            raise Mistake(f"--month {month!r} is not a month: write YYYY-MM, e.g. 2026-11")
        return Asked(agent=agent, period="month", name=month)
    if day is not None:
        if DAY.match(day) is None or not _is_date(day):
            raise Mistake(f"--day {day!r} is not a day: write YYYY-MM-DD, e.g. 2026-11-27")
        return Asked(agent=agent, period="day", name=day)
    return Asked(agent=agent)


def _is_date(day: str) -> bool:
    try:
        datetime.strptime(day, "%Y-%m-%d")
    except ValueError:
        return False
    return True


def run(args: argparse.Namespace, secrets: Callable[[OrchestratorSettings], list[str]]) -> None:
    """The subcommand: prints the table (or JSON) on stdout; a mistake is one line on
    stderr, exit 2."""
    try:
        asked = asked_of(args.month, args.day, args.agent)
    except Mistake as error:
        _stop(str(error))
    try:
        settings = OrchestratorSettings()
    except ValidationError as error:
        fail_all(describe_error(OrchestratorSettings, error).splitlines())
    # Quiet unless asked: the table is the answer, and a down server is said in one line.
    configure_logging(settings.log_level if args.verbose else "CRITICAL", secrets=secrets(settings))
    try:
        output = anyio.run(collect, settings, asked, time.time())
    except ConfigError as error:
        fail(str(error))
    except Mistake as error:
        _stop(str(error))
    print(output.model_dump_json(indent=2) if args.json else table(output))


def _stop(line: str) -> NoReturn:
    print(f"{PROG}: {line}", file=sys.stderr)
    raise SystemExit(CONFIG_ERROR_EXIT)


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
    memory = next((name for name, entry in entries.items() if entry.role == "memory"), None)
    if memory is None:
        raise ConfigError(
            f"{settings.registry}: servers: no server with 'role: memory', which keeps the "
            "usage; add it (see the shipped config/mcp_servers.yaml)"
        )
    only = {memory: entries[memory]}
    credentials = mesh_credentials(only, settings.registry, settings.mesh_credentials_file)
    try:
        registry = Registry(
            only,
            credentials=credentials,
            default_timeout_s=settings.tool_timeout_s,
            connect_wait_s=CONNECT_WAIT_S,
        )
    except ModuleNotLoadable as error:
        raise ConfigError(
            f"{settings.registry}: {error}; check the module path and that its package is installed"
        ) from None
    chosen = [fleet[asked.agent]] if asked.agent else list(fleet.values())
    failed: str | None = None
    async with registry.running():
        book = UsageBook(registry)
        try:
            agents = [await _agent_usage(book, agent, asked, now) for agent in chosen]
        except ToolCallError as error:  # raised below, not in the registry's task group
            [status] = [s for s in registry.status() if s.name == memory]
            failed = str(error) if status.up else f"not reachable ({status.error or 'down'})"
    if failed is not None:
        raise Mistake(
            f"the memory server (servers.{memory} in {settings.registry}) gave no usage: "
            f"{failed}; check that it runs and is up to date (docker compose ps {memory}), "
            "and that MESH_CREDENTIALS_FILE holds its credential"
        )
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
        since, until = _bounds(bounds, period)
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


def _bounds(bounds: Periods, period: Period) -> tuple[float, float]:
    if period == "day":
        return bounds.day_start, bounds.day_end
    return bounds.month_start, bounds.month_end


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
            spends = totals.total if user is None else totals.users[user]
            spend = spends.day if limit.period == "day" else spends.month
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
        cost = _cost(turn.spend, currency)
        lines.append(
            f"  {number:>2}. {cost:>10}  {at:%Y-%m-%d %H:%M}  {PURPOSE_NAME[turn.purpose]:<16} "
            f"user {turn.user}  {calls_text(turn.spend.calls)}  {_tokens(turn.spend)}"
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


def _tokens(spend: Spend) -> str:
    unknown = spend.calls and spend.unknown_usage >= spend.calls
    return "tokens unknown" if unknown else f"{spend.tokens:,} tokens"


def _row(label: str, spend: Spend, currency: str) -> str:
    tokens = "-" if spend.calls and spend.unknown_usage >= spend.calls else f"{spend.tokens:,}"
    return (
        f"{label[:28]:<28}{_cost(spend, currency):>12}{tokens:>14}{spend.calls:>8}"
        f"{spend.unknown_usage:>10}{spend.unknown_cost:>10}"
    )


def _cost(spend: Spend, currency: str) -> str:
    if spend.calls and spend.unknown_usage + spend.unknown_cost >= spend.calls:
        return "unknown"
    return amount_text(spend.cost, "money", currency)


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
