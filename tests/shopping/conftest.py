from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from fakes.approval_keys import PUBLIC_ENV, write_public_key
from fakes.clock import Clock
from mcp_shopping.importer import import_orders, read_orders
from mcp_shopping.server import build_server
from mcp_shopping.settings import ShoppingSettings
from shopping.calls import ORDERS_CSV, START, TODAY


@pytest.fixture(autouse=True)
def approval_public_key(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """pending-actions' public key (the tests' key pair), as every confirm server gets it."""
    path = write_public_key(tmp_path / "keys")
    monkeypatch.setenv(PUBLIC_ENV, str(path))
    return path


@pytest.fixture
def clock() -> Clock:
    return Clock(START)  # the day TODAY names, at noon UTC


@pytest.fixture
def settings(tmp_path: Path) -> ShoppingSettings:
    """Every field explicit, so SHOPPING_* and DATA_DIR in the environment change nothing."""
    return ShoppingSettings(default_list="groceries", currency="$", data_dir=tmp_path / "data")


@pytest.fixture
async def history(settings: ShoppingSettings) -> None:
    """The orders of ORDERS_CSV in the history of agent "default"."""
    await import_orders(settings.db_path, "default", read_orders(ORDERS_CSV.splitlines()), START)


@pytest.fixture
async def client(settings: ShoppingSettings, clock: Clock) -> AsyncIterator[Client[Any]]:
    async with Client(build_server(settings, clock=clock, today=lambda: TODAY)) as client:
        yield client
