"""The scheduled channel acks a firing with its next poll: what a stop and a crash do to the
acks still waiting for it.

In-process: the scheduler, memory and telegram-io are the real servers (``fakes.counted``,
the scheduler on the movable ``CLOCK``), Telegram and the model the fakes. Two prompts come
due at once and are handled one after the other (``max_firings=1``); the model answers the
first at once and holds the second until the test opens its gate, so the test knows the
first is done while the second runs, and while the long poll (20 s) still waits.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import anyio
import pytest
from pydantic import SecretStr

from fakes.clocked import CLOCK
from fakes.counted import CALLS
from fakes.responses_api import Body, FakeOpenAI, Gated, Step, text
from fakes.telegram_api import FakeTelegram
from fakes.world import API_KEY, write_telegram_fleet
from meshkit.wire.scheduler import Due
from orchestrator.app import App, open_app
from orchestrator.channels.scheduled import ScheduledChannel
from orchestrator.settings import OrchestratorSettings
from orchestrator.shutdown import Shutdown

pytestmark = pytest.mark.anyio

TOKEN = "7000000001:AAFakeTokenForClawdia0123456789abcde"
USER = 4242
PARIS = ZoneInfo("Europe/Paris")


@dataclass
class Scheduled:
    telegram: FakeTelegram
    llm: FakeOpenAI
    app: App
    keys: list[str]  # the two firings, in the order they are handled
    gate: anyio.Event  # the model answers the second firing once it is set
    at_model: anyio.Event  # the second firing's request has reached the model

    def channel(self) -> ScheduledChannel:
        """A run of the channel (a new run id each: a run after a crash)."""
        return ScheduledChannel(self.app.proactive, self.app.registry, wait_s=20, max_firings=1)

    def sent(self) -> list[str]:
        return [s.text for s in self.telegram.sent(TOKEN, USER)]

    async def second_under_way(self) -> None:
        """Until the second firing's turn is at the model (so the first one is sent)."""
        with anyio.fail_after(10):
            await self.at_model.wait()


def acked() -> list[str]:
    """The keys acked so far, by a poll or an ack, in the order of the calls."""
    return [
        key
        for c in CALLS.made
        if c.server == "scheduler"
        for key in c.arguments.get("ack", c.arguments.get("keys", []))
    ]


def next_sunday_6pm() -> datetime:
    now = datetime.now(PARIS)
    sunday = (now + timedelta(days=(6 - now.weekday()) % 7)).replace(
        hour=18, minute=0, second=0, microsecond=0
    )
    return sunday if sunday > now else sunday + timedelta(days=7)


@pytest.fixture
async def scheduled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Scheduled]:
    telegram, llm = FakeTelegram(), FakeOpenAI()
    telegram.add_bot(TOKEN, name="Clawdia")
    gate, at_model = anyio.Event(), anyio.Event()

    def second(_: Body) -> Step:
        at_model.set()
        return Gated(gate, text("Second prompt answered."))

    llm.script(text("First prompt answered."), second)
    async with telegram.serve() as api, llm.serve() as llm_url:
        registry, agents, env = write_telegram_fleet(
            tmp_path,
            {"CLAWDIA_BOT_TOKEN": TOKEN, "TELEGRAM_API_BASE": api},
            servers={
                "memory": "{module: 'fakes.counted:memory', role: memory, proposes: true}",
                "telegram-io": "{module: 'fakes.counted:telegram_io', role: telegram-io}",
                "scheduler": "{module: 'fakes.counted:scheduler', role: scheduler, proposes: true}",
            },
            tools=["memory"],
            prompts={"first": "Plan my week.", "second": "Any birthdays."},
            user=USER,
        )
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        for name in ("MESH_APPROVAL_SIGNING_KEY_FILE", "MESH_APPROVAL_PUBLIC_KEY_FILE"):
            monkeypatch.delenv(name, raising=False)
        CLOCK.offset = 0.0
        settings = OrchestratorSettings(
            registry=registry,
            agents=agents,
            openai_api_key=SecretStr(API_KEY),
            openai_base_url=llm_url,
            llm_timeout_s=30,
        )
        async with open_app(settings) as app:
            telegram.user_message(TOKEN, USER, "/start")  # the bot may write to the user
            sunday = next_sunday_6pm()
            CLOCK.advance(sunday.timestamp() - time.time() + 1)  # both prompts are due
            at = sunday.isoformat(timespec="minutes")
            keys = [f"clawdia/prompt/{name}@{at}" for name in ("first", "second")]
            CALLS.clear()
            try:
                yield Scheduled(telegram, llm, app, keys, gate, at_model)
            finally:
                gate.set()  # a turn still at the model ends


async def due_now(app: App) -> list[str]:
    """The keys a new run of the orchestrator would be handed now."""
    arguments = {"consumer": "orchestrator", "run": "later", "wait_s": 0}
    due = await app.registry.call_as("scheduler", "next_due", arguments, Due)
    return [f.key for f in due.firings]


async def test_acks_waiting_for_the_next_poll_are_made_by_one_last_call_when_it_stops(
    scheduled: Scheduled,
) -> None:
    first, second = scheduled.keys
    shutdown = Shutdown()
    async with anyio.create_task_group() as running:
        running.start_soon(scheduled.channel().run, shutdown)
        await scheduled.second_under_way()
        waiting = acked()  # the first is sent, the second runs, the long poll waits

        shutdown.request()  # the second gets the grace
        scheduled.gate.set()

    assert waiting == []  # neither acked yet: the first waits for the poll, the second runs
    assert acked() == [first, second]
    assert CALLS.names(without=("next_due",))[-1] == "scheduler.ack"  # one last call
    assert scheduled.sent() == ["First prompt answered.", "Second prompt answered."]
    assert await due_now(scheduled.app) == []  # the next run redoes neither


async def test_after_a_crash_the_next_run_redoes_an_unacked_firing_and_telegram_gets_it_once(
    scheduled: Scheduled,
) -> None:
    first, second = scheduled.keys
    with anyio.CancelScope() as crashed:
        async with anyio.create_task_group() as running:
            running.start_soon(scheduled.channel().run, Shutdown())
            await scheduled.second_under_way()
            crashed.cancel()  # no stop, no flush: the first's ack was waiting for the poll
    assert acked() == []
    scheduled.gate.set()
    scheduled.llm.script(text("First prompt again."), text("Second prompt answered."))
    CALLS.clear()

    shutdown = Shutdown()
    async with anyio.create_task_group() as running:
        running.start_soon(scheduled.channel().run, shutdown)
        await scheduled.telegram.wait_for(lambda: len(scheduled.sent()) == 2, 10)
        shutdown.request()

    sends = [c.arguments["idempotency_key"] for c in CALLS.made if c.tool == "send_message"]
    assert sends == [f"fire:{first}", f"fire:{second}"]  # the first sent again, same key...
    assert scheduled.sent() == ["First prompt answered.", "Second prompt answered."]  # ...once
    assert acked() == [first, second]
    assert await due_now(scheduled.app) == []
