"""`python -m mcp_calendar` with CALENDAR_BACKEND=google as a real process, its credentials
directory mounted read-only (a bind mount made read-only in a mount namespace of its own,
as a container's ``:ro`` volume): reads work through the official SDK client, a refreshed
token is kept in memory and said once in the log, and no token reaches the log. What Google
lists is bounded as the other backends' reads are: past it, a shorter range is asked for,
never a list cut short."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_types import TextContent

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


async def test_a_listing_past_the_reads_bound_asks_for_a_shorter_range_and_cuts_nothing(
    tmp_path: Path, google: tuple[FakeGoogleCalendar, str]
) -> None:
    fake, url = google
    for n in range(20_100):  # a minute each, 1 to 14 March: more than a read may list
        at = f"2026-03-{1 + n // 1440:02d}T{n % 1440 // 60:02d}:{n % 60:02d}:00+01:00"
        when = {"dateTime": at, "timeZone": "Europe/Berlin"}
        fake.put(OWNER, {"id": f"slot{n:06d}", "summary": "Slot", "start": when, "end": when})
    server = ServerProcess(
        "mcp_calendar",
        tmp_path / "data",
        TOKEN,
        CALENDAR_TIMEZONE="Europe/Berlin",
        CALENDAR_BACKEND="google",
        CALENDAR_CREDENTIALS_DIR=str(credentials(fake, tmp_path / "creds", url)),
        CALENDAR_GOOGLE_API_URL=f"{url}/calendar/v3/",
        CALENDAR_GOOGLE_TOKEN_URL=f"{url}/token",
    )
    try:
        base = server.ready()
        async with sdk_client(f"{base}/mcp", TOKEN, timeout_s=120) as client:
            weeks = await client.call_tool(
                "get_events", {"start": "2026-03-01", "end": "2026-03-15"}
            )
            day = await client.call_tool("get_events", {"start": "2026-03-17"})
    finally:
        server.stop()

    assert weeks.is_error
    assert isinstance(weeks.content[0], TextContent)
    assert weeks.content[0].text == "More than 20000 events in this range: ask for a shorter one."
    assert day.structured_content is not None
    assert [e["title"] for e in day.structured_content["events"]] == ["Dentist"]
