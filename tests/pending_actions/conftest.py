from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from fakes.approval_keys import PUBLIC_KEY, SIGNING_ENV, write_signing_key
from fakes.clock import Clock
from mcp_pending_actions.server import build_server
from mcp_pending_actions.settings import PendingSettings
from meshkit.proposals import Approvals


@pytest.fixture(autouse=True)
def approval_signing_key(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The tests' signing key, as pending-actions gets it (confirm tools check with its
    public half)."""
    path = write_signing_key(tmp_path / "keys")
    monkeypatch.setenv(SIGNING_ENV, str(path))
    return path


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def settings(tmp_path: Path) -> PendingSettings:
    """Every field explicit, so PENDING_* and DATA_DIR in the environment change nothing."""
    return PendingSettings(
        max_ttl_s=7 * 24 * 3600,
        executing_lease_s=60,
        notice_lease_s=30,
        notice_interval_s=5,
        notice_retry_s=2,
        notice_retry_max_s=300,
        client_max_pending=10,
        data_dir=tmp_path / "data",
        agents=tmp_path / "agents.yaml",  # not there until a test writes it: everyone asks
    )


@pytest.fixture
def approvals(clock: Clock) -> Approvals:
    """What a confirm tool checks tokens with."""
    return Approvals(PUBLIC_KEY, clock=clock)


@pytest.fixture
async def client(settings: PendingSettings, clock: Clock) -> AsyncIterator[Client[Any]]:
    async with Client(build_server(settings, clock=clock)) as client:
        yield client
