"""The instructions a turn sends: persona files, what is remembered (one delimited
section, see ``remembered``), then the user's local date and time."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from orchestrator.config.fleet import Agent


def instructions(agent: Agent, now: datetime, remembered: str = "") -> str:
    local = now.astimezone(ZoneInfo(agent.entry.timezone))
    offset = local.strftime("%z")
    stamp = local.strftime("%A, %d %B %Y, %H:%M")
    section = f"{remembered}\n\n" if remembered else ""
    return (
        f"{agent.persona.text()}\n\n{section}"
        f"Current date and time for the user: {stamp} "
        f"({agent.entry.timezone}, UTC{offset[:3]}:{offset[3:]})."
    )
