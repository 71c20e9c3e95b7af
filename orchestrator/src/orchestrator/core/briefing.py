"""The morning briefing: its parts gathered by direct tool calls, written by the model when
it answers, by a plain template when it does not.

    parts (at once): calendar of the day (if the agent has a calendar), weather at the
                     agent's ``home``, open proposals, today's reminders
    ─► the model writes them as one message (no tools)  ─or─  the template, as they are
       (also when the owner's allowance is reached: no model call then)
    ─► one line under it for each part that failed; an allowance warning, if one is due

No part needs the model: a briefing arrives while the model is down. A part whose server
fails is left out, and a line says so.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import anyio
from pydantic import BaseModel, ConfigDict

from meshkit.wire.pending_actions import ActionList
from meshkit.wire.scheduler import Firing, Reminders
from orchestrator.core.allowance_replies import warning_text
from orchestrator.core.instructions import instructions
from orchestrator.core.runtime import AgentRuntime
from orchestrator.core.usage import Meter, Who
from orchestrator.llm.errors import LLMError
from orchestrator.mesh.errors import ToolCallError
from orchestrator.mesh.registry import Registry

logger = logging.getLogger(__name__)

TITLES = {
    "calendar": "📅 Today",
    "weather": "🌤 Weather",
    "proposals": "⏳ Waiting for your confirmation",
    "reminders": "⏰ Reminders today",
}
FAILED = {
    "calendar": "(Your calendar could not be read just now.)",
    "weather": "(The weather could not be fetched just now.)",
    "proposals": "(Your open confirmations could not be listed just now.)",
    "reminders": "(Your reminders could not be listed just now.)",
}
WRITE = (
    "Write the user's morning briefing as one short, friendly Telegram message from the "
    "facts below, in your own voice: what the day holds, the weather, anything waiting for "
    "them. Use only these facts; do not invent any, and do not ask questions."
)


@dataclass(frozen=True)
class Section:
    part: str
    lines: list[str]  # empty: nothing to say (no events), and the part is left out


class Briefings:
    def __init__(self, registry: Registry, meter: Meter | None = None) -> None:
        """``meter``: the model's call counts to the owner's allowance; at its cap the
        briefing is the template."""
        self._registry = registry
        self._meter = meter

    async def compose(self, runtime: AgentRuntime, firing: Firing, owner: str) -> str:
        """The briefing message: gathered, then written (by the model, else the template)."""
        day = datetime.fromisoformat(firing.scheduled_at)
        parts = [str(p) for p in firing.payload.get("parts", [])]
        sections, failed = await self._gather(runtime, parts, owner, day)
        facts = template(sections, day, firing.late)
        who = Who(runtime.id, owner, owner, "briefing", firing.key)
        text = await self._written(runtime, facts, day, who)
        notes = [FAILED[part] for part in failed]
        warned = await self._metered(who)
        return "\n\n".join([text or facts, *(["\n".join(notes)] if notes else []), *warned])

    async def _metered(self, who: Who) -> list[str]:
        """The warnings the briefing's call crossed, recorded with its usage."""
        if self._meter is None:
            return []
        warned = [warning_text(warning) for warning in self._meter.warnings(who)]
        await self._meter.flush(who.agent)
        return warned

    async def _gather(
        self, runtime: AgentRuntime, parts: list[str], owner: str, day: datetime
    ) -> tuple[list[Section], list[str]]:
        gatherers: dict[str, Callable[[], Awaitable[list[str] | None]]] = {
            "calendar": lambda: self._calendar(runtime, day),
            "weather": lambda: self._weather(runtime),
            "proposals": lambda: self._proposals(runtime, owner),
            "reminders": lambda: self._reminders(runtime, day),
        }
        found: dict[str, list[str] | None] = {}
        failed: list[str] = []

        async def one(part: str) -> None:
            try:
                found[part] = await gatherers[part]()
            except ToolCallError as error:
                logger.warning("briefing %s: %s failed (%s); left out", runtime.id, part, error)
                failed.append(part)

        async with anyio.create_task_group() as tasks:
            for part in parts:
                if part in gatherers:
                    tasks.start_soon(one, part)
        sections = [Section(p, lines) for p in parts if (lines := found.get(p))]
        return sections, [p for p in parts if p in failed]

    async def _call(self, server: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return (await self._registry.call_as(server, tool, arguments, _Loose)).model_dump()

    def _server_with(self, runtime: AgentRuntime, tool: str) -> str | None:
        for server in runtime.agent.servers:
            if self._registry.find(server, tool) is not None:
                return server
        return None

    async def _calendar(self, runtime: AgentRuntime, day: datetime) -> list[str] | None:
        server = self._server_with(runtime, "get_events")
        if server is None:
            return None  # the agent has no calendar: no such part
        zone = runtime.agent.entry.timezone
        found = await self._call(
            server, "get_events", {"start": day.date().isoformat(), "timezone": zone}
        )
        events = found.get("events", [])
        return [_event_line(e) for e in events] or ["Nothing in the calendar."]

    async def _weather(self, runtime: AgentRuntime) -> list[str] | None:
        home = runtime.agent.entry.home
        server = self._server_with(runtime, "get_forecast")
        if home is None or server is None:
            return None
        found = await self._call(server, "get_forecast", {"location": home, "days": 1})
        days = found.get("days") or []
        if not days:
            return None
        place = str(found.get("place", {}).get("name", home)).split(",")[0]
        unit = str(found.get("units", {}).get("temperature", "°C"))
        return [f"{place}: {_weather_line(days[0], unit)}"]

    async def _proposals(self, runtime: AgentRuntime, owner: str) -> list[str] | None:
        server = self._registry.server_for("pending-actions")
        if server is None:
            return None
        listed = await self._registry.call_as(
            server, "list_pending", {"agent": runtime.id, "chat_id": owner}, ActionList
        )
        return [f"• {a.summary}" for a in listed.actions if a.state == "pending"]

    async def _reminders(self, runtime: AgentRuntime, day: datetime) -> list[str] | None:
        server = self._registry.server_for("scheduler")
        if server is None:
            return None
        listed = await self._registry.call_as(
            server, "list_reminders", {"agent": runtime.id}, Reminders
        )
        today = [r for r in listed.reminders if r.due_at[:10] == day.date().isoformat()]
        return [f"• {r.due_at[11:16]} {r.text}" for r in today]

    async def _written(
        self, runtime: AgentRuntime, facts: str, day: datetime, who: Who
    ) -> str | None:
        if self._meter is not None and await self._meter.check(who) is not None:
            logger.info("briefing %s: allowance reached; sent as the template", runtime.id)
            return None
        system = f"{instructions(runtime.agent, day)}\n\n{WRITE}"
        item = {"type": "message", "role": "user", "content": facts}
        try:
            with anyio.fail_after(runtime.limits.timeout_s):
                reply = await runtime.llm.respond(instructions=system, items=[item], tools=[])
                if self._meter is not None:
                    self._meter.used(who, runtime.llm.model, reply.usage)
        except (LLMError, TimeoutError) as error:
            logger.warning(
                "briefing %s: the model did not write it (%s); sent as the template",
                runtime.id,
                type(error).__name__,
            )
            return None
        return reply.text.strip() or None


class _Loose(BaseModel):
    """Any structured result, read as it is (the template picks the fields it knows)."""

    model_config = ConfigDict(extra="allow")


def template(sections: list[Section], day: datetime, late: bool) -> str:
    """The briefing without a model: each part under its title."""
    head = f"☀️ Good morning! Your briefing for {day:%A %-d %B}"
    if late:
        head += f" (late: it was due at {day:%H:%M})"
    blocks = [head]
    blocks += [TITLES[s.part] + "\n" + "\n".join(s.lines) for s in sections]
    if len(blocks) == 1:
        blocks.append("Nothing on today.")
    return "\n\n".join(blocks)


def _event_line(event: dict[str, Any]) -> str:
    start, end = str(event.get("start", "")), str(event.get("end", ""))
    if event.get("all_day") or len(start) <= 10:
        return f"• all day: {event.get('title', '')}"
    return f"• {start[11:16]}–{end[11:16]} {event.get('title', '')}"


def _weather_line(day: dict[str, Any], unit: str) -> str:
    line = str(day.get("conditions", ""))
    low, high = day.get("temperature_min"), day.get("temperature_max")
    if low is not None and high is not None:
        line += f", {low:.0f}–{high:.0f} {unit}"
    rain = day.get("precipitation_probability_max")
    if rain is not None:
        line += f", rain {rain:.0f} %"
    return line
