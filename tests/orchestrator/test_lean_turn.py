"""A lean turn: after the poll that brings a message, a turn costs three calls to the mesh's
own servers (one read of its context from memory, one record of it, one send that acks
the update), whatever tools the model calls; a question it answers, a proposal, a tap or a
summary round add only what they need.

A streamed reply adds what it shows (``send_draft``, or a placeholder's send and edits),
never within its first second; an agent that does not stream makes the same calls.

In-process, with the Telegram and scheduled channels running as ``make run`` runs them:
memory, telegram-io, pending-actions and the scheduler are the real servers, each wrapped
in a middleware that records the tool calls it receives (``fakes.counted``); Telegram, the
model and Open-Meteo are the fakes. The long polls (``next_updates``, ``next_due``) and the
lease keeping (``extend_leases``, every few seconds whatever the turns) are not a turn's
calls and are left out; "typing…" starts only after a minute here, so it is not in them.
The time a tap's notice may be held (``tap_answer_within_s``) is up when a test says so
(``TapTimer``), never by itself.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from pathlib import Path

import anyio
import pytest
from pydantic import SecretStr

from fakes.clocked import CLOCK
from fakes.counted import CALLS
from fakes.lean import AT_ONCE, PARIS, POLLS, TEXT_TURN, TOKEN, USER, Lean, acks, handled
from fakes.responses_api import FakeOpenAI, Gated, Slow, Streamed, call, calls, text
from fakes.serving import free_port
from fakes.world import API_KEY, ROOT
from orchestrator.app import open_app
from orchestrator.channels.telegram_stream import BUSY_S
from orchestrator.core.replies import Reply as ChatReply
from orchestrator.core.routes import Deliver, TextContext
from orchestrator.core.summaries import PROMPT
from orchestrator.settings import OrchestratorSettings

pytestmark = pytest.mark.anyio


async def test_a_text_turn_is_one_read_one_record_and_one_send_that_acks(lean: Lean) -> None:
    lean.llm.script(text("Hello! How can I help?"))
    update = lean.say("hi")

    made = await handled(update)
    reply = await lean.reply()

    assert made == TEXT_TURN
    assert reply.text == "Hello! How can I help?"
    [read, record, send] = [c for c in CALLS.made if c.tool not in POLLS]
    assert read.arguments["text"] == "hi"  # the user's own text: it may answer a question
    assert record.arguments["turn_id"] == update  # stored once, however often redone
    assert send.arguments["ack"] == [update]
    assert send.arguments["idempotency_key"] == f"reply:{update}"


async def test_a_tool_turn_makes_the_same_three_calls_beside_the_models_own(
    lean: Lean,
) -> None:
    lean.llm.script(
        calls(call("weather__get_forecast", location="Paris", days=1)), text("Sunny in Paris.")
    )
    update = lean.say("weather in Paris?")

    made = await handled(update)

    assert made == TEXT_TURN
    assert (await lean.reply()).text == "Sunny in Paris."
    [_, record, _] = [c for c in CALLS.made if c.tool not in POLLS]
    assert [i["type"] for i in record.arguments["items"]] == [
        "message", "function_call", "function_call_output", "message",
    ]  # fmt: skip


async def test_the_next_turn_is_given_what_the_last_one_stored(lean: Lean) -> None:
    lean.llm.script(text("Noted: Annecy."), text("Annecy, as you said."))
    first = lean.say("I am going to Annecy")
    await handled(first)
    second = lean.say("where was I going?")

    await handled(second)

    [_, request] = lean.llm.requests
    said = [i.get("content") for i in request["input"] if i.get("type") == "message"]
    assert said == ["I am going to Annecy", "Noted: Annecy.", "where was I going?"]
    assert (await lean.reply(2)).text == "Annecy, as you said."


async def test_a_typed_answer_is_taken_in_the_read_and_its_question_redrawn_before_the_reply(
    lean: Lean,
) -> None:
    lean.llm.script(
        calls(call("clarify", question="Which city?", choices=None)), text("Lyon it is.")
    )
    asked = lean.say("weather please")
    await handled(asked)
    question = await lean.reply()
    CALLS.clear()

    answer = lean.say("Lyon")
    made = await handled(answer)

    assert made == [
        "memory.turn_context",
        "telegram-io.edit_message",  # the question shows its answer, before the reply
        "memory.append_items",
        "telegram-io.send_message",
    ]
    assert question.source.startswith("❓ Which city?")
    assert [e.text for e in question.edits] == ["❓ Which city?\n→ Lyon"]
    assert (await lean.reply(2)).text == "Lyon it is."
    [request] = [r for r in lean.llm.requests if r["input"][-1].get("content") == "Lyon"]
    assert request["input"][-2]["content"] == "Which city?"  # the question, in the window


async def test_a_summary_round_runs_only_when_the_record_says_one_is_due(lean: Lean) -> None:
    summary = "The user counted to seven."
    lean.llm.default = lambda body: (
        text(summary) if body.get("instructions") == PROMPT else text("ok")
    )
    for n in range(6):  # two items a turn, a window of four: ten are out after the seventh
        assert await handled(lean.say(f"message {n}")) == TEXT_TURN  # no evicted_items call
        CALLS.clear()

    await handled(lean.say("message 6"))
    await CALLS.wait_for(lambda made: any(c.tool == "save_summary" and c.answered for c in made))
    made = CALLS.names(without=POLLS)
    await handled(lean.say("and now?"))

    # The summary's own model call is recorded with it (save_summary), no call of its own.
    summarizing = ["memory.evicted_items", "memory.save_summary"]
    assert [name for name in made if name not in summarizing] == TEXT_TURN
    assert [name for name in made if name in summarizing] == summarizing
    assert summary in lean.llm.requests[-1]["instructions"]


async def test_a_proposal_and_its_tap_make_the_calls_their_buttons_need(lean: Lean) -> None:
    lean.llm.script(
        calls(call("shopping__propose_add_to_list", name="apples")), text("Shall I add apples?")
    )
    update = lean.say("add apples")

    proposed = await handled(update)
    [stage] = [c for c in CALLS.made if c.tool == "stage"]
    [send] = [c for c in CALLS.made if c.tool == "send_message"]
    message = await lean.reply()
    [data] = [
        b["callback_data"]
        for row in (message.reply_markup or {}).get("inline_keyboard", [])
        for b in row
        if b["callback_data"].startswith("pa:c:")
    ]
    CALLS.clear()
    lean.telegram.tap(TOKEN, USER, message.message_id, data)
    await CALLS.wait_for(lambda made: any(c.tool == "append_items" and c.answered for c in made))
    await CALLS.wait_for(lambda made: any(c.tool == "complete" and c.answered for c in made))
    tapped = CALLS.names(without=POLLS)

    # The batch is bound to the reply's key before the send: the send acks, nothing follows.
    assert proposed == [
        "memory.turn_context", "memory.append_items", "pending-actions.stage",
        "telegram-io.send_message",
    ]  # fmt: skip
    assert stage.arguments["message_key"] == send.arguments["idempotency_key"]
    assert send.arguments["ack"] == [update]
    # The change (shopping's confirm tool, not counted here), then its notice, the redraw
    # and the ack in one call; then the records.
    assert tapped[:2] == ["pending-actions.approve", "telegram-io.edit_message"]
    assert sorted(tapped[2:]) == ["memory.append_items", "pending-actions.complete"]
    [approve] = [c for c in CALLS.made if c.tool == "approve"]
    [edit] = [c for c in CALLS.made if c.tool == "edit_message"]
    assert approve.arguments["message_key"] == f"reply:{update}"
    [tap] = edit.arguments["ack"]  # the tap's update
    assert tap != update
    assert edit.arguments["notice"] == "Confirmed: on it."
    [answer] = lean.telegram.callback_answers(TOKEN)
    assert answer.text == "Confirmed: on it."


async def test_a_slow_change_has_its_notice_answered_in_time_and_its_redraw_ack_the_tap(
    lean: Lean,
) -> None:
    lean.llm.script(
        calls(call("shopping__propose_add_to_list", name="plums")), text("Shall I add plums?")
    )
    await handled(lean.say("add plums"))
    message = await lean.reply()
    [[confirm, _]] = (message.reply_markup or {})["inline_keyboard"]
    CALLS.clear()
    CALLS.hold("confirm_add_to_list")  # the change takes its time (a Google calendar, say)
    lean.telegram.tap(TOKEN, USER, message.message_id, confirm["callback_data"])
    await CALLS.wait_for(lambda _: "confirm_add_to_list" in CALLS.held)

    lean.timer.expire()  # tap_answer_within_s have passed, the change still at work
    await lean.telegram.wait_for(lambda: bool(lean.telegram.callback_answers(TOKEN)))
    answered = CALLS.names(without=POLLS)
    edited_meanwhile = list(message.edits)
    CALLS.release()
    await CALLS.wait_for(lambda made: any(c.tool == "complete" and c.answered for c in made))
    tapped = CALLS.names(without=POLLS)

    # The notice on its own, while the change is at work; nothing redrawn, nothing acked.
    assert answered == ["pending-actions.approve", "telegram-io.answer_callback"]
    assert edited_meanwhile == []
    [answer] = [c for c in CALLS.made if c.tool == "answer_callback"]
    assert answer.arguments["text"] == "Confirmed: on it."
    assert "ack" not in answer.arguments
    # Once it is done, the redraw and the ack in one call, the callback not answered again.
    assert tapped[:3] == [*answered, "telegram-io.edit_message"]
    assert sorted(tapped[3:]) == ["memory.append_items", "pending-actions.complete"]
    [edit] = [c for c in CALLS.made if c.tool == "edit_message"]
    assert "callback_id" not in edit.arguments
    [tap] = edit.arguments["ack"]
    assert [c for c in CALLS.made if tap in (c.arguments.get("ack") or [])] == [edit]
    [shown] = lean.telegram.callback_answers(TOKEN)  # Telegram refuses a second answer
    assert shown.text == "Confirmed: on it."
    [redrawn] = message.edits  # what the change answered: drawn once it was done
    assert redrawn.text.endswith("✅ Shopping: Add plums to groceries — Added plums to groceries")
    to_telegram = [c.method.lower() for c in lean.telegram.calls()]
    assert [m for m in to_telegram if m in ("answercallbackquery", "editmessagetext")] == [
        "answercallbackquery", "editmessagetext",
    ]  # fmt: skip


async def test_a_tap_that_changes_nothing_is_answered_and_acked_in_one_call(lean: Lean) -> None:
    lean.llm.script(
        calls(call("shopping__propose_add_to_list", name="pears")), text("Shall I add pears?")
    )
    await handled(lean.say("add pears"))
    message = await lean.reply()
    [[confirm, _]] = (message.reply_markup or {})["inline_keyboard"]
    data = confirm["callback_data"]
    lean.telegram.tap(TOKEN, USER, message.message_id, data)
    await lean.telegram.wait_for(lambda: bool(lean.telegram.callback_answers(TOKEN)))
    await CALLS.wait_for(lambda made: any(c.tool == "complete" and c.answered for c in made))
    CALLS.clear()

    lean.telegram.tap(TOKEN, USER, message.message_id, data, forged=True)  # an old button
    await CALLS.wait_for(lambda made: any(c.tool == "answer_callback" and c.answered for c in made))

    assert CALLS.names(without=POLLS) == ["pending-actions.approve", "telegram-io.answer_callback"]
    [answer] = [c for c in CALLS.made if c.tool == "answer_callback"]
    [second] = answer.arguments["ack"]
    assert answer.arguments["text"] == "already done"
    assert acks(second)


async def test_a_scheduled_prompt_is_the_same_lean_turn_acked_by_the_next_poll(
    lean: Lean,
) -> None:
    lean.llm.script(text("Hello!"), text("Here is your week."))
    await handled(lean.say("hi"))  # the chat exists: the bot may write first from now on
    CALLS.clear()
    now = datetime.now(PARIS)
    sunday = (now + timedelta(days=(6 - now.weekday()) % 7)).replace(
        hour=18, minute=0, second=0, microsecond=0
    )
    if sunday <= now:
        sunday += timedelta(days=7)
    CLOCK.advance(sunday.timestamp() - time.time() + 1)
    [key] = [f"clawdia/prompt/week-ahead@{sunday.isoformat(timespec='minutes')}"]

    made = await handled(key)

    assert made == TEXT_TURN
    [read] = [c for c in CALLS.made if c.tool == "turn_context"]
    assert "text" not in read.arguments  # not the user's words: it answers nothing
    [send] = [c for c in CALLS.made if c.tool == "send_message"]
    assert "ack" not in send.arguments  # a firing is acked at the scheduler...
    assert send.arguments["idempotency_key"] == f"fire:{key}"
    [acking] = [c for c in CALLS.made if c.arguments.get("ack")]
    assert (acking.name, acking.arguments["ack"]) == ("scheduler.next_due", [key])  # ...on poll
    assert (await lean.reply(2)).text == "Here is your week."
    assert lean.llm.requests[-1]["input"][-1]["content"] == "(Scheduled: week-ahead) Plan my week."


async def test_a_turn_goes_on_when_memory_does_not_answer(tmp_path: Path) -> None:
    llm = FakeOpenAI()
    llm.script(text("Hello without memory."))
    async with llm.serve() as llm_url:
        config = tmp_path / "config"
        config.mkdir()
        registry, agents = config / "servers.yaml", config / "agents.yaml"
        nowhere = f"http://127.0.0.1:{free_port()}/mcp"  # nothing listens there
        registry.write_text(
            f"servers:\n  memory: {{url: '{nowhere}', role: memory, timeout_s: 1}}\n"
        )
        agents.write_text(
            "agents:\n  clawdia:\n    name: Clawdia\n"
            f"    persona: {ROOT / 'agents' / 'clawdia'}\n    servers: []\n"
        )
        settings = OrchestratorSettings(
            registry=registry,
            agents=agents,
            openai_api_key=SecretStr(API_KEY),
            openai_base_url=llm_url,
            llm_timeout_s=5,
        )
        sent: list[str] = []

        async def deliver(reply: ChatReply) -> str:
            sent.append(reply.text)
            return "1"

        async with open_app(settings) as app:
            await app.dispatcher.on_text(
                TextContext("clawdia", "7", "hi", user="7", deliver=Deliver("reply:1", deliver))
            )

    assert sent == ["Hello without memory."]
    [request] = llm.requests
    assert [i["content"] for i in request["input"]] == ["hi"]  # no window: none could be read


def draft_texts(lean: Lean) -> list[str]:
    return [d.text for d in lean.telegram.drafts(TOKEN, USER)]


@pytest.mark.parametrize("pace", [AT_ONCE])
async def test_a_streamed_reply_shows_as_written_then_is_sent_as_an_unstreamed_one(
    lean: Lean,
) -> None:
    written = anyio.Event()
    lean.llm.script(Streamed(text("It is **sunny** in Paris today."), hold_after=3, gate=written))
    update = lean.say("weather?")
    await lean.telegram.wait_for(lambda: "It is sunny" in draft_texts(lean))
    assert lean.telegram.sent(TOKEN, USER) == []  # still being written
    written.set()

    made = await handled(update)
    reply = await lean.reply()

    assert [name for name in made if name != "telegram-io.send_draft"] == TEXT_TURN
    assert made[-1] == "telegram-io.send_message"  # no draft after the reply
    drafts = made.count("telegram-io.send_draft")
    assert 1 <= drafts == len(draft_texts(lean))  # one a change at most; here ≤ 7 words
    assert reply.text == "It is sunny in Paris today."
    assert [e["type"] for e in reply.entities] == ["bold"]  # formatted as ever
    [request] = lean.llm.requests
    assert request["stream"] is True


@pytest.mark.parametrize("pace", [AT_ONCE])
async def test_while_a_tool_runs_the_draft_says_what_it_does(lean: Lean) -> None:
    answered = anyio.Event()
    lean.llm.script(
        calls(call("weather__get_forecast", location="Paris", days=1)),
        Gated(answered, text("Sunny in Paris.")),
    )
    update = lean.say("weather in Paris tomorrow?")
    await lean.telegram.wait_for(
        lambda: "⏳ Daily forecast: location=Paris, days=1…" in draft_texts(lean)
    )
    answered.set()

    await handled(update)

    assert (await lean.reply()).text == "Sunny in Paris."


@pytest.mark.parametrize("pace", [AT_ONCE])
async def test_stop_keeps_what_was_written_marked_stopped_and_stores_nothing(
    lean: Lean,
) -> None:
    never = anyio.Event()
    lean.llm.script(Streamed(text("Here is a long story about Paris."), hold_after=3, gate=never))
    update = lean.say("tell me a story")
    await lean.telegram.wait_for(lambda: "Here is a" in draft_texts(lean))

    lean.say("/stop")
    await handled(update)
    await lean.reply(2)

    texts = sorted(m.text for m in lean.telegram.sent(TOKEN, USER))
    assert texts == ["Here is a\n\n⏹ Stopped.", "Stopped: I dropped that request. What next?"]
    assert "memory.append_items" not in CALLS.names()
    never.set()


@pytest.mark.parametrize("pace", [AT_ONCE])
async def test_where_drafts_are_refused_a_placeholder_is_edited_and_the_reply_takes_its_place(
    lean: Lean,
) -> None:
    lean.telegram.refuse_drafts(TOKEN)
    written = anyio.Event()
    lean.llm.script(
        Streamed(text("It is sunny in Paris today."), hold_after=3, gate=written),
        text("Lyon too."),
    )
    update = lean.say("weather?")
    await lean.telegram.wait_for(lambda: len(lean.telegram.sent(TOKEN, USER)) == 1)
    [placeholder] = lean.telegram.sent(TOKEN, USER)
    written.set()
    made = await handled(update)

    [reply] = lean.telegram.sent(TOKEN, USER)
    assert reply is placeholder
    assert reply.text == "It is sunny in Paris today."  # the reply, in the placeholder's place
    [send] = [c for c in CALLS.made if c.arguments.get("idempotency_key") == f"reply:{update}"]
    assert send.arguments["replace"] == placeholder.message_id
    assert made.count("telegram-io.send_draft") == 1  # refused once, then never asked again
    CALLS.clear()
    second = lean.say("and Lyon?")
    await handled(second)
    assert "telegram-io.send_draft" not in CALLS.names()


@pytest.mark.parametrize(("pace", "streams"), [(AT_ONCE, False)])
async def test_an_agent_that_does_not_stream_makes_the_unstreamed_calls(lean: Lean) -> None:
    lean.llm.script(Slow(0.3, text("Hello! How can I help?")))
    update = lean.say("hi")

    made = await handled(update)

    assert made == TEXT_TURN
    assert "stream" not in lean.llm.requests[0]
    assert lean.telegram.drafts(TOKEN) == []


@pytest.mark.parametrize("pace", [AT_ONCE])
async def test_a_draft_telegram_would_not_take_now_makes_the_next_one_wait(lean: Lean) -> None:
    lean.timer.hold(BUSY_S)
    lean.telegram.fail_next("sendMessageDraft", 429, retry_after=5)
    written = anyio.Event()
    lean.llm.script(Streamed(text("It is sunny in Paris today."), hold_after=2, gate=written))
    update = lean.say("weather?")
    await lean.telegram.wait_for(lambda: lean.timer.waiting.get(BUSY_S) == 1)
    assert draft_texts(lean) == []  # the first was refused: the next waits
    written.set()
    lean.timer.expire(BUSY_S)

    await handled(update)

    assert (await lean.reply()).text == "It is sunny in Paris today."
    assert [c for c in CALLS.made if c.tool == "send_draft"]  # tried, and tried again
