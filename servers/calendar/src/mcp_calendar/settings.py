"""Calendar server settings (env prefix ``CALENDAR_``, plus ``DATA_DIR`` shared by every server)."""

from __future__ import annotations

from datetime import time
from pathlib import Path
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, field_validator, model_validator
from pydantic_settings import SettingsConfigDict

from meshkit.settings import ApprovalSettings

DB_FILE = "calendar.sqlite3"


class CalendarSettings(ApprovalSettings):
    model_config = SettingsConfigDict(env_prefix="CALENDAR_", extra="ignore")

    backend: Literal["local"] = Field(
        default="local", description="Where events live: local (SQLite under DATA_DIR)."
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
    work_start: time = Field(default=time(9), description="Working hours start (free time)")
    work_end: time = Field(default=time(17), description="Working hours end (free time)")

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"{value!r} is not an IANA zone; use e.g. Europe/Berlin") from None
        return value

    @model_validator(mode="after")
    def _hours_in_order(self) -> CalendarSettings:
        if self.work_end <= self.work_start:
            raise ValueError("CALENDAR_WORK_END must be after CALENDAR_WORK_START")
        return self

    @property
    def db_path(self) -> Path:
        return self.data_dir / DB_FILE
