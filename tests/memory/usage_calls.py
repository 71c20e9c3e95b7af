"""Usage records and periods the usage tests share: the agent's day and month in Berlin
around the tests' clock (2027-01-15, 09:00 local)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from fakes.clock import START

AGENT = "clawdia"
ADA, BOB = "7001", "7002"
BERLIN = ZoneInfo("Europe/Berlin")
_NOW = datetime.fromtimestamp(START, BERLIN)
_DAY = datetime(_NOW.year, _NOW.month, _NOW.day, tzinfo=BERLIN)
_MONTH = datetime(_NOW.year, _NOW.month, 1, tzinfo=BERLIN)
DAY, MONTH = _DAY.strftime("%Y-%m-%d"), _MONTH.strftime("%Y-%m")
BOUNDS = {
    "day_start": _DAY.timestamp(),
    "day_end": (_DAY + timedelta(days=1)).timestamp(),
    "month_start": _MONTH.timestamp(),
    "month_end": datetime(_NOW.year, _NOW.month + 1, 1, tzinfo=BERLIN).timestamp(),
}
PERIODS = {"agent": AGENT, "day": DAY, "month": MONTH, "bounds": BOUNDS}
HOUR = 3600.0

_ids = iter(range(1, 1_000_000))


def record(**fields: Any) -> dict[str, Any]:
    """A model call of AGENT for ADA now (a turn, 1000 in + 200 out tokens, $0.01), with
    a new id unless given."""
    return {
        "id": f"use_{next(_ids):012x}",
        "at": START,
        "agent": AGENT,
        "user": ADA,
        "chat_id": ADA,
        "purpose": "turn",
        "model": "gpt-5-mini",
        "turn_id": None,
        "input_tokens": 1000,
        "cached_input_tokens": 0,
        "output_tokens": 200,
        "reasoning_tokens": 0,
        "cost": 0.01,
        **fields,
    }


UNREPORTED = {
    "input_tokens": None,
    "cached_input_tokens": None,
    "output_tokens": None,
    "reasoning_tokens": None,
    "cost": None,
}
