"""What people see of usage: ``/usage`` and its line in ``/status``.

    /usage  ─► memory: usage_totals (the agent's day and month: where each limit stands,
               the day's grants) beside usage_report of today and of this month
            ─► one message: today and this month, by purpose, each limit of the allowance
               with its standing and renewal, the day's grants, the most expensive turns
    /status ─► usage_totals ─► one line

Periods are the agent's, in its time zone (``core.allowance_limits``). Money is in the price
table's currency. A call whose response reported no usage, or of a hosted model without a
price, is counted as such and never guessed. The agent's owner sees every user's usage;
another user sees their own, and where the agent's shared limits stand.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from meshkit.wire.usage import PURPOSES, Grant, Spend, TurnCost, UsageReport, UsageTotals
from orchestrator.config.fleet import AllowanceEntry, Unit
from orchestrator.core.allowance_limits import (
    WARN_AT,
    Periods,
    Standing,
    amount_text,
    limits,
    periods,
    spend_of,
    standing,
)
from orchestrator.core.dispatch import owner_of
from orchestrator.core.replies import Reply
from orchestrator.core.routes import CommandContext
from orchestrator.core.runtime import AgentRuntime
from orchestrator.core.usage_book import UsageBook
from orchestrator.mesh.errors import ToolCallError

logger = logging.getLogger(__name__)

USAGE = "what the model cost today and this month"  # /usage in /help and the "/" menu
UNAVAILABLE = "I can't read the usage right now (memory is unavailable). Try again in a moment."
PURPOSE_NAMES = {
    "turn": "messages",
    "scheduled": "scheduled prompts",
    "briefing": "briefings",
    "summary": "summaries",
    "voice": "voice notes",
}
PURPOSE_NAME = {
    "turn": "message",
    "scheduled": "scheduled prompt",
    "briefing": "briefing",
    "summary": "summary",
    "voice": "voice note",
}
Clock = Callable[[], float]


@dataclass(frozen=True)
class Seen:
    """Everything ``/usage`` shows, read for one user of one agent at one instant."""

    name: str  # the agent's
    user: str  # who asked
    whole: bool  # every user's usage (the owner), or the asking user's own
    allowance: AllowanceEntry | None
    periods: Periods
    now: float
    totals: UsageTotals
    day: UsageReport
    month: UsageReport
    currency: str


class UsageView:
    """``/usage`` and the ``/status`` line, read from memory through a :class:`UsageBook`."""

    def __init__(
        self,
        book: UsageBook,
        agents: Mapping[str, AgentRuntime],
        currency: str,
        clock: Clock = time.time,
    ) -> None:
        self._book = book
        self._agents = agents
        self._currency = currency
        self._clock = clock

    async def command(self, asked: CommandContext) -> Reply:
        """``/usage``: the agent's usage today and this month, for the asking user."""
        runtime = asked.runtime
        now = self._clock()
        current = periods(runtime.agent.entry.timezone, datetime.fromtimestamp(now, UTC))
        whole = sees_everything(runtime, asked.user)
        try:
            totals, day, month = await self._book.current(
                runtime.id, current, None if whole else asked.user
            )
        except ToolCallError as error:
            logger.warning("/usage: %s", error)
            return Reply(UNAVAILABLE)
        entry = runtime.agent.entry
        seen = Seen(
            entry.name, asked.user, whole, entry.allowance, current, now, totals, day, month,
            self._currency,
        )  # fmt: skip
        return Reply(usage_text(seen))

    async def status_lines(self, agent: str) -> list[str]:
        """One line: the agent's spend today and this month, and its limits' standing."""
        entry = self._agents[agent].agent.entry
        now = self._clock()
        current = periods(entry.timezone, datetime.fromtimestamp(now, UTC))
        try:
            totals = await self._book.totals(agent, current)
        except ToolCallError as error:
            logger.warning("/status usage: %s", error)
            return ["📊 Usage: unavailable (memory)"]
        return [status_line(totals, entry.allowance, self._currency)]


def sees_everything(runtime: AgentRuntime, user: str) -> bool:
    """The owner sees every user's usage. Telegram admits allowed users only, so a user
    outside the list is the console's: the operator at the terminal, who sees it all too."""
    allowed = runtime.agent.entry.allowed_user_ids
    return user == owner_of(runtime) or user not in allowed


def usage_text(seen: Seen) -> str:
    """``/usage``'s message."""
    zone = ZoneInfo(seen.periods.timezone)
    today = datetime.fromtimestamp(seen.now, zone)
    whose = f"Usage of {seen.name}" if seen.whole else f"Your usage of {seen.name}"
    lines = [
        f"📊 {whose} — today is {today:%a %-d %b} ({seen.periods.timezone})",
        f"Today: {spend_text(seen.day.total, seen.currency)}",
        f"This month ({today:%B}): {spend_text(seen.month.total, seen.currency)}",
    ]
    lines += _by_purpose(seen)
    lines += _allowance(seen)
    lines += _grants(seen)
    lines += _top(seen, zone)
    return "\n".join(lines)


def _by_purpose(seen: Seen) -> list[str]:
    used = [p for p in PURPOSES if seen.month.by_purpose.get(p, Spend()).calls]
    if not used:
        return []
    lines = ["By purpose:"]
    for purpose in used:
        day = seen.day.by_purpose.get(purpose, Spend())
        month = seen.month.by_purpose[purpose]
        lines.append(
            f"• {PURPOSE_NAMES[purpose]}: today {short_spend(day, seen.currency)}, "
            f"this month {short_spend(month, seen.currency)}"
        )
    return lines


def _allowance(seen: Seen) -> list[str]:
    found = limits(seen.allowance)
    if not found:
        return ["Allowance: none set, so the model is never stopped (agents.yaml: allowance)."]
    lines = ["Allowance:"]
    for limit in found:
        where = standing(limit, seen.totals, seen.user)
        spend = spend_of(seen.totals, limit.scope, limit.period, seen.user)
        lines.append(standing_line(where, spend, seen.periods, seen.now, seen.currency))
    return lines


def _grants(seen: Seen) -> list[str]:
    grants = [
        grant
        for grant in seen.totals.grants
        if grant.day == seen.totals.day and (seen.whole or grant.user == seen.user)
    ]
    if not grants:
        return []
    zone = ZoneInfo(seen.periods.timezone)
    return ["Allowed more today:"] + [
        grant_line(grant, seen.user, zone, seen.currency) for grant in grants
    ]


def _top(seen: Seen, zone: ZoneInfo) -> list[str]:
    turns = [turn for turn in seen.month.top if turn.spend.calls]
    if not turns:
        return []
    lines = ["Most expensive this month:"]
    for number, turn in enumerate(turns, 1):
        who = None if not seen.whole else turn.user
        lines.append(f"{number}. " + turn_line(turn, zone, seen.currency, who, seen.user))
    return lines


def spend_text(spend: Spend, currency: str) -> str:
    """'$0.42 · 38k tokens · 12 calls', with the calls whose usage or cost is unknown said
    as such; 'nothing yet' when there were no calls."""
    if not spend.calls:
        return "nothing yet"
    text = f"{cost_text(spend, currency)} · {_tokens(spend)} · {calls_text(spend.calls)}"
    return text + _unknown_note(spend)


def short_spend(spend: Spend, currency: str) -> str:
    """'$0.30 (21k tokens)'; 'nothing' without calls."""
    if not spend.calls:
        return "nothing"
    return f"{cost_text(spend, currency)} ({_tokens(spend)})"


def cost_text(spend: Spend, currency: str, unknown: str = "cost unknown") -> str:
    """'$0.42'; ``unknown`` when no call of ``spend`` had both a usage and a price."""
    if spend.calls and spend.unknown_usage + spend.unknown_cost >= spend.calls:
        return unknown
    return amount_text(spend.cost, "money", currency)


def tokens_known(spend: Spend) -> bool:
    return not spend.calls or spend.unknown_usage < spend.calls


def _tokens(spend: Spend) -> str:
    return amount_text(spend.tokens, "tokens") if tokens_known(spend) else "tokens unknown"


def _unknown_note(spend: Spend) -> str:
    parts = []
    if spend.unknown_usage:
        parts.append(f"{calls_text(spend.unknown_usage)} reported no usage")
    if spend.unknown_cost:
        parts.append(f"{calls_text(spend.unknown_cost)} of a model without a price")
    return f" (not counted: {', '.join(parts)})" if parts else ""


def calls_text(count: int) -> str:
    """'1 call', '12 calls'."""
    return f"{count} call" + ("s" if count != 1 else "")


def uncounted(spend: Spend, unit: Unit) -> int:
    """The calls of ``spend`` a limit in ``unit`` could not count: no usage reported, or
    (for money) no price."""
    return spend.unknown_usage + (spend.unknown_cost if unit == "money" else 0)


def standing_line(
    where: Standing, spend: Spend, current: Periods, now: float, currency: str
) -> str:
    """'⚠️ Daily allowance: $0.85 of $1.00 · 85 % · renews at midnight (Europe/Paris), in
    5h 12m', with the day's grants and the calls it could not count."""
    limit = where.limit
    unit = limit.amount.unit
    granted = where.allowed - limit.amount.value
    of = amount_text(where.allowed, unit, currency)
    if granted > 0:
        of += (
            f" ({amount_text(limit.amount.value, unit, currency)} + "
            f"{amount_text(granted, unit, currency)} allowed today)"
        )
    mark = "🛑" if where.reached else "⚠️" if where.fraction >= WARN_AT else "•"
    state = "reached" if where.reached else f"{where.fraction * 100:.0f} %"
    description = limit.describe()
    line = (
        f"{mark} {description[0].upper()}{description[1:]}: "
        f"{amount_text(where.spent, unit, currency)} of {of} · {state} · "
        f"renews {renewal(limit.period, current, now)}"
    )
    missed = uncounted(spend, unit)
    if missed:
        line += f" (not counted: {calls_text(missed)} of unknown {_unit_word(unit)})"
    return line


def _unit_word(unit: Unit) -> str:
    return "cost" if unit == "money" else "usage"


def renewal(period: str, current: Periods, now: float) -> str:
    """When a period's limit renews, in the agent's zone: 'at midnight (Europe/Paris), in
    5h 12m'; 'on Tue 1 Dec (Europe/Paris)'."""
    if period == "day":
        left = max(0, int(current.day_end - now))
        hours, minutes = left // 3600, left % 3600 // 60
        within = f"{hours}h {minutes:02d}m" if hours else f"{minutes}m"
        return f"at midnight ({current.timezone}), in {within}"
    start = datetime.fromtimestamp(current.month_end, ZoneInfo(current.timezone))
    return f"on {start:%a %-d %b} ({current.timezone})"


def grant_line(grant: Grant, user: str, zone: ZoneInfo, currency: str) -> str:
    """'• +$0.25 for you at 14:02'."""
    who = "you" if grant.user == user else grant.user
    at = datetime.fromtimestamp(grant.at, zone)
    return f"• +{amount_text(grant.amount, grant.unit, currency)} for {who} at {at:%H:%M}"


def turn_line(turn: TurnCost, zone: ZoneInfo, currency: str, who: str | None, user: str) -> str:
    """'$0.12 · message · Thu 26 Nov 18:04 · 5 calls, 23k tokens' (and whose, for the
    owner, when it was not theirs)."""
    at = datetime.fromtimestamp(turn.at, zone)
    spend = turn.spend
    text = (
        f"{cost_text(spend, currency)} · {PURPOSE_NAME[turn.purpose]} · {at:%a %-d %b %H:%M} · "
        f"{calls_text(spend.calls)}, {_tokens(spend)}"
    )
    if who is not None and who != user:
        text += f" · for {who}"
    return text + _unknown_note(spend)


def status_line(totals: UsageTotals, allowance: AllowanceEntry | None, currency: str) -> str:
    """``/status``'s line: '📊 Usage: today $0.42 (12 calls), this month $3.10 (96 calls) ·
    daily allowance 85 % ⚠️ · /usage'. The agent's limits only: /status is about the
    agent; /usage has each user's."""
    day, month = totals.total.day, totals.total.month
    parts = [f"today {_brief(day, currency)}", f"this month {_brief(month, currency)}"]
    line = "📊 Usage: " + ", ".join(parts)
    shared = [limit for limit in limits(allowance) if limit.scope == "agent"]
    for where in (standing(limit, totals, "") for limit in shared):
        adjective = "daily" if where.limit.period == "day" else "monthly"
        state = "reached 🛑" if where.reached else f"{where.fraction * 100:.0f} %"
        if not where.reached and where.fraction >= WARN_AT:
            state += " ⚠️"
        line += f" · {adjective} allowance {state}"
    return line + " · /usage"


def _brief(spend: Spend, currency: str) -> str:
    if not spend.calls:
        return "nothing"
    unknown = spend.unknown_usage + spend.unknown_cost
    note = f", {unknown} of unknown cost" if unknown else ""
    return f"{cost_text(spend, currency)} ({calls_text(spend.calls)}{note})"
