"""config/schedule.yaml: each agent's morning briefing and scheduled prompts.

```yaml
agents:
  clawdia:
    briefing:                       # optional
      at: "07:30"                   # the agent's time zone (agents.yaml timezone)
      days: [mon, tue, wed, thu, fri]   # or daily (the default), weekdays, weekends
      parts: [calendar, weather, proposals, reminders]   # the default: all four
      catch_up: 2h                  # missed by more than this (switched off): skipped
    prompts:
      - name: week-ahead
        cron: "0 18 * * sun"        # or  at: "12:00"  (with optional days)
        prompt: Look at my calendar for the coming week and tell me what to prepare.
```

Read once at start: a mistake stops the server with the file, the key and the fix. Each
agent's zone comes from the fleet file, so jobs follow the agent's clock.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import time
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from mcp_scheduler.recurrence import Cron, Rule, Weekly, valid_cron
from meshkit.fleet import agent_zones
from meshkit.yaml_config import ConfigError, load_yaml

logger = logging.getLogger(__name__)

Part = Literal["calendar", "weather", "proposals", "reminders"]
PARTS: tuple[Part, ...] = ("calendar", "weather", "proposals", "reminders")
WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
DAY_SETS = {"daily": WEEKDAYS, "weekdays": WEEKDAYS[:5], "weekends": WEEKDAYS[5:]}
DEFAULT_CATCH_UP_S = 2 * 3600
_DURATION = re.compile(r"^(\d{1,4})\s*(m|min|h)$")
_AT = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)$")


def _at(value: object) -> time:
    if isinstance(value, int) and not isinstance(value, bool):  # YAML reads 07:30 as 450
        value = f"{value // 60:02d}:{value % 60:02d}"
    match = _AT.match(str(value).strip()) if isinstance(value, str) else None
    if match is None:
        raise ValueError(f'{value!r} is not a time of day; write it as "HH:MM", e.g. "07:30"')
    return time(int(match[1]), int(match[2]))


def _days(value: object) -> tuple[int, ...]:
    if isinstance(value, str) and value in DAY_SETS:
        value = list(DAY_SETS[value])
    if not isinstance(value, list) or not value:
        raise ValueError("give daily, weekdays, weekends or a list such as [mon, wed, fri]")
    days = []
    for day in value:
        name = str(day).strip().lower()[:3]
        if name not in WEEKDAYS:
            raise ValueError(f"{day!r} is not a day; use mon, tue, wed, thu, fri, sat or sun")
        days.append(WEEKDAYS.index(name))
    return tuple(sorted(set(days)))


def _duration(value: object) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value * 60  # a bare number is minutes
    match = _DURATION.match(str(value).strip().lower())
    if match is None:
        raise ValueError(f"{value!r} is not a duration; write e.g. 2h or 90m")
    return int(match[1]) * (3600 if match[2] == "h" else 60)


class _Timed(BaseModel):
    model_config = ConfigDict(extra="forbid")

    days: tuple[int, ...] = tuple(range(7))
    catch_up: int = Field(default=DEFAULT_CATCH_UP_S, ge=0)

    @field_validator("days", mode="before")
    @classmethod
    def _read_days(cls, value: object) -> object:
        return _days(value)

    @field_validator("catch_up", mode="before")
    @classmethod
    def _read_catch_up(cls, value: object) -> object:
        return _duration(value)


class BriefingEntry(_Timed):
    at: time
    parts: tuple[Part, ...] = PARTS

    @field_validator("at", mode="before")
    @classmethod
    def _read_at(cls, value: object) -> object:
        return _at(value)

    @property
    def rule(self) -> Rule:
        return Weekly(self.at, self.days)


class PromptEntry(_Timed):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{0,39}$")
    prompt: str = Field(min_length=1, max_length=4000)
    cron: str | None = None
    at: time | None = None

    @field_validator("at", mode="before")
    @classmethod
    def _read_at(cls, value: object) -> object:
        return None if value is None else _at(value)

    @field_validator("cron")
    @classmethod
    def _read_cron(cls, value: str | None) -> str | None:
        if value is not None and not valid_cron(value.strip()):
            raise ValueError(
                f"{value!r} is not a five-field cron expression (minute hour day month "
                'weekday), e.g. "0 18 * * sun"'
            )
        return None if value is None else value.strip()

    @model_validator(mode="after")
    def _one_time(self) -> PromptEntry:
        if (self.cron is None) == (self.at is None):
            raise ValueError("give exactly one of cron or at")
        return self

    @property
    def rule(self) -> Rule:
        return Cron(self.cron) if self.cron is not None else Weekly(self.at or time(), self.days)


class AgentJobs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    briefing: BriefingEntry | None = None
    prompts: list[PromptEntry] = Field(default_factory=list)


@dataclass(frozen=True)
class Job:
    """One configured job: ``<agent>/briefing`` or ``<agent>/prompt/<name>``."""

    id: str
    agent: str
    kind: Literal["briefing", "prompt"]
    rule: Rule
    catch_up_s: int
    spec: dict[str, Any]  # what the orchestrator needs to run it (parts, prompt)
    tz: ZoneInfo


def load_schedule(
    path: Path,
    agents_path: Path,
    environ: Mapping[str, str] | None = None,
    *,
    required: bool = True,
) -> list[Job]:
    """The jobs of ``path``; ConfigError naming the file, the key and the fix. A file that
    is not ``required`` (the default path, not set by the operator) may be missing: no jobs."""
    if not path.is_file() and not required:
        logger.debug("no schedule file at %s: no scheduled jobs (reminders work)", path)
        return []
    if not path.is_file():
        raise ConfigError(
            f"{path}: file not found; create it (see config/schedule.yaml in the repository), "
            "or set CLAWMESH_SCHEDULE to its path"
        )
    zones = agent_zones(agents_path, environ)
    raw = load_yaml(path, environ)
    agents = raw.get("agents") or {}
    if not isinstance(agents, dict):
        raise ConfigError(f"{path}: agents: expected a mapping of agent ids to their jobs")
    jobs: list[Job] = []
    for agent, body in agents.items():
        key = f"agents.{agent}"
        if agent not in zones:
            raise ConfigError(
                f"{path}: {key}: no agent {agent!r} in {agents_path}; use one of "
                f"{sorted(zones)} or add the agent there"
            )
        entry = _validate(body or {}, path, key)
        tz = zones[agent]
        if entry.briefing is not None:
            b = entry.briefing
            spec = {"parts": list(b.parts), "when": f"{b.at:%H:%M}", "days": list(b.days)}
            jobs.append(Job(f"{agent}/briefing", agent, "briefing", b.rule, b.catch_up, spec, tz))
        names: set[str] = set()
        for i, prompt in enumerate(entry.prompts):
            if prompt.name in names:
                raise ConfigError(
                    f"{path}: {key}.prompts[{i}].name: {prompt.name!r} is used twice; "
                    "give each prompt its own name"
                )
            names.add(prompt.name)
            spec = {
                "prompt": prompt.prompt,
                "when": prompt.cron or f"{prompt.at:%H:%M}",
                "days": list(prompt.days),
            }
            job_id = f"{agent}/prompt/{prompt.name}"
            jobs.append(Job(job_id, agent, "prompt", prompt.rule, prompt.catch_up, spec, tz))
    return jobs


def _validate(body: Any, path: Path, key: str) -> AgentJobs:
    try:
        return AgentJobs.model_validate(body)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in (key, *first["loc"]))
        message = first["msg"].removeprefix("Value error, ")
        if first["type"] == "extra_forbidden":
            message = "unknown key; the keys are briefing, prompts (briefing: at, days, "
            message += "parts, catch_up; a prompt: name, prompt, cron or at, days, catch_up)"
        elif first["type"] == "missing":
            message = "required; add it"
        elif first["type"] == "literal_error":
            message = f"{first['input']!r} is not a part; use {', '.join(PARTS)}"
        raise ConfigError(f"{path}: {where}: {message}") from None
