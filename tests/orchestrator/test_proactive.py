"""The agent speaks first, in-process: briefings gathered by direct tool calls and written by
the model or a template, reminders set by a tap and followed up on the fast path.

The servers are real (weather, calendar, pending-actions, scheduler in embedded mode, on
real SQLite files), the model and Open-Meteo are the fakes; the scheduler and
pending-actions run on a clock the tests move (``fakes.clocked``).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from pydantic import SecretStr

from fakes.clocked import CLOCK
from fakes.open_meteo import FakeOpenMeteo
from fakes.responses_api import FakeOpenAI, call, calls, server_error, text
from fakes.serving import serving
from fakes.world import API_KEY, ROOT, World, clawdia
from mcp_calendar import ics_files
from mcp_calendar.settings import CalendarSettings
from meshkit.wire.scheduler import Acked, Due, Firing, sent_under
from orchestrator.app import App
from orchestrator.core.replies import Reply
from orchestrator.core.routes import Deliver, TapContext, TextContext
from orchestrator.settings import OrchestratorSettings

pytestmark = pytest.mark.anyio

OWNER = "4242"
GUEST = "5151"  # another allowed user of the agent
PARIS = ZoneInfo("Europe/Paris")
SCHEDULE = """\
agents:
  clawdia:
    briefing:
      at: "07:30"
      parts: [calendar, weather, proposals, reminders]
"""


def ics_for(day: str) -> bytes:
    d = day.replace("-", "")
    return (
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\n"
        f"BEGIN:VEVENT\r\nUID:dentist@test\r\nDTSTAMP:{d}T000000Z\r\n"
        f"DTSTART;TZID=Europe/Paris:{d}T090000\r\nDTEND;TZID=Europe/Paris:{d}T100000\r\n"
        "SUMMARY:Dentist\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
    ).encode()


@pytest.fixture
async def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[World]:
    llm, weather = FakeOpenAI(), FakeOpenMeteo()
    async with llm.serve() as llm_url, serving(weather.app) as open_meteo:
        config = tmp_path / "config"
        config.mkdir()
        registry, agents, schedule = (
            config / "servers.yaml",
            config / "agents.yaml",
            config / "schedule.yaml",
        )
        registry.write_text(
            "servers:\n"
            "  weather: {module: 'mcp_weather.server:build_server'}\n"
            "  calendar: {module: 'mcp_calendar.server:build_server', proposes: true}\n"
            "  memory: {module: 'mcp_memory.server:build_server', role: memory, proposes: true}\n"
            "  pending-actions: {module: 'fakes.clocked:pending_actions', role: pending-actions}\n"
            "  scheduler: {module: 'fakes.clocked:scheduler', role: scheduler, proposes: true}\n"
        )
        agents.write_text(
            "agents:\n  clawdia:\n    name: Clawdia\n"
            f"    persona: {ROOT / 'agents' / 'clawdia'}\n"
            "    servers: [weather, calendar, scheduler]\n"
            f"    allowed_user_ids: ['{OWNER}', '{GUEST}']\n"
            "    timezone: Europe/Paris\n    home: Paris\n"
        )
        schedule.write_text(SCHEDULE)
        for name, value in {
            "WEATHER_FORECAST_URL": f"{open_meteo}/v1/forecast",
            "WEATHER_GEOCODING_URL": f"{open_meteo}/v1/search",
            "DATA_DIR": str(tmp_path / "data"),
            "CLAWMESH_SCHEDULE": str(schedule),
            "CLAWMESH_AGENTS": str(agents),
            "CALENDAR_TIMEZONE": "Europe/Paris",
        }.items():
            monkeypatch.setenv(name, value)
        for name in ("MESH_APPROVAL_SIGNING_KEY_FILE", "MESH_APPROVAL_PUBLIC_KEY_FILE"):
            monkeypatch.delenv(name, raising=False)  # the one key pair in DATA_DIR
        CLOCK.offset = 0.0
        settings = OrchestratorSettings(
            registry=registry,
            agents=agents,
            openai_api_key=SecretStr(API_KEY),
            openai_base_url=llm_url,
            llm_timeout_s=2,
            tool_timeout_s=5,
        )
        world = World(llm, settings, tmp_path / "data")
        world.weather = weather  # type: ignore[attr-defined]
        yield world


def next_briefing() -> datetime:
    """The next 07:30 in Paris after now."""
    now = datetime.now(PARIS)
    at = now.replace(hour=7, minute=30, second=0, microsecond=0)
    return at if at > now else at + timedelta(days=1)


@asynccontextmanager
async def briefing_due(world: World) -> AsyncIterator[tuple[App, Firing]]:
    """The app, with the clock moved to the next briefing and the day's dentist booked."""
    at = next_briefing()
    await ics_files.import_file(
        CalendarSettings(data_dir=world.data_dir, timezone="Europe/Paris"),
        ics_for(at.date().isoformat()),
        "personal",
        writable=True,
        at=time.time(),
    )
    async with clawdia(world) as app:
        CLOCK.advance(at.timestamp() - time.time() + 1)
        [firing] = await due(app)
        yield app, firing


async def due(app: App, run: str = "run-1") -> list[Firing]:
    arguments = {"consumer": "orchestrator", "run": run, "wait_s": 0}
    return (await app.registry.call_as("scheduler", "next_due", arguments, Due)).firings


async def reminders_due(app: App) -> list[Firing]:
    """The reminders among the due firings (the day's briefing may come due meanwhile)."""
    return [f for f in await due(app) if f.kind == "reminder"]


async def handled(app: App, firing: Firing) -> list[Reply]:
    sent: list[Reply] = []

    async def deliver(reply: Reply) -> str:
        sent.append(reply)
        return "77"

    assert await app.proactive.handle(firing, Deliver(sent_under(firing.key), deliver))
    return sent


async def test_the_model_writes_the_briefing_from_the_parts_gathered_without_it(
    world: World,
) -> None:
    world.llm.script(text("Morning! Dentist at 9, then a mild day in Paris."))
    async with briefing_due(world) as (app, firing):
        [reply] = await handled(app, firing)
    assert firing.kind == "briefing"
    assert reply.text == "Morning! Dentist at 9, then a mild day in Paris."
    [request] = world.llm.requests
    assert request.get("tools") in (None, [])  # the parts came from direct tool calls
    facts = str(request["input"])
    assert "09:00–10:00 Dentist" in facts
    assert "Paris:" in facts


async def test_the_briefing_arrives_as_a_template_when_the_model_is_down(world: World) -> None:
    world.llm.script(*[server_error()] * 3)
    async with briefing_due(world) as (app, firing):
        [reply] = await handled(app, firing)
    lines = reply.text.splitlines()
    assert lines[0].startswith("☀️ Good morning! Your briefing for ")
    assert "📅 Today" in lines
    assert "• 09:00–10:00 Dentist" in lines
    assert "🌤 Weather" in lines
    assert any(line.startswith("Paris: ") and "°C" in line for line in lines)


async def test_a_part_that_fails_is_left_out_with_one_line_saying_so(world: World) -> None:
    world.llm.script(*[server_error()] * 3)
    world.weather.fail_with("500")  # type: ignore[attr-defined]
    async with briefing_due(world) as (app, firing):
        [reply] = await handled(app, firing)
    assert "🌤 Weather" not in reply.text
    assert reply.text.endswith("(The weather could not be fetched just now.)")
    assert "• 09:00–10:00 Dentist" in reply.text


async def test_a_reminder_set_by_tap_is_delivered_with_buttons_and_snoozed_without_the_model(
    world: World,
) -> None:
    when = (datetime.now(PARIS) + timedelta(hours=2)).replace(second=0, microsecond=0)
    world.llm.script(
        calls(
            call(
                "scheduler__propose_reminder",
                text="call mum",
                when=when.strftime("%Y-%m-%dT%H:%M"),
            )
        ),
        text("Shall I remind you?"),
    )
    async with clawdia(world) as app:

        async def deliver(reply: Reply) -> str:
            return "10"

        asked = await app.dispatcher.on_text(
            TextContext(
                "clawdia",
                OWNER,
                "remind me in 2 hours to call mum",
                user=OWNER,
                deliver=Deliver("10", deliver),
            ),
        )
        notices: list[str] = []
        edits: list[Reply] = []

        async def answer(notice: str) -> None:
            notices.append(notice)

        async def edit(reply: Reply) -> None:
            edits.append(reply)

        keys = {"10": "10"}  # message id → the key it was sent under

        async def tap(data: str, message: str, tap_id: str | None = None) -> None:
            key = keys[message]
            await app.dispatcher.on_callback(
                TapContext(
                    "clawdia", OWNER, OWNER, message, data, answer, edit, tap_id=tap_id, key=key
                )
            )

        [[set_button, _]] = asked.buttons
        assert await reminders_due(app) == []  # not set before the tap
        await tap(set_button.data, "10")
        jobs = (await app.dispatcher.on_text(TextContext("clawdia", OWNER, "/jobs"))).text
        assert "call mum" in jobs
        assert "briefing: 07:30 daily" in jobs
        CLOCK.advance(when.timestamp() - time.time() + 1)
        [firing] = await reminders_due(app)
        [reminder] = await handled(app, firing)
        keys["77"] = sent_under(firing.key)
        await app.registry.call_as("scheduler", "ack", {"keys": [firing.key]}, Acked)
        assert reminder.text == "⏰ call mum"
        labels = [[b.label for b in row] for row in reminder.buttons]
        assert labels == [["✅ Done", "💤 10 min", "💤 1 h"]]
        requests = len(world.llm.requests)
        snooze = reminder.buttons[0][1].data
        done = reminder.buttons[0][0].data
        edits.clear()  # the proposal's, redrawn by the tap that set the reminder
        # The owner's button, replayed by another user of the agent in their own chat, and
        # in the owner's chat on another message (the proposal's).
        await app.dispatcher.on_callback(
            TapContext("clawdia", GUEST, GUEST, "77", done, answer, edit, key=keys["77"])
        )
        await tap(done, "10")
        assert notices[-2:] == ["That button is no longer active."] * 2
        assert edits == []
        await tap(snooze, "77", "bot:1")
        await tap(snooze, "77", "bot:2")  # a double tap snoozes once, and edits once
        assert len(world.llm.requests) == requests  # no model on the tap
        assert notices[-2:] == ["Snoozed for 10 minutes", "Already done."]
        [snoozed] = edits
        assert snoozed.text.startswith("💤 Snoozed until ")
        await tap(snooze, "77", "bot:1")  # the first tap, handed over again after a crash
        assert notices[-1] == "Snoozed for 10 minutes"
        assert edits[-1].text == "💤 Snoozed: call mum"  # redrawn, in case it was not
        CLOCK.advance(10 * 60)
        [again] = await reminders_due(app)
        assert again.payload["text"] == "call mum"


def next_sunday_6pm() -> datetime:
    now = datetime.now(PARIS)
    sunday = (now + timedelta(days=(6 - now.weekday()) % 7)).replace(
        hour=18, minute=0, second=0, microsecond=0
    )
    return sunday if sunday > now else sunday + timedelta(days=7)


async def test_a_scheduled_prompt_is_a_normal_turn_answered_in_the_owners_chat(
    world: World,
) -> None:
    (world.settings.agents.parent / "schedule.yaml").write_text(
        "agents:\n  clawdia:\n    prompts:\n"
        '      - {name: week-ahead, cron: "0 18 * * sun", prompt: Plan my week.}\n'
    )
    world.llm.script(text("Here is your week."))
    async with clawdia(world) as app:
        sunday = next_sunday_6pm()
        status = (await app.dispatcher.on_text(TextContext("clawdia", OWNER, "/status"))).text
        assert f"⏱ clawdia/prompt/week-ahead: next {sunday:%a %-d %b %H:%M}" in status
        CLOCK.advance(sunday.timestamp() - time.time() + 1)
        [firing] = await due(app)
        [reply] = await handled(app, firing)
    assert reply.text == "Here is your week."
    [request] = world.llm.requests
    assert request["input"][-1]["content"] == "(Scheduled: week-ahead) Plan my week."
    assert any(t["name"] == "calendar__get_events" for t in request["tools"])


async def test_status_shows_the_asking_agents_jobs_only(world: World) -> None:
    agents = world.settings.agents
    clawdia_entry = agents.read_text().split("  clawdia:\n", 1)[1]
    agents.write_text(agents.read_text() + "  bob:\n" + clawdia_entry.replace("Clawdia", "Bob"))
    (agents.parent / "schedule.yaml").write_text(
        "agents:\n"
        "  clawdia:\n    prompts:\n"
        '      - {name: week-ahead, cron: "0 18 * * sun", prompt: Plan my week.}\n'
        "  bob:\n    prompts:\n"
        '      - {name: secret-plan, cron: "0 7 * * mon", prompt: Plan.}\n'
    )
    async with clawdia(world) as app:
        status = (await app.dispatcher.on_text(TextContext("clawdia", OWNER, "/status"))).text
        bobs = (await app.dispatcher.on_text(TextContext("bob", OWNER, "/status"))).text
    assert "clawdia/prompt/week-ahead" in status
    assert "secret-plan" not in status
    assert "bob/prompt/secret-plan" in bobs
    assert "week-ahead" not in bobs


async def test_a_scheduled_prompt_leaves_a_waiting_question_to_the_users_answer(
    world: World,
) -> None:
    (world.settings.agents.parent / "schedule.yaml").write_text(
        "agents:\n  clawdia:\n    prompts:\n"
        '      - {name: week-ahead, cron: "0 18 * * sun", prompt: Plan my week.}\n'
    )
    world.llm.script(
        calls(call("clarify", question="Which Paris do you mean?")),  # an open question
        text("Here is your week."),
        text("Sunny in Paris, Texas."),
    )
    redrawn: list[tuple[str, str]] = []

    async def shown_as_1(reply: Reply) -> str:
        return "1"

    async def edit_message(message_id: str, reply: Reply) -> None:
        redrawn.append((message_id, reply.text))

    async with clawdia(world) as app:
        asked = await app.dispatcher.on_text(
            TextContext(
                "clawdia", OWNER, "Weather in Paris?", user=OWNER, deliver=Deliver("1", shown_as_1)
            )
        )
        CLOCK.advance(next_sunday_6pm().timestamp() - time.time() + 1)  # the scheduler's clock
        [firing] = await due(app)
        [prompted] = await handled(app, firing)
        answered = await app.dispatcher.on_text(
            TextContext("clawdia", OWNER, "Paris, Texas", user=OWNER, edit_message=edit_message)
        )
    assert (asked.text, prompted.text) == ("❓ Which Paris do you mean?", "Here is your week.")
    assert redrawn == [("1", "❓ Which Paris do you mean?\n→ Paris, Texas")]  # the user's answer
    assert answered.text == "Sunny in Paris, Texas."
