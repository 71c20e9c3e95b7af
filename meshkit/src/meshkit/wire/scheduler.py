"""What the scheduler's tools return: firings leased to the orchestrator, jobs, reminders."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

FiringKind = Literal["briefing", "prompt", "reminder"]
FollowUp = Literal["done", "snooze_10", "snooze_60"]
SNOOZE_MINUTES: dict[str, int] = {"snooze_10": 10, "snooze_60": 60}


def sent_under(firing_key: str) -> str:
    """The idempotency key a firing's message is sent under: a reminder's buttons act only
    in the message sent under its firing's key (the tap carries it, the scheduler checks)."""
    return f"fire:{firing_key}"


class Firing(BaseModel):
    id: str = Field(description="'fir_' + 12 hex: names the firing in buttons")
    key: str = Field(description="'<job or reminder id>@<scheduled time>': the idempotency key")
    agent: str
    kind: FiringKind
    source: str = Field(description="the job id (agent/briefing, agent/prompt/name) or reminder id")
    scheduled_at: str = Field(description="when it was due, ISO 8601 in the agent's zone")
    late: bool = Field(description="handed out well after it was due (the mesh was down)")
    timezone: str
    payload: dict[str, Any] = Field(
        default_factory=dict, description="briefing: parts; prompt: prompt; reminder: text"
    )


class Due(BaseModel):
    firings: list[Firing]
    lease_s: float
    acked: int = Field(
        default=0, description="how many of the keys given in ``ack`` this call marked done"
    )


class Acked(BaseModel):
    acked: int


class JobView(BaseModel):
    id: str
    kind: Literal["briefing", "prompt"]
    when: str = Field(description="'07:30 mon-fri' or a cron expression")
    next_at: str | None = Field(description="the next firing, ISO 8601 in the agent's zone")


class ReminderView(BaseModel):
    id: str
    text: str
    due_at: str = Field(description="ISO 8601 in the reminder's zone")
    repeat: str | None
    state: Literal["active", "waiting", "done", "cancelled"]


class Jobs(BaseModel):
    jobs: list[JobView]
    reminders: list[ReminderView]
    paused: bool = Field(
        default=False, description="paused by the operator: nothing of it fires until resumed"
    )


class Reminders(BaseModel):
    reminders: list[ReminderView]


class FollowedUp(BaseModel):
    firing_id: str
    outcome: FollowUp
    changed: bool = Field(
        description="False: this firing was followed up before (by another tap than this one)"
    )
    message: str = Field(description="what the reminder's message says now")
