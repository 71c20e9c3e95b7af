"""The calendar through the orchestrator, in-process: the agent's zone filled in for every
calendar call, a day answered from the calendar, a move proposed with its overlap, the tap
that moves it, and a tap after the event changed elsewhere that changes nothing.

The servers are real (calendar, pending-actions in embedded mode on real SQLite files); the
model is the fake; events come from an .ics imported with ``python -m mcp_calendar import``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from fakes.responses_api import call, calls, text
from fakes.world import ROOT, World, answer_from_output, ask_in, clawdia, tap_in
from orchestrator.app import App
from orchestrator.core.replies import Reply
from orchestrator.core.routes import Deliver, FileContext

pytestmark = pytest.mark.anyio

CHAT = "4343"  # a private chat: its id is its user's
PARIS = ZoneInfo("Europe/Paris")  # the test fleet's agent zone; the server's default is UTC


def tomorrow() -> date:
    return (datetime.now(PARIS) + timedelta(days=1)).date()


def ics(day: date, dentist_at: str) -> str:
    stamp = day.strftime("%Y%m%d")
    return (
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\n"
        "BEGIN:VEVENT\r\nUID:dentist@test\r\nSUMMARY:Dentist\r\n"
        f"DTSTART;TZID=Europe/Paris:{stamp}T{dentist_at}00\r\nDURATION:PT1H\r\nEND:VEVENT\r\n"
        "BEGIN:VEVENT\r\nUID:school@test\r\nSUMMARY:School run\r\n"
        f"DTSTART;TZID=Europe/Paris:{stamp}T170000\r\nDURATION:PT30M\r\nEND:VEVENT\r\n"
        "END:VCALENDAR\r\n"
    )


def import_calendar(world: World, content: str) -> None:
    """The calendar as a synced file brings it: ``python -m mcp_calendar import``."""
    path = world.data_dir.parent / "family.ics"
    path.write_text(content)
    subprocess.run(
        [sys.executable, "-m", "mcp_calendar", "import", str(path)],
        env={**os.environ, "DATA_DIR": str(world.data_dir)},
        check=True,
        capture_output=True,
    )


@asynccontextmanager
async def with_calendar(world: World) -> AsyncIterator[App]:
    """The test fleet, with the calendar server in its registry and in clawdia's servers."""
    registry, agents = world.settings.registry, world.settings.agents
    registry.write_text(
        registry.read_text()
        + "  calendar: {module: 'mcp_calendar.server:build_server', proposes: true}\n"
    )
    agents.write_text(agents.read_text().replace("shopping]", "shopping, calendar]"))
    async with clawdia(world) as app:
        yield app


MESSAGE = "7001"  # the message the replies' buttons are shown in


async def ask(app: App, message: str) -> Reply:
    return await ask_in(app, CHAT, MESSAGE, message)


async def tap(app: App, reply: Reply, label: str) -> Reply:
    return await tap_in(app, CHAT, MESSAGE, reply, label)


async def dentist(app: App, day: date) -> list[str]:
    found = app.registry.find("calendar", "get_events")
    assert found is not None
    result = await app.registry.call(found, {"start": day.isoformat(), "timezone": "Europe/Paris"})
    assert result.structured is not None
    events: list[dict[str, Any]] = result.structured["events"]
    return [e["start"][11:16] for e in events if e["title"] == "Dentist"]


def say_the_day(out: dict[str, Any]) -> str:
    listed = ", ".join(f"{e['title']} at {e['start'][11:16]}" for e in out["events"])
    return f"Tomorrow: {listed} ({out['timezone']})."


async def test_a_day_is_answered_from_the_calendar_in_the_agents_zone(world: World) -> None:
    day = tomorrow()
    import_calendar(world, ics(day, "1500"))
    world.llm.script(
        calls(call("calendar__get_events", start=day.isoformat())),
        answer_from_output(say_the_day),
    )
    async with with_calendar(world) as app:
        reply = await ask(app, "what's on tomorrow?")

    assert reply.text == "Tomorrow: Dentist at 15:00, School run at 17:00 (Europe/Paris)."
    sent = [i for i in world.llm.requests[0]["tools"] if i["name"] == "calendar__get_events"]
    assert "timezone" not in sent[0]["parameters"]["properties"]  # the model never sets it


async def test_a_move_is_proposed_with_its_overlap_and_happens_only_on_the_tap(
    world: World,
) -> None:
    day = tomorrow()
    import_calendar(world, ics(day, "1500"))
    world.llm.script(
        calls(call("calendar__propose_event_move", event="the dentist", start=f"{day}T17:00")),
        text("Shall I move the dentist?"),
    )
    async with with_calendar(world) as app:
        reply = await ask(app, "move the dentist to 5pm")
        before = await dentist(app, day)
        moved = await tap(app, reply, "Move")
        after = await dentist(app, day)

    assert "Overlaps: “School run”" in reply.text
    assert "15:00–16:00 to " in reply.text
    assert "17:00–18:00 (Europe/Paris)" in reply.text
    assert [[b.label for b in row] for row in reply.buttons] == [["📅 Move", "Keep"]]
    assert (before, after) == (["15:00"], ["17:00"])
    assert "✅ Calendar: Move “Dentist”" in moved.text


async def test_a_tap_after_the_event_changed_elsewhere_changes_nothing_and_says_why(
    world: World,
) -> None:
    day = tomorrow()
    import_calendar(world, ics(day, "1500"))
    world.llm.script(
        calls(call("calendar__propose_event_move", event="dentist", start=f"{day}T17:00")),
        text("Shall I move the dentist?"),
    )
    async with with_calendar(world) as app:
        reply = await ask(app, "move the dentist to 5pm")
        import_calendar(world, ics(day, "1130"))  # the practice moved it meanwhile
        refused = await tap(app, reply, "Move")
        after = await dentist(app, day)

    assert after == ["11:30"]
    assert "⚠️" in refused.text
    assert "“Dentist” changed since it was proposed: it is now" in refused.text
    assert "propose it again" in refused.text


async def test_an_ics_file_sent_in_chat_is_imported_once_after_the_tap_never_by_the_model(
    world: World,
) -> None:
    export = (ROOT / "tests" / "calendar_server" / "exports" / "google_family.ics").read_text()
    shown: list[Reply] = []

    async def deliver(reply: Reply) -> str:
        shown.append(reply)
        return MESSAGE

    async with with_calendar(world) as app:
        sent = FileContext(
            "clawdia", CHAT, CHAT, "family.ics", export, "from my sister",
            Deliver(MESSAGE, deliver),
        )  # fmt: skip
        proposed = await app.dispatcher.on_calendar_file(sent)
        imported = await tap(app, proposed, "Import")
        again = await app.dispatcher.on_calendar_file(sent)
        week = await app.registry.call_named(
            "calendar", "get_events",
            {"start": "2026-03-17", "end": "2026-03-19", "timezone": "Europe/Paris"},
        )  # fmt: skip

    assert shown == [proposed, again]
    assert proposed.text.startswith("📅 family.ics\n\nfrom my sister")
    assert "Import 2 events into personal?" in proposed.text
    assert "Repaired while reading" in proposed.text  # the export's orphaned override
    assert [[b.label for b in row] for row in proposed.buttons] == [["📥 Import", "Skip"]]
    assert "Imported 2 events into personal." in imported.text
    assert again.text.startswith("Nothing to import: 2 events are in personal already")
    assert week.structured is not None
    assert [e["title"] for e in week.structured["events"]] == ["Choir", "Design review"]
    assert world.llm.requests == []  # the model never read the file
