"""The meter: every model call priced and counted, every allowance checked before one.

    before a call ─► Meter.check(who): each limit of the agent's allowance against the
                     in-process totals ─► Capped (no call) or None
    after a call  ─► Meter.used(who, model, usage): a UsageRecord, priced, added to the
                     totals at once and kept in the outbox until memory has it
    a turn stored ─► Meter.take(agent): the outbox rides on its append_items (no call of
                     its own); put back (``restore``) when memory did not answer
    anything else ─► Meter.flush(agent): record_usage (a failed or cut turn, a summary, a
                     briefing)

The totals of an agent are read from memory (``usage_totals``) once per agent-day, the
first time a limit is checked in it, then kept current in process: this orchestrator
makes every model call, so nothing else changes them but a grant (``granted``). An agent
without an allowance is never read for: its records are only sent. When memory does not
answer, the day goes on from what the process knows (the month so far, nothing of the new
day) and the read is tried again at the next check: a check never blocks a turn because
memory is down.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from meshkit.wire.usage import (
    Grant,
    PeriodSpend,
    Purpose,
    Recorded,
    Spend,
    UsageRecord,
    UsageTotals,
)
from orchestrator.config.fleet import AllowanceEntry, Amount
from orchestrator.config.prices import Prices
from orchestrator.core.allowance_limits import (
    WARN_AT,
    Limit,
    Periods,
    Standing,
    limits,
    more_for,
    periods,
    standing,
)
from orchestrator.core.usage_book import totals_arguments
from orchestrator.llm.base import Usage
from orchestrator.mesh.registry import Registry
from orchestrator.mesh.roles import RoleClient

logger = logging.getLogger(__name__)

Clock = Callable[[], float]
MAX_SENT = 500  # records in one call (memory's bound)
MAX_WARNED = 20  # warning keys in one call (memory's bound)
MAX_KEPT = 10_000  # records kept for memory while it does not answer


@dataclass(frozen=True)
class Who:
    """Whom a model call is for: the agent, whose allowance it counts to (``user``), the
    chat, what it is for, and what it is part of (an update id, a firing key)."""

    agent: str
    user: str
    chat_id: str
    purpose: Purpose
    turn_id: str | None = None


@dataclass(frozen=True)
class Metered:
    """An agent as the meter sees it: its allowance and its time zone."""

    allowance: AllowanceEntry | None
    timezone: str = "UTC"


@dataclass(frozen=True)
class Capped:
    """A limit reached: where it stands, the periods it is in, what one tap allows more."""

    who: Who
    standing: Standing
    periods: Periods
    more: Amount
    currency: str
    granted: int = 0  # the user's grants of the day in the limit's unit, known now


@dataclass(frozen=True)
class Warning:
    """A limit past ``WARN_AT`` of itself, said once per period: its key and where it stands."""

    key: str
    standing: Standing
    periods: Periods
    currency: str


def cost_of(usage: Usage, model: str, prices: Prices, *, local: bool) -> float | None:
    """What a call cost in the table's currency: unknown (None) when no usage was reported
    or a hosted model has no price; a local model without a price costs 0."""
    if not usage.known:
        return None
    price = prices.price(model)
    if price is None:
        return 0.0 if local else None
    cached = min(usage.cached_input_tokens, usage.input_tokens)
    cached_price = price.input if price.cached_input is None else price.cached_input
    micro = (
        (usage.input_tokens - cached) * price.input
        + cached * cached_price
        + usage.output_tokens * price.output
    )
    return micro / 1_000_000 + usage.audio_s / 60 * price.per_minute


def record_of(
    who: Who, model: str, usage: Usage, *, cost: float | None, at: float, record_id: str
) -> UsageRecord:
    known = usage.known
    return UsageRecord(
        id=record_id,
        at=at,
        agent=who.agent,
        user=who.user,
        chat_id=who.chat_id,
        purpose=who.purpose,
        model=model or "unknown",
        turn_id=who.turn_id,
        input_tokens=usage.input_tokens if known else None,
        cached_input_tokens=usage.cached_input_tokens if known else None,
        output_tokens=usage.output_tokens if known else None,
        reasoning_tokens=usage.reasoning_tokens if known else None,
        cost=cost,
    )


def add(totals: UsageTotals, record: UsageRecord, bounds: Periods) -> None:
    """Count ``record`` in ``totals`` (its day and month, as a whole and for its user)."""
    if not bounds.month_start <= record.at < bounds.month_end:
        return
    in_day = bounds.day_start <= record.at < bounds.day_end
    user = totals.users.setdefault(record.user, PeriodSpend())
    for period in (totals.total, user):
        _count(period.month, record)
        if in_day:
            _count(period.day, record)


def _count(spend: Spend, record: UsageRecord) -> None:
    spend.calls += 1
    if record.input_tokens is None or record.output_tokens is None:
        spend.unknown_usage += 1
        return
    spend.tokens += record.input_tokens + record.output_tokens
    if record.cost is None:
        spend.unknown_cost += 1
    else:
        spend.cost += record.cost


def warning_key(limit: Limit, bounds: Periods, user: str) -> str:
    """``2026-11-27:agent:day``, ``2026-11:user:month:4242``: a warning given once."""
    key = f"{bounds.name(limit.period)}:{limit.key}"
    return f"{key}:{user}" if limit.scope == "user" else key


class Meter:
    def __init__(
        self,
        registry: Registry,
        prices: Prices,
        agents: Mapping[str, Metered],
        *,
        local: bool,
        clock: Clock = time.time,
    ) -> None:
        """``local``: the models are served locally (OPENAI_BASE_URL): unpriced ones cost
        0; on a hosted API they are of unknown cost."""
        self._memory = RoleClient(registry, "memory")
        self.prices = prices
        self._agents = dict(agents)
        self._limits = {agent: limits(entry.allowance) for agent, entry in agents.items()}
        self._local = local
        self._clock = clock
        self._totals: dict[str, UsageTotals] = {}
        self._loaded: dict[str, str] = {}  # agent → the day its totals were read for
        self._outbox: list[UsageRecord] = []
        self._warned: list[tuple[str, str]] = []  # (agent, key) not yet stored

    @property
    def currency(self) -> str:
        return self.prices.currency

    def now(self) -> datetime:
        return datetime.fromtimestamp(self._clock(), UTC)

    def periods(self, agent: str) -> Periods:
        return periods(self._zone(agent), self.now())

    def limited(self, agent: str) -> bool:
        return bool(self._limits.get(agent))

    async def check(self, who: Who) -> Capped | None:
        """The first limit of the agent's allowance ``who`` has reached; None: call away."""
        if not self.limited(who.agent):
            return None
        totals, bounds = await self.totals(who.agent)
        for limit in self._limits[who.agent]:
            where = standing(limit, totals, who.user)
            if where.reached:
                allowance = self._agents[who.agent].allowance
                assert allowance is not None  # limited
                more = more_for(allowance, limit)
                granted = sum(
                    1
                    for grant in totals.grants
                    if (grant.user, grant.day, grant.unit) == (who.user, totals.day, more.unit)
                )
                return Capped(who, where, bounds, more, self.currency, granted)
        return None

    def used(self, who: Who, model: str, usage: Usage) -> UsageRecord:
        """Record one call: priced, counted at once, kept until memory has it."""
        at = self._clock()
        cost = cost_of(usage, model, self.prices, local=self._local)
        record = record_of(
            who, model, usage, cost=cost, at=at, record_id=f"use_{secrets.token_hex(8)}"
        )
        self._outbox.append(record)
        if len(self._outbox) > MAX_KEPT:  # memory away for long: the oldest are let go
            logger.warning("usage: memory has not taken records for long; the oldest dropped")
            del self._outbox[: len(self._outbox) - MAX_KEPT]
        totals = self._totals.get(who.agent)
        if totals is not None:
            bounds = periods(self._zone(who.agent), datetime.fromtimestamp(at, UTC))
            if totals.day == bounds.day:
                add(totals, record, bounds)
        return record

    def warnings(self, who: Who) -> list[Warning]:
        """The limits past ``WARN_AT`` not yet warned of in their period: each is warned of
        now (once), and its key goes with the next records to memory. Only with totals
        known (the check before the call read them)."""
        totals = self._totals.get(who.agent)
        if totals is None or not self.limited(who.agent):
            return []
        bounds = self.periods(who.agent)
        if totals.day != bounds.day:
            return []
        found = []
        for limit in self._limits[who.agent]:
            where = standing(limit, totals, who.user)
            key = warning_key(limit, bounds, who.user)
            if where.fraction >= WARN_AT and key not in totals.warned:
                totals.warned.append(key)
                self._warned.append((who.agent, key))
                found.append(Warning(key, where, bounds, self.currency))
        return found

    def granted(self, grant: Grant) -> None:
        """A grant confirmed by a tap: counted from now on (memory has recorded it)."""
        totals = self._totals.get(grant.agent)
        if totals is None or totals.day != grant.day:
            return  # read with the day's totals when they are read
        if all(known.id != grant.id for known in totals.grants):
            totals.grants.append(grant)

    def take(self, agent: str) -> tuple[list[UsageRecord], list[str]]:
        """The agent's records and warnings memory does not have yet, for its append_items;
        ``restore`` them if it did not answer."""
        records = [r for r in self._outbox if r.agent == agent][:MAX_SENT]
        warned = [key for owner, key in self._warned if owner == agent][:MAX_WARNED]
        taken = {r.id for r in records}
        self._outbox = [r for r in self._outbox if r.id not in taken]
        self._warned = [w for w in self._warned if not (w[0] == agent and w[1] in warned)]
        return records, warned

    def restore(self, agent: str, records: list[UsageRecord], warned: list[str]) -> None:
        """Taken records and warnings memory did not take: sent with the next ones."""
        self._outbox = [*records, *self._outbox]
        self._warned = [*((agent, key) for key in warned), *self._warned]

    async def flush(self, agent: str) -> bool:
        """Send the agent's records and warnings by themselves (record_usage); whether
        memory has them all now."""
        records, warned = self.take(agent)
        if not records and not warned:
            return True
        arguments = {
            "records": [r.model_dump(mode="json") for r in records],
            "warned": warned,
            "agent": agent,
        }
        recorded: Recorded | None = None
        try:
            recorded = await self._memory.call("record_usage", arguments, Recorded)
        finally:
            if recorded is None:  # no answer, or cut short: sent with the next ones
                self.restore(agent, records, warned)
        return recorded is not None

    async def totals(self, agent: str) -> tuple[UsageTotals, Periods]:
        """The agent's totals in its current day and month: read from memory once per
        agent-day, kept current in process."""
        bounds = self.periods(agent)
        totals = self._totals.get(agent)
        if totals is not None and self._loaded.get(agent) == bounds.day:
            return totals, bounds
        read = await self._read(agent, bounds)
        if read is not None:
            self._loaded[agent] = bounds.day
            for record in self._outbox:  # made here, not in memory yet
                if record.agent == agent:
                    add(read, record, bounds)
            read.warned = sorted({*read.warned, *(k for a, k in self._warned if a == agent)})
            self._totals[agent] = read
            return read, bounds
        if totals is None or totals.day != bounds.day:
            totals = _rolled(totals, bounds, agent)  # from what the process knows
            self._totals[agent] = totals
        return totals, bounds

    async def _read(self, agent: str, bounds: Periods) -> UsageTotals | None:
        arguments = totals_arguments(agent, bounds)
        totals = await self._memory.call("usage_totals", arguments, UsageTotals)
        if totals is None:
            logger.warning(
                "usage of agent %s could not be read from memory: counting from what this "
                "process knows until it can",
                agent,
            )
        return totals

    def _zone(self, agent: str) -> str:
        metered = self._agents.get(agent)
        return "UTC" if metered is None else metered.timezone


def _rolled(totals: UsageTotals | None, bounds: Periods, agent: str) -> UsageTotals:
    """Totals for a new day from the old ones: the month goes on when it is the same, the
    day starts at nothing, grants end, the month's warnings stay."""
    fresh = UsageTotals(agent=agent, day=bounds.day, month=bounds.month, total=PeriodSpend())
    if totals is None or totals.month != bounds.month:
        return fresh
    fresh.total = PeriodSpend(month=totals.total.month.model_copy())
    fresh.users = {
        user: PeriodSpend(month=spend.month.model_copy()) for user, spend in totals.users.items()
    }
    fresh.warned = [key for key in totals.warned if key.split(":", 1)[0] == bounds.month]
    return fresh
