"""What pausing an agent returns, from each server that holds work for it (telegram-io's
inbox, the scheduler's firings): the operator's ``clawmesh agent stop|start``."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Paused(BaseModel):
    agent: str
    paused: bool = Field(description="whether the agent is paused now")
    changed: bool = Field(description="false: it was paused (or running) already")
    waiting: int = Field(
        description="what waits for the agent here: updates (telegram-io), due firings (scheduler)"
    )
