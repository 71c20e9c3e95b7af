from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from calendar_server.calls import BERLIN, START
from fakes.approval_keys import PUBLIC_ENV, write_public_key
from fakes.clock import Clock
from mcp_calendar.server import build_server
from mcp_calendar.settings import CalendarSettings


@pytest.fixture(autouse=True)
def approval_public_key(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """pending-actions' public key (the tests' key pair), as every confirm server gets it."""
    path = write_public_key(tmp_path / "keys")
    monkeypatch.setenv(PUBLIC_ENV, str(path))
    return path


@pytest.fixture
def clock() -> Clock:
    return Clock(START)


@pytest.fixture
def settings(tmp_path: Path) -> CalendarSettings:
    """Every field explicit, so CALENDAR_* and DATA_DIR in the environment change nothing."""
    return CalendarSettings(
        backend="local", timezone=BERLIN, default_calendar="personal", data_dir=tmp_path / "data"
    )


@pytest.fixture
async def client(settings: CalendarSettings, clock: Clock) -> AsyncIterator[Client[Any]]:
    async with Client(build_server(settings, clock=clock)) as client:
        yield client
