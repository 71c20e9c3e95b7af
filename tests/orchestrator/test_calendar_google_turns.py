"""The calendar on its google backend through the orchestrator, in-process: the fake LLM
proposes a move, the user's tap moves the event in (fake) Google under the ETag it was
proposed against, and a tap after the event changed in Google changes nothing and says why.

The calendar server is the real one (embedded, CALENDAR_BACKEND=google) talking to the
fake Google over HTTP through google-api-python-client; pending-actions is real too.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from calendar_server.google_setup import OWNER, credentials, stored
from fakes.google_calendar import FakeGoogleCalendar
from fakes.responses_api import call, calls, text
from fakes.serving import serving
from fakes.world import World, ask_in, clawdia, tap_in
from orchestrator.app import App
from orchestrator.core.replies import Reply

pytestmark = pytest.mark.anyio

CHAT = "4545"  # a private chat: its id is its user's
MESSAGE = "7002"
PARIS = "Europe/Paris"
DENTIST = "dentist0002"


def tomorrow() -> date:
    return (datetime.now(ZoneInfo(PARIS)) + timedelta(days=1)).date()


def at(day: date, clock: str) -> dict[str, str]:
    return {"dateTime": f"{day}T{clock}:00{_offset(day)}", "timeZone": PARIS}


def _offset(day: date) -> str:
    offset = datetime(day.year, day.month, day.day, 12, tzinfo=ZoneInfo(PARIS)).strftime("%z")
    return f"{offset[:3]}:{offset[3:]}"


@asynccontextmanager
async def with_google(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[App, FakeGoogleCalendar]]:
    day = tomorrow()
    fake = FakeGoogleCalendar(OWNER)
    fake.calendars[OWNER].time_zone = PARIS
    fake.put(
        OWNER,
        {"id": DENTIST, "summary": "Dentist", "start": at(day, "15:00"), "end": at(day, "16:00")},
    )
    fake.put(
        OWNER,
        {
            "id": "school0002",
            "summary": "School run",
            "start": at(day, "17:00"),
            "end": at(day, "17:30"),
        },
    )
    async with serving(fake.app) as url:
        creds = credentials(fake, world.data_dir.parent / "google", url)
        for name, value in {
            "CALENDAR_BACKEND": "google",
            "CALENDAR_CREDENTIALS_DIR": str(creds),
            "CALENDAR_GOOGLE_API_URL": f"{url}/calendar/v3/",
            "CALENDAR_GOOGLE_TOKEN_URL": f"{url}/token",
        }.items():
            monkeypatch.setenv(name, value)
        registry, agents = world.settings.registry, world.settings.agents
        registry.write_text(
            registry.read_text()
            + "  calendar: {module: 'mcp_calendar.server:build_server', proposes: true}\n"
        )
        agents.write_text(agents.read_text().replace("shopping]", "shopping, calendar]"))
        async with clawdia(world) as app:
            yield app, fake


async def ask(app: App, message: str) -> Reply:
    return await ask_in(app, CHAT, MESSAGE, message)


async def tap(app: App, reply: Reply, label: str) -> Reply:
    return await tap_in(app, CHAT, MESSAGE, reply, label)


async def test_a_tap_moves_the_google_event_proposed_with_its_overlap(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    day = tomorrow()
    world.llm.script(
        calls(call("calendar__propose_event_move", event="the dentist", start=f"{day}T17:00")),
        text("Shall I move the dentist?"),
    )
    async with with_google(world, monkeypatch) as (app, fake):
        reply = await ask(app, "move the dentist to 5pm")
        before = stored(fake, DENTIST)["start"]
        moved = await tap(app, reply, "Move")
        after = stored(fake, DENTIST)["start"]

    assert "Overlaps: “School run”" in reply.text
    assert [[b.label for b in row] for row in reply.buttons] == [["📅 Move", "Keep"]]
    assert before == at(day, "15:00")
    assert after == at(day, "17:00")
    assert "✅ Calendar: Move “Dentist”" in moved.text


async def test_a_tap_after_the_event_changed_in_google_changes_nothing_and_says_why(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    day = tomorrow()
    world.llm.script(
        calls(call("calendar__propose_event_move", event="dentist", start=f"{day}T17:00")),
        text("Shall I move the dentist?"),
    )
    async with with_google(world, monkeypatch) as (app, fake):
        reply = await ask(app, "move the dentist to 5pm")
        fake.edit(OWNER, DENTIST, start=at(day, "11:30"), end=at(day, "12:30"))  # elsewhere
        refused = await tap(app, reply, "Move")

    assert stored(fake, DENTIST)["start"] == at(day, "11:30")
    assert "⚠️" in refused.text
    assert "“Dentist” changed since it was proposed: it is now" in refused.text
    assert "propose it again" in refused.text
