"""`python -m mcp_calendar` with CALENDAR_BACKEND=caldav as a real process, configured only
through its environment as compose.calendar-caldav.yaml configures the container (the app
password in a file named by CALENDAR_CALDAV_PASSWORD_FILE), against a real Radicale: reads
work through the official SDK client, and the password reaches neither the log nor a tool."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from fakes.radicale import Radicale, radicale
from fakes.serving import ServerProcess, sdk_client

pytestmark = pytest.mark.anyio

TOKEN = "calendar-caldav-process-token-5"
ROOT = Path(__file__).resolve().parents[2]
DENTIST = (
    "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Apple Inc.//macOS 15.3//EN\r\n"
    "BEGIN:VEVENT\r\nUID:dentist@example.com\r\nDTSTAMP:20260220T101512Z\r\n"
    "DTSTART;TZID=Europe/Berlin:20260317T100000\r\nDTEND;TZID=Europe/Berlin:20260317T110000\r\n"
    "SUMMARY:Dentist\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Radicale]:
    with radicale(tmp_path / "radicale") as started:
        started.make_calendar("work", "Work")
        started.put("work", "dentist.ics", DENTIST)
        yield started


async def test_the_caldav_backend_runs_from_its_environment_and_never_logs_the_password(
    tmp_path: Path, server: Radicale
) -> None:
    password = tmp_path / "secrets" / "caldav_password"
    password.parent.mkdir()
    password.write_text(f"{server.password}\n")
    process = ServerProcess(
        "mcp_calendar",
        tmp_path / "data",
        TOKEN,
        CALENDAR_TIMEZONE="Europe/Berlin",
        CALENDAR_BACKEND="caldav",
        CALENDAR_CALDAV_URL=server.url,
        CALENDAR_CALDAV_USER=server.user,
        CALENDAR_CALDAV_PASSWORD_FILE=str(password),
        CALENDAR_CALDAV_CALENDARS="",  # as the overlay passes it when unset: every calendar
        LOG_LEVEL="DEBUG",  # the caldav library logs its requests at DEBUG
    )
    try:
        base = process.ready()
        async with sdk_client(f"{base}/mcp", TOKEN) as client:
            calendars = await client.call_tool("list_calendars", {})
            day = await client.call_tool("get_events", {"start": "2026-03-17"})
    finally:
        log = process.stop()
    assert calendars.structured_content is not None
    assert calendars.structured_content["calendars"] == [
        {"id": "work", "name": "Work", "writable": True}
    ]
    assert day.structured_content is not None
    assert [e["title"] for e in day.structured_content["events"]] == ["Dentist"]
    basic = base64.b64encode(f"{server.user}:{server.password}".encode()).decode()
    assert server.password not in log
    assert basic not in log


def test_a_missing_password_file_stops_the_server_at_start_with_its_name(tmp_path: Path) -> None:
    process = ServerProcess(
        "mcp_calendar",
        tmp_path / "data",
        TOKEN,
        CALENDAR_BACKEND="caldav",
        CALENDAR_CALDAV_URL="https://dav.example/",
        CALENDAR_CALDAV_USER="ada",
        CALENDAR_CALDAV_PASSWORD_FILE=str(tmp_path / "nowhere"),
    )
    code = process.process.wait(timeout=30)
    log = process.stop()
    assert code != 0
    assert "caldav_password_file" in log.lower()
    assert "Traceback" not in log


def test_the_caldav_overlay_hands_the_password_to_the_calendar_as_a_secret_only() -> None:
    overlay = yaml.safe_load((ROOT / "compose.calendar-caldav.yaml").read_text())
    calendar = overlay["services"]["calendar"]
    environment = calendar["environment"]
    assert environment["CALENDAR_BACKEND"] == "caldav"
    assert environment["CALENDAR_CALDAV_PASSWORD_FILE"] == "/run/secrets/caldav_password"
    assert not any("PASSWORD" in name and "FILE" not in name for name in environment)
    [secret] = calendar["secrets"]
    assert secret["target"] == "caldav_password"
    assert secret["source"] in overlay["secrets"]
    assert set(calendar["networks"]) == {"mesh", "egress"}  # the server is on the internet
    assert list(overlay["services"]) == ["calendar"]
