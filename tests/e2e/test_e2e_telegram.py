"""Telegram end to end: real processes (telegram-io, memory, weather over HTTP with a token,
the orchestrator), fake Telegram, fake OpenAI and fake Open-Meteo in the test process.

The tests share one mesh; each writes as a user of its own (``user``). A test that
changes the mesh itself (a 409 from Telegram) starts its own."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from fakes.audio import ogg_opus
from fakes.mesh import API_KEY, STRANGER, TOKENS, USER, Mesh, eventually, running_mesh
from fakes.responses_api import HANG, Slow, call, calls, text
from fakes.world import answer_from_output

pytestmark = pytest.mark.anyio

CLAWDIA = TOKENS["clawdia"]


@pytest.fixture(scope="module")
async def mesh(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Mesh]:
    async with running_mesh(tmp_path_factory.mktemp("mesh")) as mesh:
        yield mesh


@pytest.fixture
def user(mesh: Mesh) -> int:
    return mesh.new_user()


async def test_a_message_gets_typing_a_tool_call_and_a_reply(mesh: Mesh, user: int) -> None:
    mesh.llm.script(
        Slow(1.0, calls(call("weather__get_current_weather", location="Paris"))),
        answer_from_output(lambda out: f"It is **{out['temperature']}** in Paris."),
    )
    mesh.telegram.user_message(CLAWDIA, user, "weather in Paris?")
    await mesh.telegram.wait_for(lambda: len(mesh.telegram.sent(CLAWDIA, user)) == 1, 60)
    reply = mesh.telegram.sent(CLAWDIA, user)[0]
    assert reply.text.startswith("It is ")
    assert reply.text.endswith(" in Paris.")
    assert "**" not in reply.text
    assert [e["type"] for e in reply.entities] == ["bold"]
    typing = mesh.telegram.actions(CLAWDIA, user)
    # From 0.3 s into the turn (then every 4 s, which a slow machine may reach), before the reply.
    assert typing
    assert {a.action for a in typing} == {"typing"}
    assert typing[0].time <= reply.time
    assert len(mesh.llm.requests) == 2


async def test_a_command_naming_the_bot_is_that_command(mesh: Mesh, user: int) -> None:
    mesh.telegram.user_message(CLAWDIA, user, "/help@fake7000000001_bot")
    await mesh.telegram.wait_for(lambda: len(mesh.telegram.sent(CLAWDIA, user)) == 1, 60)
    assert mesh.telegram.sent(CLAWDIA, user)[0].text.startswith("I'm Clawdia.")
    assert mesh.llm.requests == []


async def test_the_orchestrator_says_where_to_find_each_bot_and_publishes_its_commands(
    mesh: Mesh, user: int
) -> None:
    username = "fake7000000001_bot"  # the fake's getMe
    ready = f"Clawdia is listening as @{username} — open https://t.me/{username} and say hello"

    async def announced() -> bool:
        return ready in mesh.orchestrator.log.read_text()

    await eventually(announced)
    await mesh.telegram.wait_for(lambda: bool(mesh.telegram.commands(CLAWDIA)), 30)
    assert [c["command"] for c in mesh.telegram.commands(CLAWDIA)] == [
        "new",
        "memory",
        "stop",
        "status",
        "grants",
        "audit",
        "reload",
        "help",
        "jobs",  # the scheduler's, with it in the mesh
        "usage",  # memory's usage records
    ]


async def test_a_token_telegram_refuses_stops_the_start_naming_the_bot(tmp_path: Path) -> None:
    async with running_mesh(tmp_path, revoked=("clawdia",)) as mesh:
        process = mesh.orchestrator.process
        assert process is not None
        with anyio.fail_after(60):
            await process.wait()
        assert process.returncode == 2
        assert mesh.orchestrator.log.read_text().strip().splitlines()[-1] == (
            "configuration error: Clawdia (clawdia): Telegram refused the token: "
            "check it with @BotFather"
        )


async def test_with_one_bot_refused_the_others_go_on_and_status_names_it(
    tmp_path: Path,
) -> None:
    async with running_mesh(tmp_path, agents=("clawdia", "bob"), revoked=("bob",)) as mesh:
        mesh.telegram.user_message(CLAWDIA, USER, "/status")
        await mesh.telegram.wait_for(lambda: len(mesh.telegram.sent(CLAWDIA, USER)) == 1, 60)
        assert "bob unauthorized" in mesh.telegram.sent(CLAWDIA, USER)[0].text
        log = mesh.orchestrator.log.read_text()
        assert "Bob (bob): Telegram refused the token: check it with @BotFather" in log
        assert "Clawdia is listening as @fake7000000001_bot" in log


async def test_strangers_and_group_chats_get_nothing(mesh: Mesh, user: int) -> None:
    mesh.telegram.user_message(CLAWDIA, STRANGER, "hello?")
    mesh.telegram.user_message(CLAWDIA, user, "hello group", chat_id=-100123, chat_type="group")
    mesh.llm.script(text("Hi!"))
    mesh.telegram.user_message(CLAWDIA, user, "hello")  # after both: answered last
    await mesh.telegram.wait_for(lambda: len(mesh.telegram.sent(CLAWDIA)) >= 1, 60)
    assert [(s.chat_id, s.text) for s in mesh.telegram.sent(CLAWDIA)] == [(user, "Hi!")]
    assert len(mesh.llm.requests) == 1
    assert mesh.telegram.actions(CLAWDIA, STRANGER) == []


async def test_a_private_chat_that_is_not_the_users_own_gets_nothing(mesh: Mesh, user: int) -> None:
    # Telegram gives a private chat the user's id; any other id is not the user's own chat.
    mesh.telegram.user_message(CLAWDIA, user, "hello from elsewhere", chat_id=user + 100_000)
    mesh.llm.script(text("Hi!"))
    mesh.telegram.user_message(CLAWDIA, user, "hello")  # after it: answered last
    await mesh.telegram.wait_for(lambda: len(mesh.telegram.sent(CLAWDIA)) >= 1, 60)
    assert [(s.chat_id, s.text) for s in mesh.telegram.sent(CLAWDIA)] == [(user, "Hi!")]
    assert len(mesh.llm.requests) == 1


async def test_a_6000_character_reply_arrives_as_ordered_parts(mesh: Mesh, user: int) -> None:
    paragraphs = [f"Paragraph {n}: " + "word " * 58 for n in range(20)]  # ~300 chars each
    mesh.llm.script(text("\n\n".join(paragraphs)))
    mesh.telegram.user_message(CLAWDIA, user, "tell me a lot")
    await mesh.telegram.wait_for(lambda: len(mesh.telegram.sent(CLAWDIA, user)) == 2, 60)
    parts = mesh.telegram.sent(CLAWDIA, user)
    assert all(len(p.text) <= 4096 for p in parts)
    assert parts[0].text.startswith("Paragraph 0:")
    assert parts[1].text.startswith("Paragraph ")  # cut between paragraphs
    joined = "\n\n".join(p.text for p in parts)
    assert [line.split(":")[0] for line in joined.split("\n\n")] == [
        f"Paragraph {n}" for n in range(20)
    ]


async def test_refused_formatting_falls_back_to_plain_text(mesh: Mesh, user: int) -> None:
    mesh.telegram.fail_next(
        "sendMessage", 400, description="Bad Request: can't parse entities: unexpected end tag"
    )
    mesh.llm.script(text("A **bold** claim."))
    mesh.telegram.user_message(CLAWDIA, user, "say something bold")
    await mesh.telegram.wait_for(lambda: len(mesh.telegram.sent(CLAWDIA, user)) == 1, 60)
    reply = mesh.telegram.sent(CLAWDIA, user)[0]
    assert reply.text == "A bold claim."
    assert reply.entities == []
    assert len(mesh.telegram.calls("sendMessage")) == 2


async def test_a_429_is_waited_out_and_the_reply_delivered_once(mesh: Mesh, user: int) -> None:
    mesh.telegram.fail_next("sendMessage", 429, retry_after=1)
    mesh.llm.script(text("Patience pays."))
    mesh.telegram.user_message(CLAWDIA, user, "hello")
    await mesh.telegram.wait_for(lambda: len(mesh.telegram.sent(CLAWDIA, user)) == 1, 60)
    tries = mesh.telegram.calls("sendMessage")
    assert len(tries) == 2
    assert tries[1].time - tries[0].time >= 1.0
    assert [s.text for s in mesh.telegram.sent(CLAWDIA, user)] == ["Patience pays."]


async def test_a_voice_note_is_fetched_heard_and_answered_across_the_processes(
    mesh: Mesh, user: int
) -> None:
    mesh.llm.hear("Hello there!")
    mesh.llm.script(text("Hi! How can I help?"))
    mesh.telegram.user_media(CLAWDIA, user, "voice", content=ogg_opus(2.0), duration=2)
    await mesh.telegram.wait_for(lambda: len(mesh.telegram.sent(CLAWDIA, user)) == 2, 60)
    assert [s.text for s in mesh.telegram.sent(CLAWDIA, user)] == [
        "🎤 “Hello there!”",
        "Hi! How can I help?",
    ]
    [heard] = mesh.llm.transcriptions
    assert heard.seconds == pytest.approx(2.0)
    assert mesh.llm.requests[0]["input"][-1]["content"] == "Hello there!"


async def test_a_sticker_gets_one_line_without_the_model(mesh: Mesh, user: int) -> None:
    mesh.telegram.user_media(CLAWDIA, user, "sticker")
    await mesh.telegram.wait_for(lambda: len(mesh.telegram.sent(CLAWDIA, user)) == 1, 60)
    assert "a sticker is none of these" in mesh.telegram.sent(CLAWDIA, user)[0].text
    assert mesh.llm.requests == []


async def test_stop_cancels_a_long_turn(mesh: Mesh, user: int) -> None:
    mesh.llm.script(HANG)
    mesh.telegram.user_message(CLAWDIA, user, "think hard about this")
    await mesh.telegram.wait_for(lambda: len(mesh.llm.requests) == 1, 60)
    mesh.telegram.user_message(CLAWDIA, user, "/stop")
    await mesh.telegram.wait_for(lambda: len(mesh.telegram.sent(CLAWDIA, user)) == 1, 30)
    assert mesh.telegram.sent(CLAWDIA, user)[0].text.startswith("Stopped")
    mesh.llm.script(text("Fresh answer."))
    mesh.telegram.user_message(CLAWDIA, user, "hello again")
    await mesh.telegram.wait_for(lambda: len(mesh.telegram.sent(CLAWDIA, user)) == 2, 30)
    assert [s.text for s in mesh.telegram.sent(CLAWDIA, user)][1] == "Fresh answer."
    # The stopped turn left nothing in the conversation.
    sent_items = mesh.llm.requests[-1]["input"]
    assert [i.get("content") for i in sent_items] == ["hello again"]


async def test_409_makes_health_degraded_until_the_other_poller_leaves(tmp_path: Path) -> None:
    async with running_mesh(tmp_path) as mesh:  # its own: it changes telegram-io's state
        telegram_io = mesh.services["telegram-io"]

        async def health_is(code: int) -> bool:
            return (await telegram_io.health()).status_code == code

        mesh.telegram.conflict(CLAWDIA)
        await eventually(lambda: health_is(503))
        body = (await telegram_io.health()).json()
        assert "clawdia: conflict" in json.dumps(body)
        assert "409 CONFLICT" in telegram_io.log.read_text()
        mesh.telegram.conflict(CLAWDIA, on=False)
        await eventually(lambda: health_is(200))
        mesh.llm.script(text("Back."))
        mesh.telegram.user_message(CLAWDIA, USER, "still there?")
        await mesh.telegram.wait_for(lambda: len(mesh.telegram.sent(CLAWDIA, USER)) == 1, 30)


async def test_no_token_or_key_reaches_any_log(mesh: Mesh, user: int) -> None:
    mesh.llm.script(text("Hi."))
    mesh.telegram.user_message(CLAWDIA, user, "hi")
    await mesh.telegram.wait_for(lambda: len(mesh.telegram.sent(CLAWDIA, user)) == 1, 60)
    logs = mesh.logs()
    assert "dispatch" in logs or "turn agent=clawdia" in logs
    for secret in (CLAWDIA, API_KEY, *mesh.credentials.values()):
        assert secret not in logs
