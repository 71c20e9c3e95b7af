"""The example order history: loaded on the first start, marked, removable, never back."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from fakes.clock import Clock
from fakes.tool_calls import call
from mcp_shopping.server import build_server
from mcp_shopping.settings import ShoppingSettings
from shopping.calls import TODAY

pytestmark = pytest.mark.anyio


async def recent(settings: ShoppingSettings, clock: Clock) -> list[dict[str, Any]]:
    """The orders get_recent_orders shows, from a server started anew."""
    async with Client(build_server(settings, clock=clock, today=lambda: TODAY)) as client:
        listing = await call(client, "get_recent_orders", agent="clawdia", limit=100)
    return list(listing["orders"])


def forget(settings: ShoppingSettings) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcp_shopping", "forget-examples", "--agent", "clawdia"],
        env={**os.environ, "DATA_DIR": str(settings.data_dir)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


async def test_the_first_start_loads_marked_examples_once_and_forgetting_is_for_good(
    tmp_path: Path, clock: Clock
) -> None:
    settings = ShoppingSettings(data_dir=tmp_path / "data", example_agent="clawdia")
    first = await recent(settings, clock)
    assert len(first) == 10
    assert all(order["example"] for order in first)
    oat = [o for o in first if o["item"] == "Oat Milk Barista Edition"]
    assert [(o["quantity"], o["price"]) for o in oat] == [(2, 3.99)]  # the unit price
    assert len(await recent(settings, clock)) == 10  # a second start loads nothing more

    done = forget(settings)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "removed 10 example orders of agent clawdia\n"
    assert await recent(settings, clock) == []  # and a start after that brings none back


async def test_without_an_example_agent_nothing_is_loaded(
    settings: ShoppingSettings, clock: Clock
) -> None:
    assert settings.example_agent is None
    assert await recent(settings, clock) == []


async def test_reorder_the_oat_milk_works_from_the_examples(tmp_path: Path, clock: Clock) -> None:
    settings = ShoppingSettings(data_dir=tmp_path / "data", example_agent="clawdia")
    async with Client(build_server(settings, clock=clock, today=lambda: TODAY)) as client:
        proposal = await call(client, "propose_reorder", agent="clawdia", item="the oat milk")
    assert proposal["summary"].startswith("Reorder 2 × Oat Milk Barista Edition at Trader Joe's")
