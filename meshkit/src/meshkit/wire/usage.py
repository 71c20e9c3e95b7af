"""What the memory server's usage tools take and return: the model's usage, call by call,
the totals an allowance is checked against, the reports of ``/usage``, and "allow more".

The orchestrator makes every model call, so it prices each one (its price table) and
sends the record; memory keeps them (``usage.db``) because it already records each turn:
a turn's records ride on its ``append_items``, and its ``turn_context`` is read before it,
so usage costs a turn no call of its own. Calls outside a stored turn (a failed turn, a
summary, a briefing) go by ``record_usage``.

Periods are the agent's: the orchestrator computes a day's and a month's start in the
agent's time zone and names them (``2026-11-27``, ``2026-11``); memory sums by those
bounds and keys grants and warnings by those names.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, model_validator

Purpose = Literal["turn", "scheduled", "briefing", "summary", "voice"]
PURPOSES: tuple[Purpose, ...] = ("turn", "scheduled", "briefing", "summary", "voice")
Unit = Literal["money", "tokens"]
USAGE_ID = r"^use_[0-9a-f]{12,32}$"
DAY = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
MONTH = r"^[0-9]{4}-[0-9]{2}$"
MAX_TIME = 1e11  # Unix seconds, past the year 5000: a bound for every instant
MAX_TOKENS = 10**12
MAX_COST = 1e9


class UsageRecord(BaseModel):
    """One model call: who it was for, what for, and what it used and cost."""

    id: str = Field(
        pattern=USAGE_ID,
        max_length=36,
        description="The call's own id: recording it again stores nothing",
    )
    at: float = Field(ge=0, le=MAX_TIME, description="When the model answered (Unix seconds)")
    agent: str = Field(min_length=1, max_length=64)
    user: str = Field(min_length=1, max_length=200, description="Whose allowance it counts to")
    chat_id: str = Field(min_length=1, max_length=200)
    purpose: Purpose = Field(
        description="turn (a message), scheduled (a scheduled prompt), briefing, summary, "
        "voice (a voice note transcribed)"
    )
    model: str = Field(min_length=1, max_length=200)
    turn_id: str | None = Field(
        default=None,
        max_length=200,
        description="What the call was part of (an update id, a firing key): /usage ranks "
        "turns by it",
    )
    input_tokens: int | None = Field(
        default=None,
        ge=0,
        le=MAX_TOKENS,
        description="As the API reported; null: it reported no usage",
    )
    cached_input_tokens: int | None = Field(
        default=None, ge=0, le=MAX_TOKENS, description="Part of input"
    )
    output_tokens: int | None = Field(default=None, ge=0, le=MAX_TOKENS)
    reasoning_tokens: int | None = Field(
        default=None, ge=0, le=MAX_TOKENS, description="Part of output"
    )
    cost: float | None = Field(
        default=None,
        ge=0,
        le=MAX_COST,
        description="In the price table's currency; null: unknown (no usage reported, or a "
        "hosted model without a price)",
    )


class Recorded(BaseModel):
    stored: int = Field(description="Records stored")
    duplicates: int = Field(description="Records whose id was stored before: nothing stored")


class Spend(BaseModel):
    """What some calls used: known costs and tokens summed, the others counted."""

    cost: float = Field(default=0.0, description="Sum of the known costs")
    tokens: int = Field(default=0, description="Sum of input + output tokens reported")
    calls: int = Field(default=0, description="Model calls")
    unknown_usage: int = Field(default=0, description="Calls whose response reported no usage")
    unknown_cost: int = Field(
        default=0, description="Calls with usage but no cost (a hosted model without a price)"
    )


class Grant(BaseModel):
    """An amount the user allowed on top of an allowance, for one day (a tap)."""

    id: str = Field(description="The pending action that granted it")
    agent: str
    user: str
    day: str = Field(pattern=DAY, description="The agent's local day it is for")
    amount: float = Field(gt=0)
    unit: Unit
    at: float = Field(description="When it was granted (Unix seconds)")


class PeriodSpend(BaseModel):
    day: Spend = Field(default_factory=Spend)
    month: Spend = Field(default_factory=Spend)


class Bounds(BaseModel):
    """The agent's current day and month in Unix seconds, start inclusive, end exclusive
    (``orchestrator.core.allowance_limits.periods``): what ``usage_totals`` sums between."""

    day_start: float = Field(ge=0, le=MAX_TIME)
    day_end: float = Field(ge=0, le=MAX_TIME)
    month_start: float = Field(ge=0, le=MAX_TIME)
    month_end: float = Field(ge=0, le=MAX_TIME)

    @model_validator(mode="after")
    def _ordered(self) -> Bounds:
        if not (self.day_start < self.day_end and self.month_start < self.month_end):
            raise ValueError("each period must start before it ends")
        return self


class UsageTotals(BaseModel):
    """An agent's spend in the current day and month, as a whole and per user, with the
    day's grants and the warnings already given in these periods."""

    agent: str
    day: str = Field(pattern=DAY)
    month: str = Field(pattern=MONTH)
    total: PeriodSpend = Field(description="Every user of the agent together")
    users: dict[str, PeriodSpend] = Field(default_factory=dict, description="Per user")
    grants: list[Grant] = Field(default_factory=list, description="The day's grants")
    warned: list[str] = Field(
        default_factory=list, description="Warning keys recorded in this day or month"
    )


class TurnCost(BaseModel):
    """The calls of one turn (or one summary, one briefing), summed."""

    turn_id: str | None
    agent: str
    user: str
    chat_id: str
    purpose: Purpose
    at: float = Field(description="Its first call (Unix seconds)")
    spend: Spend


class UsageReport(BaseModel):
    """Usage between two instants, for /usage and the operator's command."""

    since: float
    until: float
    total: Spend
    by_purpose: dict[str, Spend] = Field(default_factory=dict)
    by_model: dict[str, Spend] = Field(default_factory=dict)
    by_agent: dict[str, Spend] = Field(default_factory=dict)
    by_user: dict[str, Spend] = Field(default_factory=dict)
    top: list[TurnCost] = Field(
        default_factory=list, description="The most expensive turns, costliest first"
    )
    grants: list[Grant] = Field(default_factory=list, description="Grants made in the range")


# memory's change kind behind "Allow more": tap-only (meshkit.consent.ChangeKind), so every
# proposal of it waits for the user's tap whatever a policy or a grant says.
ALLOW_MORE = "allow_more"


class AllowMorePayload(BaseModel):
    """The change an "allow more" tap confirms: ``amount`` more for ``user`` of ``agent``
    on ``day``, over any allowance of that unit."""

    agent: str = Field(min_length=1, max_length=64)
    user: str = Field(min_length=1, max_length=200)
    day: str = Field(pattern=DAY, max_length=10)
    amount: float = Field(gt=0, le=1_000_000_000)
    unit: Unit
    seen_grants: int | None = Field(
        default=None,
        ge=0,
        le=10_000,
        description="The user's grants of that day in that unit when it was offered: a later "
        "one (another tap on another offer) makes it unnecessary; null: always granted",
    )


class AllowedMore(BaseModel):
    grant: Grant = Field(description="The grant made, or (not needed) the later one made before")
    needed: bool = Field(
        default=True,
        description="False: more was allowed after this was offered; nothing more was granted",
    )
    message: str | None = Field(default=None, description="For the user, when not needed")
    replayed: bool = Field(default=False, description="Granted before: nothing was done now")
