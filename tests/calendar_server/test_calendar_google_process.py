"""`python -m mcp_calendar` with CALENDAR_BACKEND=google as a real process, its credentials
directory mounted read-only (a bind mount made read-only in a mount namespace of its own,
as a container's ``:ro`` volume): reads work through the official SDK client, a refreshed
token is kept in memory and said once in the log, and no token reaches the log."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from calendar_server.google_setup import OWNER, credentials, seed
from fakes.google_calendar import FakeGoogleCalendar
from fakes.serving import ServerProcess, sdk_client, serving_in_thread

pytestmark = pytest.mark.anyio

TOKEN = "calendar-google-process-token-3"
# sh -c SCRIPT sh DIR COMMAND...: DIR bound onto itself read-only, then COMMAND.
_READ_ONLY = (
    'mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" "$1" || exit 97; shift; exec "$@"'
)


def read_only(directory: Path, command: list[str]) -> list[str]:
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("needs unshare (util-linux) for a read-only mount")
    flags = ["--mount"] if os.geteuid() == 0 else ["--map-root-user", "--mount"]
    wrapped = [unshare, *flags, "sh", "-c", _READ_ONLY, "sh", str(directory)]
    probe = subprocess.run([*wrapped, "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"cannot bind-mount read-only here: {probe.stderr.decode()[:200]}")
    return [*wrapped, *command]


@pytest.fixture
def google() -> Iterator[tuple[FakeGoogleCalendar, str]]:
    fake = FakeGoogleCalendar(OWNER)
    seed(fake)
    with serving_in_thread(fake.app) as url:  # in a thread: ready() blocks while it polls
        yield fake, url


async def test_a_refreshed_token_on_a_read_only_mount_is_kept_in_memory_and_logged_once(
    tmp_path: Path, google: tuple[FakeGoogleCalendar, str]
) -> None:
    fake, url = google
    creds = credentials(fake, tmp_path / "creds", url)
    server = ServerProcess(
        "mcp_calendar",
        tmp_path / "data",
        TOKEN,
        command=read_only(creds, [sys.executable, "-m", "mcp_calendar"]),
        CALENDAR_TIMEZONE="Europe/Berlin",
        CALENDAR_BACKEND="google",
        CALENDAR_CREDENTIALS_DIR=str(creds),
        CALENDAR_GOOGLE_API_URL=f"{url}/calendar/v3/",
        CALENDAR_GOOGLE_TOKEN_URL=f"{url}/token",
    )
    try:
        base = server.ready()
        async with sdk_client(f"{base}/mcp", TOKEN) as client:
            first = await client.call_tool("get_events", {"start": "2026-03-17"})
            fake.expire_access_tokens()
            again = await client.call_tool("get_events", {"start": "2026-03-17"})
    finally:
        log = server.stop()
    assert first.structured_content is not None
    assert again.structured_content is not None
    assert first.structured_content["events"] == again.structured_content["events"]
    assert [e["title"] for e in again.structured_content["events"]] == ["Dentist"]
    assert len(fake.token_requests) >= 2  # refreshed at start (health) and after expiry
    assert log.count("kept in memory") == 1, log
    assert "ya29" not in log
    assert all(token not in log for token in fake.refresh_tokens)
    assert json.loads((creds / "token.json").read_text())["token"] == "ya29.expired"
