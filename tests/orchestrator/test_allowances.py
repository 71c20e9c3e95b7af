"""Usage and allowances end to end, in-process, for both APIs: every model call metered and
recorded in memory, the allowance checked before each one, the cap reply with its "allow
more" button, the 80 % warning, the agent's own day.

The servers are real (memory and pending-actions in embedded mode on the clock the tests
move, ``fakes.clocked``; shopping), the model is the fake OpenAI API answering with the
usage each test scripts; the app counts in the same clock.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import Any, TypeVar
from zoneinfo import ZoneInfo

import pytest
from pydantic import BaseModel

from fakes.clocked import CLOCK
from fakes.responses_api import UNREPORTED, Tokens, call, calls, text
from fakes.world import API_KEY, ROOT, World
from meshkit.wire.memory import AppendResult, Window
from meshkit.wire.pending_actions import ActionList
from meshkit.wire.scheduler import Firing
from meshkit.wire.usage import UsageReport
from meshkit.yaml_config import ConfigError
from orchestrator.app import App, llm_for, open_app
from orchestrator.config.fleet import Agent
from orchestrator.core.replies import Reply
from orchestrator.core.routes import Deliver, TapContext, TextContext
from orchestrator.core.summaries import Summarizer
from orchestrator.llm.base import LLM
from orchestrator.llm.openai_api import build_llm
from orchestrator.settings import OrchestratorSettings

pytestmark = pytest.mark.anyio

M = TypeVar("M", bound=BaseModel)
OWNER = "4242"
PRICES = """\
prices:
  currency: USD
  models:
    gpt-5-mini: {input: 1.00, cached_input: 0.10, output: 10.00}
"""
TOKENS_1K = """\
    allowance:
      daily: "1000 tokens"
      more: "500 tokens"
"""


@pytest.fixture(params=["responses", "chat"])
def api(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def configure(
    world: World, api: str, allowance: str = TOKENS_1K, *, timezone: str = "Europe/Paris"
) -> None:
    """Clawdia with ``allowance``, the owner allowed, every change allowed by policy (an
    "allow more" must still be asked), on ``api``."""
    world.settings.agents.write_text(
        PRICES + "agents:\n  clawdia:\n    name: Clawdia\n"
        f"    persona: {ROOT / 'agents' / 'clawdia'}\n"
        "    servers: [memory, shopping]\n"
        f"    allowed_user_ids: ['{OWNER}']\n"
        f"    timezone: {timezone}\n"
        f"    api: {api}\n"
        "    max_rounds: 3\n"
        '    consent: {"*": auto}\n' + allowance
    )


@asynccontextmanager
async def running(world: World, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[App]:
    """The app on ``CLOCK``; pending-actions reads the fleet's policies."""
    monkeypatch.setenv("CLAWMESH_AGENTS", str(world.settings.agents))

    def factory(agent: Agent, settings: OrchestratorSettings) -> LLM:
        return build_llm(
            agent.entry.api or "responses",
            api_key=API_KEY,
            base_url=settings.openai_base_url,
            model=llm_for(agent, settings).model,
            reasoning_effort=None,
            timeout_s=settings.llm_timeout_s,
        )

    async with open_app(world.settings, llm_factory=factory, clock=CLOCK) as app:
        yield app


async def ask(app: App, words: str, update: str) -> Reply:
    """The owner writes ``words`` (Telegram update ``update``); the reply, sent under
    ``reply:<update>``."""

    async def send(_: Reply) -> str:
        return update

    deliver = Deliver(f"reply:{update}", send)
    return await app.dispatcher.on_text(
        TextContext("clawdia", OWNER, words, message_id=update, user=OWNER, deliver=deliver)
    )


async def tap(app: App, key: str, reply: Reply, label: str) -> tuple[Reply, list[str]]:
    """The owner taps ``reply``'s button labelled with ``label``, in the message sent under
    ``key``: the message as the tap redraws it, and the texts sent after it."""
    [data] = [b.data for row in reply.buttons for b in row if label in b.label]
    edits: list[Reply] = []
    sent: list[str] = []

    async def answer(_: str) -> None:
        return None

    async def edit(new: Reply) -> None:
        edits.append(new)

    async def send(new: Reply) -> str:
        sent.append(new.text)
        return "after-tap"

    deliver = Deliver(f"tap:{key}", send)
    await app.dispatcher.on_callback(
        TapContext("clawdia", OWNER, OWNER, key, data, answer, edit, deliver, key=key)
    )
    [edited] = edits
    return edited, sent


async def memory(app: App, tool: str, arguments: dict[str, Any], model: type[M]) -> M:
    server = app.registry.server_for("memory")
    assert server is not None
    return await app.registry.call_as(server, tool, arguments, model)


async def report(app: App) -> UsageReport:
    return await memory(app, "usage_report", {"since": 0, "until": CLOCK() + 60}, UsageReport)


async def pending(app: App) -> ActionList:
    server = app.registry.server_for("pending-actions")
    assert server is not None
    arguments = {"agent": "clawdia", "chat_id": OWNER}
    return await app.registry.call_as(server, "list_pending", arguments, ActionList)


def at_local(zone: str, hour: int, minute: int) -> float:
    """The next time it is ``hour:minute`` in ``zone`` (Unix seconds)."""
    now = datetime.now(ZoneInfo(zone))
    then = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
    return (then if then > now else then + timedelta(days=1)).timestamp()


async def test_a_cap_reached_mid_turn_ends_it_cleanly_with_an_offer_and_keeps_nothing(
    world: World, api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(world, api)
    world.llm.script(
        calls(call("shopping__propose_add_to_list", name="apples"), usage=(700, 400)),
        text("Added apples?"),  # never asked for: the allowance is reached before
    )
    async with running(world, monkeypatch) as app:
        reply = await ask(app, "add apples", "u1")
        window = await memory(app, "load_window", {"agent": "clawdia", "chat_id": OWNER}, Window)
        waiting = await pending(app)
        used = await report(app)

    assert len(world.llm.requests) == 1
    assert reply.text.startswith(
        "⏸ I stopped before finishing that: nothing of it was kept or changed. The daily "
        "allowance is used up (1,100 tokens of 1,000 tokens). It renews at midnight "
        "(Europe/Paris), or you can allow 500 tokens more for today."
    )
    assert [[b.label for b in row] for row in reply.buttons] == [
        ["➕ Allow 500 tokens today", "Not today"]
    ]  # asked, though the policy allows every change: no "allow for" button either
    assert window.items == []  # nothing of the turn stored
    assert [(a.kind, a.state) for a in waiting.actions] == [("allow_more", "pending")]
    assert (used.total.calls, used.total.tokens) == (1, 1100)  # its round, recorded
    assert used.by_purpose["turn"].calls == 1


async def test_the_allow_more_tap_grants_it_and_answers_the_message_held_back(
    world: World, api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(world, api)
    world.llm.script(
        text("Sure.", usage=(900, 200)),
        text("Back at it.", usage=(10, 5)),
        text("And on.", usage=(10, 5)),
    )
    async with running(world, monkeypatch) as app:
        assert (await ask(app, "hello", "u1")).text.startswith("Sure.")
        capped = await ask(app, "what next?", "u2")
        assert len(world.llm.requests) == 1
        edited, sent = await tap(app, "reply:u2", capped, "Allow")
        answered = await ask(app, "and then?", "u3")
        used = await report(app)

    assert "✅" in edited.text
    assert edited.buttons == []
    assert sent == ["Back at it."]  # the held message, answered after the tap
    assert (
        world.llm.requests[1]["input" if api == "responses" else "messages"][-1]["content"]
        == "what next?"
    )
    assert answered.text == "And on."
    [grant] = used.grants
    assert (grant.user, grant.amount, grant.unit) == (OWNER, 500, "tokens")
    assert used.total.calls == 3


async def test_after_a_restart_the_tap_answers_the_message_held_back(
    world: World, api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(world, api)
    world.llm.script(text("Sure.", usage=(1000, 0)), text("Here you go.", usage=(10, 5)))
    async with running(world, monkeypatch) as app:
        await ask(app, "hello", "u1")
        capped = await ask(app, "what next?", "u2")

    async with running(world, monkeypatch) as app:  # memory kept the message held
        _, sent = await tap(app, "reply:u2", capped, "Allow")

    assert sent == ["Here you go."]
    assert len(world.llm.requests) == 2


async def test_two_messages_held_are_answered_in_order_and_the_second_offer_grants_nothing(
    world: World, api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(world, api)
    world.llm.script(
        text("Sure.", usage=(900, 200)),
        text("First answer.", usage=(10, 5)),
        text("Second answer.", usage=(10, 5)),
    )
    async with running(world, monkeypatch) as app:
        await ask(app, "hello", "u1")
        first = await ask(app, "first?", "u2")
        second = await ask(app, "second?", "u3")
        edited_first, sent_first = await tap(app, "reply:u2", first, "Allow")
        edited_second, sent_second = await tap(app, "reply:u3", second, "Allow")
        used = await report(app)

    key = "input" if api == "responses" else "messages"
    assert [r[key][-1]["content"] for r in world.llm.requests[1:]] == ["first?", "second?"]
    assert sent_first == ["First answer.", "Second answer."]  # each once, in order
    assert sent_second == []
    assert "no longer needed" in edited_second.text
    assert (edited_first.buttons, edited_second.buttons) == ([], [])
    assert len(used.grants) == 1


async def test_a_restart_keeps_the_counts(
    world: World, api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(world, api)
    world.llm.script(text("That is all for today.", usage=(1000, 0)))
    async with running(world, monkeypatch) as app:
        first = await ask(app, "hello", "u1")

    async with running(world, monkeypatch) as app:  # a new process, the same DATA_DIR
        again = await ask(app, "hello again", "u2")

    assert first.text.startswith("That is all for today.")
    assert again.text.startswith("⏸ The daily allowance is used up (1,000 tokens of 1,000")
    assert len(world.llm.requests) == 1


async def test_the_day_rolls_over_at_the_agents_local_midnight(
    world: World, api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(world, api, timezone="Asia/Tokyo")
    CLOCK.offset = at_local("Asia/Tokyo", 23, 50) - CLOCK()
    world.llm.script(text("Late night.", usage=(1200, 0)), text("Good morning.", usage=(5, 5)))
    async with running(world, monkeypatch) as app:
        await ask(app, "hi", "u1")
        capped = await ask(app, "still there?", "u2")
        CLOCK.advance(20 * 60)  # 00:10 in Tokyo: a new day there (15:10 in UTC)
        renewed = await ask(app, "still there?", "u3")

    assert "It renews at midnight (Asia/Tokyo)" in capped.text
    assert renewed.text == "Good morning."
    assert len(world.llm.requests) == 2


async def test_the_warning_at_80_percent_comes_once_per_period(
    world: World, api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(world, api)
    CLOCK.offset = at_local("Europe/Paris", 9, 0) - CLOCK()
    world.llm.script(
        text("One.", usage=(500, 0)),
        text("Two.", usage=(300, 0)),
        text("Three.", usage=(50, 0)),
        text("Four.", usage=(50, 0)),
        text("Next day.", usage=(850, 0)),
    )
    async with running(world, monkeypatch) as app:
        said = [(await ask(app, "go", f"u{n}")).text for n in range(1, 4)]
    async with running(world, monkeypatch) as app:  # the warning given is remembered
        said.append((await ask(app, "go", "u4")).text)
        CLOCK.advance(24 * 3600)
        said.append((await ask(app, "go", "u5")).text)

    warning = (
        "⚠️ {} % of the daily allowance is used ({} tokens of 1,000 tokens); it renews at "
        "midnight (Europe/Paris)."
    )
    assert said == [
        "One.",
        "Two.\n\n" + warning.format(80, 800),
        "Three.",
        "Four.",
        "Next day.\n\n" + warning.format(85, 850),
    ]


async def test_a_briefing_over_the_cap_is_sent_as_its_template(
    world: World, api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(world, api)
    world.llm.script(text("Good morning, a quiet day ahead!", usage=(1000, 50)))
    sent: list[str] = []

    async def send(reply: Reply) -> str:
        sent.append(reply.text)
        return str(len(sent))

    async with running(world, monkeypatch) as app:
        for n in (1, 2):
            day = datetime.fromtimestamp(CLOCK(), ZoneInfo("Europe/Paris"))
            firing = Firing(
                id=f"fir_00000000000{n}", key=f"clawdia/briefing@{n}", agent="clawdia",
                kind="briefing", source="clawdia/briefing", scheduled_at=day.isoformat(),
                late=False, timezone="Europe/Paris", payload={"parts": []},
            )  # fmt: skip
            await app.proactive.handle(firing, Deliver(f"fire:{firing.key}", send))
        used = await report(app)

    written, template = sent
    assert written.startswith("Good morning, a quiet day ahead!\n\n⚠️ All of the daily allowance")
    assert template.startswith("☀️ Good morning! Your briefing for")
    assert template.endswith("Nothing on today.")
    assert len(world.llm.requests) == 1
    assert used.by_purpose["briefing"].calls == 1
    assert [t.turn_id for t in used.top] == ["clawdia/briefing@1"]


async def test_a_summary_at_the_cap_is_skipped_and_written_once_the_day_renews(
    world: World, api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(world, api)
    monkeypatch.setenv("MEMORY_WINDOW_MAX_ITEMS", "4")
    CLOCK.offset = at_local("Europe/Paris", 9, 0) - CLOCK()
    world.llm.script(text("Morning!", usage=(1000, 0)), text("They talked.", usage=(50, 5)))
    said = [
        {"type": "message", "role": role, "content": f"line {n}"}
        for n in range(7)
        for role in ("user", "assistant")
    ]  # ten of them out of a window of four: a summary is due

    async def send(_: Reply) -> str:
        return "1"

    async with running(world, monkeypatch) as app:
        chat = {"agent": "clawdia", "chat_id": OWNER}
        await memory(app, "append_items", {**chat, "items": said}, AppendResult)
        day = datetime.fromtimestamp(CLOCK(), ZoneInfo("Europe/Paris"))
        briefing = Firing(
            id="fir_000000000001", key="clawdia/briefing@1", agent="clawdia", kind="briefing",
            source="clawdia/briefing", scheduled_at=day.isoformat(), late=False,
            timezone="Europe/Paris", payload={"parts": []},
        )  # fmt: skip
        await app.proactive.handle(briefing, Deliver("fire:1", send))  # the day's allowance
        summarizer = Summarizer(app.registry, None, app.dispatcher.meter)
        runtime = app.dispatcher.agents["clawdia"]
        at_cap = await summarizer.summarize(runtime, OWNER)
        CLOCK.advance(24 * 3600)
        renewed = await summarizer.summarize(runtime, OWNER)
        used = await report(app)

    assert at_cap is False
    assert renewed is True  # saved
    briefed, summarized = world.llm.requests  # none at the cap
    assert (
        summarized["instructions" if api == "responses" else "messages"]
        != briefed["instructions" if api == "responses" else "messages"]
    )
    assert used.by_purpose["summary"].calls == 1


async def test_usage_not_reported_is_recorded_as_unknown_never_guessed(
    world: World, api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(world, api)
    world.llm.script(text("Hi!", usage=UNREPORTED))
    async with running(world, monkeypatch) as app:
        assert (await ask(app, "hi", "u1")).text == "Hi!"
        used = await report(app)

    assert (used.total.calls, used.total.unknown_usage, used.total.tokens) == (1, 1, 0)
    assert used.total.cost == 0


async def test_a_money_allowance_is_priced_with_cached_input_and_reached(
    world: World, api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(world, api, "    allowance: {daily: 0.30, more: 0.50}\n")
    usage = Tokens(200_000, 20_000, cached=100_000, reasoning=5_000)
    world.llm.script(text("A long answer.", usage=usage))
    async with running(world, monkeypatch) as app:
        await ask(app, "tell me everything", "u1")
        capped = await ask(app, "more", "u2")
        used = await report(app)

    # 100k input at $1, 100k cached at $0.10, 20k output at $10 a million: $0.31
    assert used.total.cost == pytest.approx(0.31)
    assert capped.text.startswith("⏸ The daily allowance is used up ($0.31 of $0.30).")
    assert capped.buttons[0][0].label == "➕ Allow $0.50 today"


async def test_a_money_allowance_on_a_hosted_model_without_a_price_is_refused_at_start(
    world: World,
) -> None:
    configure(world, "responses", "    allowance: {daily: 1.00}\n")
    hosted = world.settings.model_copy(
        update={"openai_base_url": None, "openai_model": "gpt-unlisted"}
    )

    with pytest.raises(ConfigError, match=r"agents\.clawdia\.allowance is in money"):
        async with open_app(hosted, clock=CLOCK):
            pass
