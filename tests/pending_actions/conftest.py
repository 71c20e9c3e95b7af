from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from fakes.clock import Clock
from mcp_pending_actions.server import build_server
from mcp_pending_actions.settings import PendingSettings
from meshkit.proposals import KEY_ENV, Approvals
from pending_actions.calls import KEY


@pytest.fixture(autouse=True)
def approval_key(monkeypatch: pytest.MonkeyPatch) -> bytes:
    """The key every server in a test signs with (and confirm tools would check with)."""
    monkeypatch.setenv(KEY_ENV, KEY)
    return KEY.encode()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def settings(tmp_path: Path) -> PendingSettings:
    """Every field explicit, so PENDING_* and DATA_DIR in the environment change nothing."""
    return PendingSettings(
        max_ttl_s=7 * 24 * 3600, executing_lease_s=60, data_dir=tmp_path / "data"
    )


@pytest.fixture
def approvals(approval_key: bytes, clock: Clock) -> Approvals:
    """What a confirm tool checks tokens with."""
    return Approvals(approval_key, clock=clock)


@pytest.fixture
async def client(settings: PendingSettings, clock: Clock) -> AsyncIterator[Client[Any]]:
    async with Client(build_server(settings, clock=clock)) as client:
        yield client
