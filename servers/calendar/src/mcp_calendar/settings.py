"""Calendar server settings (env prefix ``CALENDAR_``, plus ``DATA_DIR`` shared by every server).

The backend is ``local`` (SQLite), ``google`` (CALENDAR_IDS, CALENDAR_CREDENTIALS_DIR) or
``caldav`` (CALENDAR_CALDAV_URL, CALENDAR_CALDAV_USER, the app password in the file
CALENDAR_CALDAV_PASSWORD_FILE, and optionally CALENDAR_CALDAV_CALENDARS): a missing one
stops startup with its name.
"""

from __future__ import annotations

from datetime import time
from pathlib import Path
from typing import Annotated, ClassVar, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import NoDecode, SettingsConfigDict

from meshkit.settings import ApprovalSettings, SecretFile

DB_FILE = "calendar.sqlite3"
GOOGLE_API_URL = "https://www.googleapis.com/calendar/v3/"
GOOGLE_TOKEN_URL = "https://oauth2.googleapis.com/token"  # noqa: S105 (a URL, not a secret)
CLIENT_FILE = "client_secret.json"  # the OAuth client as Google Cloud Console downloads it
TOKEN_FILE = "token.json"  # noqa: S105 (a file name) the user's token, `mcp_calendar auth`


class CalendarSettings(ApprovalSettings):
    model_config = SettingsConfigDict(env_prefix="CALENDAR_", extra="ignore")
    db_file: ClassVar[str] = DB_FILE

    backend: Literal["local", "google", "caldav"] = Field(
        default="local",
        description="Where events live: local (SQLite under DATA_DIR), google (Google "
        "Calendar, with the credentials in CALENDAR_CREDENTIALS_DIR) or caldav (iCloud, "
        "Nextcloud, Fastmail or any CalDAV server: CALENDAR_CALDAV_*).",
    )
    timezone: str = Field(
        default="UTC",
        description="The zone times are read in when the client gives none (the orchestrator "
        "gives each agent's own); an IANA name such as Europe/Berlin.",
    )
    default_calendar: str = Field(
        default="personal",
        min_length=1,
        max_length=60,
        pattern=r"^[a-z0-9][a-z0-9_-]*$",
        description="The local calendar new events go to.",
    )
    credentials_dir: Path = Field(
        default=Path("credentials"),
        description=f"google: the directory holding {CLIENT_FILE} and {TOKEN_FILE} (may be "
        "mounted read-only; a refreshed token that cannot be written back is kept in memory).",
    )
    ids: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["primary"],
        description="google: the calendars to use, comma-separated (new events go to the first).",
    )
    google_api_url: str = Field(default=GOOGLE_API_URL, description="Tests point it at a fake.")
    google_token_url: str = Field(default=GOOGLE_TOKEN_URL, description="Tests point it at a fake.")
    google_retries: int = Field(default=4, ge=0, le=10, description="Retries when rate-limited")
    google_backoff_s: float = Field(
        default=1.0, ge=0, description="The first retry's wait; each next one waits twice as long"
    )
    google_timeout_s: float = Field(default=20.0, gt=0, description="One Google request at most")
    google_threads: int = Field(
        default=4, ge=1, le=32, description="Google requests at once (the client is synchronous)"
    )
    caldav_url: str | None = Field(
        default=None,
        description="caldav: the server's address, e.g. https://caldav.icloud.com/, "
        "https://cloud.example.org/remote.php/dav/ or https://caldav.fastmail.com/dav/ "
        "(the calendars are discovered from it).",
    )
    caldav_user: str | None = Field(
        default=None, description="caldav: the account's user name (often the e-mail address)."
    )
    caldav_password_file: SecretFile = Field(
        default=None,
        description="caldav: CALENDAR_CALDAV_PASSWORD_FILE, a file holding the account's app "
        "password (an app-specific password, never the account's own).",
    )
    caldav_calendars: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="caldav: the calendars to use, by id (the last part of the calendar's "
        "address, as list_calendars shows it), comma-separated; new events go to the first. "
        "Unset: every calendar of events found, new events to CALENDAR_DEFAULT_CALENDAR.",
    )
    caldav_timeout_s: int = Field(default=20, gt=0, description="One CalDAV request at most (s)")
    work_start: time = Field(default=time(9), description="Working hours start (free time)")
    work_end: time = Field(default=time(17), description="Working hours end (free time)")

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError, OSError):  # OSError: too long for a path
            shown = value if len(value) <= 64 else f"{value[:60]}…"
            raise ValueError(f"{shown!r} is not an IANA zone; use e.g. Europe/Berlin") from None
        return value

    @field_validator("ids", mode="before")
    @classmethod
    def _split_commas(cls, value: object) -> object:
        value = _comma_list(value)
        if isinstance(value, list) and not value:
            raise ValueError("name at least one calendar, e.g. primary")
        return value

    @field_validator("caldav_calendars", mode="before")
    @classmethod
    def _split_calendars(cls, value: object) -> object:
        return _comma_list(value)

    @field_validator("google_api_url")
    @classmethod
    def _ends_with_slash(cls, value: str) -> str:
        return value if value.endswith("/") else f"{value}/"  # paths are joined onto it

    @model_validator(mode="after")
    def _hours_in_order(self) -> CalendarSettings:
        if self.work_end <= self.work_start:
            raise ValueError("CALENDAR_WORK_END must be after CALENDAR_WORK_START")
        return self

    @model_validator(mode="after")
    def _caldav_account(self) -> CalendarSettings:
        if self.backend != "caldav":
            return self
        missing = [
            name
            for name, value in (
                ("CALENDAR_CALDAV_URL", self.caldav_url),
                ("CALENDAR_CALDAV_USER", self.caldav_user),
                ("CALENDAR_CALDAV_PASSWORD_FILE", self.caldav_password_file),
            )
            if not value
        ]
        if missing:
            raise ValueError(f"CALENDAR_BACKEND=caldav needs {', '.join(missing)}")
        return self

    @property
    def caldav_password(self) -> SecretStr:
        assert self.caldav_password_file is not None  # the backend is caldav: checked at start
        return self.caldav_password_file

    @property
    def new_events_calendar(self) -> str:
        """Where new events go: the first Google or named CalDAV calendar, else the default."""
        if self.backend == "google":
            return self.ids[0]
        if self.backend == "caldav" and self.caldav_calendars:
            return self.caldav_calendars[0]
        return self.default_calendar

    @property
    def client_file(self) -> Path:
        return self.credentials_dir / CLIENT_FILE

    @property
    def token_file(self) -> Path:
        return self.credentials_dir / TOKEN_FILE


def _comma_list(value: object) -> object:
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value
