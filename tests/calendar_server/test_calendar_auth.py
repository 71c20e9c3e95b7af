"""``python -m mcp_calendar auth``: the headless consent exchanges the pasted code at the
(fake) token endpoint and writes a private token file the google backend then uses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import pytest
from fastmcp import Client

from calendar_server.google_setup import OWNER, credentials, settings
from fakes.clock import Clock
from fakes.google_calendar import FakeGoogleCalendar
from fakes.serving import serving_in_thread
from fakes.tool_calls import call
from mcp_calendar import auth
from mcp_calendar.server import build_server
from mcp_calendar.settings import CalendarSettings


@pytest.fixture
def google(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FakeGoogleCalendar, str]]:
    # oauthlib refuses a token endpoint without TLS unless told: the fake speaks plain HTTP.
    monkeypatch.setenv("OAUTHLIB_INSECURE_TRANSPORT", "1")
    fake = FakeGoogleCalendar(OWNER)
    with serving_in_thread(fake.app) as url:
        yield fake, url


@pytest.fixture
def config(tmp_path: Path, google: tuple[FakeGoogleCalendar, str]) -> CalendarSettings:
    fake, url = google
    creds = credentials(fake, tmp_path / "creds", url)
    (creds / "token.json").unlink()  # not authorised yet
    return settings(tmp_path / "data", creds, url)


class Operator:
    """Reads what auth prints; pastes the address Google's redirect would show."""

    def __init__(self, fake: FakeGoogleCalendar, state: str | None = None) -> None:
        self.fake = fake
        self.state = state
        self.said: list[str] = []

    def say(self, line: str) -> None:
        self.said.append(line)

    def read(self, prompt: str) -> str:
        [url] = [line for line in self.said if line.startswith("http") and "client_id" in line]
        query = parse_qs(urlsplit(url).query)
        state = self.state or query["state"][0]
        return f"{query['redirect_uri'][0]}?state={state}&code={self.fake.issue_code()}&scope=x"


def test_headless_auth_writes_a_private_token_from_the_pasted_address(
    config: CalendarSettings, google: tuple[FakeGoogleCalendar, str]
) -> None:
    fake, _ = google
    operator = Operator(fake)
    auth.authorize(config, headless=True, read=operator.read, say=operator.say)
    token = json.loads(config.token_file.read_text())
    assert token["refresh_token"] in fake.refresh_tokens
    assert config.token_file.stat().st_mode & 0o777 == 0o600
    [url] = [line for line in operator.said if "client_id" in line]
    query = parse_qs(urlsplit(url).query)
    assert query["access_type"] == ["offline"]
    assert query["redirect_uri"] == ["http://localhost:8765/"]
    assert "https://www.googleapis.com/auth/calendar.events" in query["scope"][0]
    assert not any(token["refresh_token"] in line for line in operator.said)


def test_the_token_auth_wrote_is_what_the_google_backend_reads(
    config: CalendarSettings, google: tuple[FakeGoogleCalendar, str]
) -> None:
    fake, _ = google
    operator = Operator(fake)
    auth.authorize(config, headless=True, read=operator.read, say=operator.say)

    async def calendars() -> dict[str, Any]:
        async with Client(build_server(config, clock=Clock())) as client:
            return await call(client, "list_calendars")

    assert anyio.run(calendars)["calendars"][0]["name"] == OWNER


def test_an_address_from_another_attempt_writes_nothing(
    config: CalendarSettings,
    google: tuple[FakeGoogleCalendar, str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake, _ = google
    operator = Operator(fake, state="someone-elses")
    with pytest.raises(auth.AuthFailed) as failed:
        auth.authorize(config, headless=True, read=operator.read, say=operator.say)
    assert not config.token_file.exists()
    assert str(failed.value) == (
        "that address belongs to another attempt: paste the one this run's address led to."
    )


def test_a_code_google_refuses_says_to_run_it_again(config: CalendarSettings) -> None:
    with pytest.raises(auth.AuthFailed) as failed:
        auth.authorize(config, headless=True, read=lambda _: "4/not-a-code", say=print)
    assert "Google refused the code (invalid_grant)" in str(failed.value)
    assert not config.token_file.exists()


def test_a_missing_client_file_names_where_to_put_it(config: CalendarSettings) -> None:
    config.client_file.unlink()
    with pytest.raises(auth.AuthFailed) as failed:
        auth.authorize(config, headless=True, read=lambda _: "", say=print)
    said = str(failed.value)
    assert said.startswith(f"no OAuth client file at {config.client_file}: create a Desktop")
    assert "\n" not in said


def test_a_privileged_port_is_refused_before_anything_happens(config: CalendarSettings) -> None:
    with pytest.raises(auth.AuthFailed) as failed:
        auth.authorize(config, headless=True, port=80, read=lambda _: "", say=print)
    assert str(failed.value) == "--port 80: take a port of 1024-65535"


def test_a_consent_with_a_box_left_unticked_writes_nothing_and_says_so(
    config: CalendarSettings,
    google: tuple[FakeGoogleCalendar, str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake, _ = google
    fake.granted = "https://www.googleapis.com/auth/calendar.events"
    operator = Operator(fake)
    with pytest.raises(auth.AuthFailed) as failed:
        auth.authorize(config, headless=True, read=operator.read, say=operator.say)
    assert not config.token_file.exists()
    assert "allow every box on the consent screen" in str(failed.value)


def test_the_auth_command_without_a_client_file_exits_with_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [Path(sys.executable).with_name("clawmesh"), "calendar", "auth", "--headless"],
        env={**os.environ, "CALENDAR_CREDENTIALS_DIR": str(tmp_path / "none")},
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 1
    assert done.stderr == (
        f"Error: auth: no OAuth client file at {tmp_path / 'none' / 'client_secret.json'}: "
        "create a Desktop app OAuth client in Google Cloud Console and download its JSON there "
        "(docs/servers.md: Google Calendar). - then run clawmesh calendar auth again\n"
    )
