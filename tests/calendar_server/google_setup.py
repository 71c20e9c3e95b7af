"""The google backend's test set-up: a served fake Google, the credentials the auth command
would have written, and settings pointing at the fake."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from calendar_server.calls import BERLIN
from fakes.google_calendar import FakeGoogleCalendar
from mcp_calendar.settings import CalendarSettings

OWNER = "ada@example.com"
DENTIST = "dentist0001"
STANDUP = "standup0001"


def credentials(fake: FakeGoogleCalendar, directory: Path, base_url: str) -> Path:
    """The OAuth client file and a token file whose access token Google no longer takes
    (the first call answers 401 and the client refreshes)."""
    directory.mkdir(parents=True, exist_ok=True)
    client = {
        "installed": {
            "client_id": fake.client_id,
            "client_secret": fake.client_secret,
            "auth_uri": f"{base_url}/auth",
            "token_uri": f"{base_url}/token",
            "redirect_uris": ["http://localhost"],
        }
    }
    (directory / "client_secret.json").write_text(json.dumps(client))
    token = {"token": "ya29.expired", "refresh_token": fake.grant(), "scopes": []}
    (directory / "token.json").write_text(json.dumps(token))
    (directory / "token.json").chmod(0o600)
    return directory


def settings(data_dir: Path, credentials_dir: Path, base_url: str, **more: Any) -> CalendarSettings:
    return CalendarSettings(
        backend="google",
        timezone=BERLIN,
        data_dir=data_dir,
        credentials_dir=credentials_dir,
        google_api_url=f"{base_url}/calendar/v3/",
        google_token_url=f"{base_url}/token",
        google_retries=2,
        google_backoff_s=0.01,
        **{"ids": ["primary"], **more},
    )


def seed(fake: FakeGoogleCalendar) -> None:
    """Tue 17 Mar 2026 10:00 the dentist; a weekly stand-up on Mondays 09:30 from 16 Mar;
    Wed 18 Mar a team lunch 12:00."""
    fake.put(
        OWNER,
        {
            "id": DENTIST,
            "summary": "Dentist",
            "location": "Main St 5",
            "start": {"dateTime": "2026-03-17T10:00:00+01:00", "timeZone": BERLIN},
            "end": {"dateTime": "2026-03-17T11:00:00+01:00", "timeZone": BERLIN},
        },
    )
    fake.put(
        OWNER,
        {
            "id": STANDUP,
            "summary": "Stand-up",
            "start": {"dateTime": "2026-03-16T09:30:00+01:00", "timeZone": BERLIN},
            "end": {"dateTime": "2026-03-16T09:45:00+01:00", "timeZone": BERLIN},
            "recurrence": ["RRULE:FREQ=WEEKLY;BYDAY=MO"],
        },
    )
    fake.put(
        OWNER,
        {
            "id": "lunch00001",
            "summary": "Team lunch",
            "start": {"dateTime": "2026-03-18T12:00:00+01:00", "timeZone": BERLIN},
            "end": {"dateTime": "2026-03-18T13:00:00+01:00", "timeZone": BERLIN},
        },
    )


def stored(fake: FakeGoogleCalendar, event_id: str) -> dict[str, Any]:
    """The event as Google holds it now."""
    event = fake.stored(OWNER, event_id)
    assert event is not None
    return event
