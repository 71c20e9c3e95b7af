"""Allowances in the agent's time: its periods, its limits, amounts in words.

An agent's ``allowance`` (agents.yaml) gives up to four limits: ``daily`` and ``monthly``
for all its users together (scope ``agent``) and ``per_user.daily``/``monthly`` for each
(scope ``user``), each in money or in tokens. A day and a month are the agent's own,
in its time zone: they renew at its local midnight and on the first of the month.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal
from zoneinfo import ZoneInfo

from meshkit.wire.usage import Spend, UsageTotals
from orchestrator.config.fleet import AllowanceEntry, Amount, Unit

Scope = Literal["agent", "user"]
Period = Literal["day", "month"]
WARN_AT = 0.8  # of an allowance: the chat is warned once per period
DEFAULT_MORE = 0.25  # of the allowance reached: what a tap allows more, unless configured


@dataclass(frozen=True)
class Periods:
    """The agent's current day and month: names (``2026-11-27``, ``2026-11``), bounds in
    Unix seconds (start inclusive, end exclusive), and the zone they are in."""

    timezone: str
    day: str
    month: str
    day_start: float
    day_end: float
    month_start: float
    month_end: float

    def name(self, period: Period) -> str:
        return self.day if period == "day" else self.month

    def start(self, period: Period) -> float:
        return self.day_start if period == "day" else self.month_start

    def end(self, period: Period) -> float:
        return self.day_end if period == "day" else self.month_end


def periods(timezone: str, now: datetime) -> Periods:
    """The day and month ``now`` is in, in ``timezone`` (a DST day has 23 or 25 hours)."""
    zone = ZoneInfo(timezone)
    local = now.astimezone(zone)
    day = datetime(local.year, local.month, local.day, tzinfo=zone)
    next_day = day + timedelta(days=1)  # wall-clock arithmetic: 23 or 25 hours on DST days
    month = datetime(local.year, local.month, 1, tzinfo=zone)
    next_month = datetime(local.year + local.month // 12, local.month % 12 + 1, 1, tzinfo=zone)
    return Periods(
        timezone,
        day.strftime("%Y-%m-%d"),
        month.strftime("%Y-%m"),
        day.timestamp(),
        next_day.timestamp(),
        month.timestamp(),
        next_month.timestamp(),
    )


@dataclass(frozen=True)
class Limit:
    """One limit of an allowance."""

    scope: Scope
    period: Period
    amount: Amount

    @property
    def key(self) -> str:
        """``agent:day``, ``user:month``...: what warnings are keyed by (with the period)."""
        return f"{self.scope}:{self.period}"

    def describe(self) -> str:
        """'daily allowance', "each person's monthly allowance"."""
        adjective = "daily" if self.period == "day" else "monthly"
        return f"{adjective} allowance" if self.scope == "agent" else f"your {adjective} allowance"


def limits(allowance: AllowanceEntry | None) -> list[Limit]:
    """The limits an allowance sets, agent's first."""
    if allowance is None:
        return []
    each: list[tuple[Scope, Period, Amount | None]] = [
        ("agent", "day", allowance.daily),
        ("agent", "month", allowance.monthly),
    ]
    if allowance.per_user is not None:
        each += [("user", "day", allowance.per_user.daily)]
        each += [("user", "month", allowance.per_user.monthly)]
    return [Limit(scope, period, amount) for scope, period, amount in each if amount]


def spent(spend: Spend, unit: Unit) -> float:
    """What ``spend`` counts against a limit in ``unit``."""
    return spend.cost if unit == "money" else float(spend.tokens)


@dataclass(frozen=True)
class Standing:
    """Where one limit stands: what was spent in its period against what is allowed (the
    limit plus the day's grants in its unit)."""

    limit: Limit
    spent: float
    allowed: float

    @property
    def fraction(self) -> float:
        return self.spent / self.allowed if self.allowed > 0 else 1.0

    @property
    def reached(self) -> bool:
        return self.spent >= self.allowed


def standing(limit: Limit, totals: UsageTotals, user: str) -> Standing:
    """``limit`` for ``user`` in the periods of ``totals``. Grants are for their day: an
    agent's limits take every user's grants of the day, a user's limits their own."""
    unit = limit.amount.unit
    granted = sum(
        grant.amount
        for grant in totals.grants
        if grant.unit == unit and grant.day == totals.day
        and (limit.scope == "agent" or grant.user == user)
    )  # fmt: skip
    spend = spend_of(totals, limit.scope, limit.period, user)
    return Standing(limit, spent(spend, unit), limit.amount.value + granted)


def spend_of(totals: UsageTotals, scope: Scope, period: Period, user: str) -> Spend:
    """What ``totals`` count against a limit of ``scope`` in ``period``, for ``user``."""
    spends = totals.total if scope == "agent" else totals.users.get(user)
    if spends is None:
        return Spend()
    return spends.day if period == "day" else spends.month


def more_for(allowance: AllowanceEntry, reached: Limit) -> Amount:
    """What one tap allows more today once ``reached`` is reached: the configured ``more``
    when it is in the same unit, else a quarter of the limit."""
    if allowance.more is not None and allowance.more.unit == reached.amount.unit:
        return allowance.more
    value, unit = reached.amount.value * DEFAULT_MORE, reached.amount.unit
    return Amount(round(value, 2) if unit == "money" else round(value), unit)


def amount_text(value: float, unit: Unit, currency: str = "USD") -> str:
    """'$1.50', '€0.20', '12.00 CHF', '120k tokens', '1.2M tokens', '950 tokens'."""
    if unit == "tokens":
        if value >= 1_000_000:
            return f"{value / 1_000_000:.1f}M tokens".replace(".0M", "M")
        if value >= 10_000:
            return f"{value / 1000:.0f}k tokens"
        return f"{value:,.0f} tokens"
    symbol = {"USD": "$", "EUR": "€", "GBP": "£"}.get(currency.upper())
    cents = f"{value:,.2f}" if value >= 0.01 or value == 0 else f"{value:.4f}"
    return f"{symbol}{cents}" if symbol else f"{cents} {currency}"
