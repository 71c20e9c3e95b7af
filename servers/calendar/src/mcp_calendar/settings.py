"""Calendar server settings (env prefix ``CALENDAR_``, plus ``DATA_DIR`` shared by every server)."""

from __future__ import annotations

from datetime import time
from pathlib import Path
from typing import Annotated, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, field_validator, model_validator
from pydantic_settings import NoDecode, SettingsConfigDict

from meshkit.settings import ApprovalSettings

DB_FILE = "calendar.sqlite3"
GOOGLE_API_URL = "https://www.googleapis.com/calendar/v3/"
GOOGLE_TOKEN_URL = "https://oauth2.googleapis.com/token"  # noqa: S105 (a URL, not a secret)
CLIENT_FILE = "client_secret.json"  # the OAuth client as Google Cloud Console downloads it
TOKEN_FILE = "token.json"  # noqa: S105 (a file name) the user's token, `mcp_calendar auth`


class CalendarSettings(ApprovalSettings):
    model_config = SettingsConfigDict(env_prefix="CALENDAR_", extra="ignore")

    backend: Literal["local", "google"] = Field(
        default="local",
        description="Where events live: local (SQLite under DATA_DIR) or google (Google "
        "Calendar, with the credentials in CALENDAR_CREDENTIALS_DIR).",
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
        if isinstance(value, str):
            value = [part.strip() for part in value.split(",") if part.strip()]
        if isinstance(value, list) and not value:
            raise ValueError("name at least one calendar, e.g. primary")
        return value

    @field_validator("google_api_url")
    @classmethod
    def _ends_with_slash(cls, value: str) -> str:
        return value if value.endswith("/") else f"{value}/"  # paths are joined onto it

    @model_validator(mode="after")
    def _hours_in_order(self) -> CalendarSettings:
        if self.work_end <= self.work_start:
            raise ValueError("CALENDAR_WORK_END must be after CALENDAR_WORK_START")
        return self

    @property
    def new_events_calendar(self) -> str:
        """Where new events go: the local default calendar, or the first Google one."""
        return self.ids[0] if self.backend == "google" else self.default_calendar

    @property
    def client_file(self) -> Path:
        return self.credentials_dir / CLIENT_FILE

    @property
    def token_file(self) -> Path:
        return self.credentials_dir / TOKEN_FILE

    @property
    def db_path(self) -> Path:
        return self.data_dir / DB_FILE
