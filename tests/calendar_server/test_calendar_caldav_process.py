"""`python -m mcp_calendar` with CALENDAR_BACKEND=caldav as a real process, configured only
through its environment as compose.calendar-caldav.yaml configures the container (the app
password in a file named by CALENDAR_CALDAV_PASSWORD_FILE), against a real Radicale: reads
work through the official SDK client, and the password reaches neither the log nor a tool.
What another client wrote on the server is read under the local calendar's bounds: rules no
person means are shown once, a zone that changes every week leaves its event out (both
counted in /health), and /health answers while a heavy read is being expanded."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import yaml
from mcp_types import TextContent

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


def calendar_object(uid: str, title: str, lines: str, zone: str = "") -> str:
    """One calendar object as another client writes it (``lines``: its times and rule)."""
    return (
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//other client//EN\r\n"
        f"{zone}BEGIN:VEVENT\r\nUID:{uid}\r\nDTSTAMP:20260220T101512Z\r\n"
        f"SUMMARY:{title}\r\n{lines}END:VEVENT\r\nEND:VCALENDAR\r\n"
    )


def weekly_zone(tzid: str = "Custom/Weekly") -> str:
    """A VTIMEZONE whose offset changes every Sunday (twice: 104 changes a year). Radicale
    reads it too: one that changes every hour costs Radicale seconds for each object."""
    parts = "".join(
        f"BEGIN:{part}\r\nDTSTART:19700104T0{n}0000\r\nTZOFFSETFROM:+0{2 - n}00\r\n"
        f"TZOFFSETTO:+0{1 + n}00\r\nRRULE:FREQ=MONTHLY;BYDAY=SU\r\nEND:{part}\r\n"
        for n, part in enumerate(("STANDARD", "DAYLIGHT"))
    )
    return f"BEGIN:VTIMEZONE\r\nTZID:{tzid}\r\n{parts}END:VTIMEZONE\r\n"


def caldav_process(tmp_path: Path, server: Radicale) -> ServerProcess:
    password = tmp_path / "secrets" / "caldav_password"
    password.parent.mkdir(exist_ok=True)
    password.write_text(f"{server.password}\n")
    return ServerProcess(
        "mcp_calendar",
        tmp_path / "data",
        TOKEN,
        CALENDAR_TIMEZONE="Europe/Berlin",
        CALENDAR_BACKEND="caldav",
        CALENDAR_CALDAV_URL=server.url,
        CALENDAR_CALDAV_USER=server.user,
        CALENDAR_CALDAV_PASSWORD_FILE=str(password),
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


async def test_rules_and_zones_no_person_means_are_bounded_as_on_the_local_calendar(
    tmp_path: Path, server: Radicale
) -> None:
    every = ",".join(f"20260317T11{m:02d}{s:02d}Z" for m in range(60) for s in range(60))
    objects = {
        "second.ics": ("Every second", "08", "RRULE:FREQ=SECONDLY\r\n"),
        "stuck.ics": ("Stuck", "09", "RRULE:FREQ=DAILY;INTERVAL=0\r\n"),
        "dates.ics": ("Dates", "12", f"RDATE:{every},{every.replace('T11', 'T12')}\r\n"),
    }
    for name, (title, hour, rule) in objects.items():
        start = f"DTSTART;TZID=Europe/Berlin:20260317T{hour}0000\r\nDURATION:PT1S\r\n"
        server.put("work", name, calendar_object(name, title, start + rule))
    zoned = "DTSTART;TZID=Custom/Weekly:20260317T140000\r\nDURATION:PT1H\r\n"
    server.put("work", "zoned.ics", calendar_object("zoned", "Zoned", zoned, weekly_zone()))
    process = caldav_process(tmp_path, server)
    try:
        base = process.ready()
        with anyio.fail_after(60):  # a read that never ends fails the test, not the run
            async with sdk_client(f"{base}/mcp", TOKEN, timeout_s=60) as client:
                day = await client.call_tool("get_events", {"start": "2026-03-17"})
        health = httpx2.get(f"{base}/health", timeout=10)
    finally:
        log = process.stop()

    assert day.structured_content is not None
    assert [(e["title"], e["start"]) for e in day.structured_content["events"]] == [
        ("Every second", "2026-03-17T08:00:00+01:00"),
        ("Stuck", "2026-03-17T09:00:00+01:00"),
        ("Dentist", "2026-03-17T10:00:00+01:00"),
        ("Dates", "2026-03-17T12:00:00+01:00"),
    ]
    assert health.json()["details"] == {
        "calendar": "reads skip 1 event that cannot be expanded; 3 series are shown once: "
        "their rules are refused (named in the log)"
    }
    assert "time zone 'Custom/Weekly' is refused: it changes its offset more than 12 times" in log
    assert "Traceback" not in log


async def test_health_answers_while_a_heavy_read_is_being_expanded(
    tmp_path: Path, server: Radicale
) -> None:
    # Twenty hourly series over three months: 44,000 occurrences, past the read's bound.
    for n in range(20):
        start = f"DTSTART;TZID=Europe/Berlin:20260101T00{n:02d}00\r\nDURATION:PT1M\r\n"
        rule = "RRULE:FREQ=HOURLY\r\n"
        server.put("work", f"hourly-{n}.ics", calendar_object(f"hourly-{n}", f"H{n}", start + rule))
    process = caldav_process(tmp_path, server)
    finished: list[str] = []
    try:
        base = process.ready()
        async with (
            sdk_client(f"{base}/mcp", TOKEN, timeout_s=60) as client,
            anyio.create_task_group() as tasks,
        ):

            async def read() -> None:
                arguments = {"start": "2026-03-01", "end": "2026-05-31"}
                finished.append(text(await client.call_tool("get_events", arguments)))

            tasks.start_soon(read)
            # The server has the objects once Radicale answered the query: from there on
            # the read is the calendar's own work (parsing and expanding).
            with anyio.fail_after(60):
                while not server.answers("REPORT", "work", ""):  # noqa: ASYNC110 (a log line)
                    await anyio.sleep(0.02)
            assert not finished, "the read ended before the test could ask /health"
            async with httpx2.AsyncClient(timeout=60) as http:
                health = await http.get(f"{base}/health")
            finished.append(f"health {health.status_code}")
    finally:
        process.stop()

    # /health answered, and healthy (a check the event loop cannot run in 2 s fails it),
    # while the read went on; the read ends at its bound (the count, or the seconds of
    # expanding on a slow machine).
    assert finished[0] == "health 200"
    assert finished[1].endswith("ask for a shorter one."), finished


def text(result: Any) -> str:
    [content] = result.content
    assert isinstance(content, TextContent)
    return content.text
