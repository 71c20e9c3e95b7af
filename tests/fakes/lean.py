"""The lean rig: Clawdia on Telegram in process, as ``make run`` runs her, with the role
servers' tool calls recorded (``fakes.counted``): memory, telegram-io, pending-actions and
the scheduler are the real servers; Telegram, the model and Open-Meteo are the fakes. The
time a tap's notice may be held (``tap_answer_within_s``) is up when a test says so
(``TapTimer``), never by itself; "typing…" starts only after a minute.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from zoneinfo import ZoneInfo

import anyio
import pytest
from pydantic import SecretStr

from fakes.clocked import CLOCK
from fakes.counted import CALLS
from fakes.open_meteo import FakeOpenMeteo
from fakes.responses_api import FakeOpenAI
from fakes.serving import serving
from fakes.telegram_api import FakeTelegram, Sent
from fakes.world import API_KEY, write_telegram_fleet
from orchestrator.app import App, open_app
from orchestrator.channels.scheduled import ScheduledChannel
from orchestrator.channels.telegram import TelegramChannel
from orchestrator.channels.telegram_stream import StreamPace
from orchestrator.settings import OrchestratorSettings
from orchestrator.shutdown import Shutdown

TOKEN = "7000000001:AAFakeTokenForClawdia0123456789abcde"
USER = 4242
POLLS = ("next_updates", "next_due", "extend_leases")
TEXT_TURN = ["memory.turn_context", "memory.append_items", "telegram-io.send_message"]
PARIS = ZoneInfo("Europe/Paris")
TAP_ANSWER_WITHIN_S = 3.0  # the channel's; no other wait of it lasts exactly that
NEVER = StreamPace(first_after_s=3600)  # within a test: a reply done within the first second
AT_ONCE = StreamPace(first_after_s=0, every_s=0, edit_every_s=0)  # each change, as it comes


@dataclass
class TapTimer:
    """The channel's sleep: a tap's wait for its notice (``TAP_ANSWER_WITHIN_S``), and a wait
    of any length a test ``hold``s, last until the test says the time is up (``expire``);
    the channel's other waits are real. ``waiting`` counts the held waits under way."""

    _up: dict[float, anyio.Event] = field(
        default_factory=lambda: {TAP_ANSWER_WITHIN_S: anyio.Event()}
    )
    waiting: dict[float, int] = field(default_factory=dict)

    async def sleep(self, seconds: float) -> None:
        up = self._up.get(seconds)
        if up is None:
            await anyio.sleep(seconds)
            return
        self.waiting[seconds] = self.waiting.get(seconds, 0) + 1
        try:
            await up.wait()
        finally:
            self.waiting[seconds] -= 1

    def hold(self, seconds: float) -> None:
        """Waits of ``seconds`` last until ``expire(seconds)``."""
        self._up.setdefault(seconds, anyio.Event())

    def expire(self, seconds: float = TAP_ANSWER_WITHIN_S) -> None:
        """The time is up for the waits of ``seconds`` under way now, and any to come."""
        self._up[seconds].set()


@dataclass
class Lean:
    telegram: FakeTelegram
    llm: FakeOpenAI
    app: App
    timer: TapTimer

    def say(self, words: str) -> str:
        """The user writes ``words``; the id telegram-io gives the update."""
        return f"{TOKEN.partition(':')[0]}:{self.telegram.user_message(TOKEN, USER, words)}"

    async def reply(self, count: int = 1) -> Sent:
        """The bot's ``count``-th message to the user, once sent."""
        await self.telegram.wait_for(lambda: len(self.telegram.sent(TOKEN, USER)) >= count)
        return self.telegram.sent(TOKEN, USER)[count - 1]


def acks(update: str) -> bool:
    """Whether a call answered so far acked ``update``: its reply's send, a tap's answer
    or redraw, an ack, or (a firing) the scheduler's next poll."""
    return any(
        update in (c.arguments.get("ack") or []) or update in c.arguments.get("ids", [])
        for c in CALLS.made
        if c.answered
        and c.tool in ("send_message", "ack", "answer_callback", "edit_message", "next_due")
    )


async def handled(update: str) -> list[str]:
    """The calls of the turn that answers ``update``, once it is acked."""
    await CALLS.wait_for(lambda _: acks(update))
    return CALLS.names(without=POLLS)


@asynccontextmanager
async def lean_app(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    pace: StreamPace,
    streams: bool,
    llm_timeout_s: float = 5,
) -> AsyncIterator[Lean]:
    """Clawdia on Telegram in process, its role servers counted (``CALLS``); ``pace``: how
    its streamed replies change on screen; ``streams``: the agent's ``stream``."""
    telegram, llm, weather = FakeTelegram(), FakeOpenAI(), FakeOpenMeteo()
    telegram.add_bot(TOKEN, name="Clawdia")
    async with telegram.serve() as api, llm.serve() as llm_url, serving(weather.app) as meteo:
        registry, agents, env = write_telegram_fleet(
            tmp_path,
            {
                "WEATHER_FORECAST_URL": f"{meteo}/v1/forecast",
                "WEATHER_GEOCODING_URL": f"{meteo}/v1/search",
                "CLAWDIA_BOT_TOKEN": TOKEN,
                "TELEGRAM_API_BASE": api,
                "TELEGRAM_POLL_TIMEOUT_S": "1",
                "PTB_TIMEDELTA": "true",  # as the Makefile sets it
                "MEMORY_WINDOW_MAX_ITEMS": "4",  # two turns: summary rounds come soon
            },
            servers={
                "weather": "{module: 'mcp_weather.server:build_server'}",
                "calendar": "{module: 'mcp_calendar.server:build_server', proposes: true}",
                # a confirm a test can hold
                "shopping": "{module: 'fakes.counted:shopping', proposes: true}",
                "memory": "{module: 'fakes.counted:memory', role: memory, proposes: true}",
                "telegram-io": "{module: 'fakes.counted:telegram_io', role: telegram-io}",
                "pending-actions": (
                    "{module: 'fakes.counted:pending_actions', role: pending-actions}"
                ),
                "scheduler": "{module: 'fakes.counted:scheduler', role: scheduler, proposes: true}",
            },
            tools=["weather", "shopping", "memory", "calendar"],
            prompts={"week-ahead": "Plan my week."},
            user=USER,
            home="Paris",
        )
        if not streams:
            agents.write_text(agents.read_text() + "    stream: false\n")
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        for name in ("MESH_APPROVAL_SIGNING_KEY_FILE", "MESH_APPROVAL_PUBLIC_KEY_FILE"):
            monkeypatch.delenv(name, raising=False)  # the one key pair in DATA_DIR
        CLOCK.offset = 0.0
        settings = OrchestratorSettings(
            registry=registry,
            agents=agents,
            openai_api_key=SecretStr(API_KEY),
            openai_base_url=llm_url,
            llm_timeout_s=llm_timeout_s,
            tool_timeout_s=5,
        )
        async with open_app(settings) as app:
            shutdown = Shutdown()
            timer = TapTimer()
            channel = TelegramChannel(
                app.dispatcher,
                app.registry,
                wait_s=1,
                typing_after_s=60,
                tap_answer_within_s=TAP_ANSWER_WITHIN_S,
                pace=pace,
                transcriber=app.transcriber,
                sleep=timer.sleep,
                say=lambda _: None,
            )
            scheduled = ScheduledChannel(app.proactive, app.registry, wait_s=0.2)
            async with anyio.create_task_group() as running:
                running.start_soon(channel.run, shutdown)
                running.start_soon(scheduled.run, shutdown)
                await telegram.wait_for(lambda: bool(telegram.commands(TOKEN)))  # live
                CALLS.clear()
                yield Lean(telegram, llm, app, timer)
                CALLS.release()
                shutdown.request()
                shutdown.request()  # hurried: nothing of a test is left to finish
