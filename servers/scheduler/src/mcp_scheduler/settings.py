"""Scheduler settings (env prefix ``SCHEDULER_``, plus ``DATA_DIR``, ``CLAWMESH_SCHEDULE``
and ``CLAWMESH_AGENTS``)."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pydantic import AliasChoices, Field
from pydantic_settings import SettingsConfigDict

from meshkit.settings import ApprovalSettings

DB_FILE = "scheduler.sqlite3"
DEFAULT_SCHEDULE = Path("config/schedule.yaml")


class SchedulerSettings(ApprovalSettings):
    model_config = SettingsConfigDict(env_prefix="SCHEDULER_", extra="ignore")
    db_file: ClassVar[str] = DB_FILE

    schedule: Path | None = Field(
        default=None,
        validation_alias=AliasChoices("CLAWMESH_SCHEDULE", "schedule"),
        description="The jobs of each agent: morning briefing and scheduled prompts (unset: "
        "config/schedule.yaml if there is one, else no jobs; set: the file must exist).",
    )
    agents: Path = Field(
        default=Path("config/agents.yaml"),
        validation_alias=AliasChoices("CLAWMESH_AGENTS", "agents"),
        description="The fleet file: each agent's time zone (the jobs' wall clock).",
    )
    lease_s: float = Field(
        default=300,
        gt=0,
        description="How long next_due leases a firing before it is handed out again (a "
        "scheduled prompt is a whole turn); a new run of the same consumer takes it at once.",
    )
