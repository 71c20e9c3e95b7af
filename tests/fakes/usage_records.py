"""Usage as memory keeps it, for the /usage and CLI tests: a fleet with prices and an
allowance, and model calls written through memory's own tool (``record_usage``).

The calls are priced as the shipped table prices them (gpt-5-mini: $0.25 input, $0.025
cached input, $2.00 output per million tokens; gpt-5: $1.25, $0.125, $10.00).
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fakes.world import ROOT
from meshkit.wire.usage import Recorded
from orchestrator.mesh.registry import Registry

OWNER, OTHER = "111", "222"
_ids = itertools.count(1)

FLEET = f"""\
prices:
  currency: USD
  models:
    gpt-5: {{input: 1.25, cached_input: 0.125, output: 10.00}}
    gpt-5-mini: {{input: 0.25, cached_input: 0.025, output: 2.00}}
agents:
  clawdia:
    name: Clawdia
    persona: {ROOT / "agents" / "clawdia"}
    servers: [weather, memory, toys, shopping]
    timezone: Europe/Paris
    allowed_user_ids: ['{OWNER}', '{OTHER}']
    allowance:
      daily: 0.05
      monthly: 1.00
      per_user: {{daily: "10k tokens"}}
"""

PRICES = {
    "gpt-5": (1.25, 0.125, 10.00),
    "gpt-5-mini": (0.25, 0.025, 2.00),
}


def utc(text: str) -> float:
    """'2026-11-27 23:05' in UTC, as Unix seconds."""
    return datetime.strptime(text, "%Y-%m-%d %H:%M").replace(tzinfo=UTC).timestamp()


def call(
    at: float,
    user: str,
    *,
    purpose: str = "turn",
    turn_id: str | None = None,
    model: str = "gpt-5-mini",
    tokens: tuple[int, int, int] | None = (3_200, 0, 400),  # input, cached of it, output
    priced: bool = True,
) -> dict[str, Any]:
    """One model call as the orchestrator records it; ``tokens`` None: the API reported
    no usage; ``priced`` False: a hosted model without a price (cost unknown)."""
    record: dict[str, Any] = {
        "id": f"use_{next(_ids):012x}", "at": at, "agent": "clawdia", "user": user,
        "chat_id": user, "purpose": purpose, "model": model, "turn_id": turn_id,
    }  # fmt: skip
    if tokens is None:
        return record
    inputs, cached, outputs = tokens
    record.update(input_tokens=inputs, cached_input_tokens=cached, output_tokens=outputs)
    if priced:
        price_in, price_cached, price_out = PRICES[model]
        cost = ((inputs - cached) * price_in + cached * price_cached + outputs * price_out) / 1e6
        record["cost"] = round(cost, 8)
    return record


async def record(registry: Registry, *records: dict[str, Any]) -> Recorded:
    memory = registry.server_for("memory")
    assert memory is not None
    return await registry.call_as(memory, "record_usage", {"records": list(records)}, Recorded)


def write_fleet(agents: Path) -> None:
    agents.write_text(FLEET)
