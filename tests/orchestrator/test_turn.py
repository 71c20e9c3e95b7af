"""Turns end to end in-process: the model, the tools, the conversation, the failures."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from fakes.mcp_toys import CALLS
from fakes.responses_api import (
    HANG,
    bad_request,
    call,
    calls,
    invalid_api_key,
    quota_exceeded,
    rate_limited,
    server_error,
    text,
)
from fakes.world import (
    API_KEY,
    World,
    answer_from_output,
    clawdia,
    inputs,
    last_output,
    say,
    write_config,
)
from orchestrator.core.routes import TextContext

pytestmark = pytest.mark.anyio
Body = dict[str, Any]


async def test_a_text_only_turn_sends_persona_time_and_tools(world: World) -> None:
    world.llm.script(text("Hello! How can I help?"))
    async with clawdia(world) as app:
        assert await say(app, "hi") == "Hello! How can I help?"
    request = world.llm.requests[0]
    assert request["store"] is False
    assert "You are Clawdia" in request["instructions"]
    assert "Current date and time for the user:" in request["instructions"]
    assert "Europe/Paris" in request["instructions"]
    assert inputs(request)[-1] == {"type": "message", "role": "user", "content": "hi"}
    tools = {tool["name"]: tool for tool in request["tools"]}
    assert {
        "weather__get_current_weather",
        "weather__get_forecast",
        "weather__get_hourly_forecast",
        "toys__echo",
        "toys__propose_thing",
    } <= set(tools)
    assert "toys__confirm_thing" not in tools
    assert tools["weather__get_forecast"]["strict"] is True


async def test_weather_in_paris_then_tomorrow_carries_the_history(world: World) -> None:
    world.llm.script(
        calls(call("weather__get_current_weather", location="Paris")),
        answer_from_output(
            lambda out: (
                f"{out['place']['name']}: {out['temperature']}"
                f"{out['units']['temperature']}, {out['conditions']}"
            )
        ),
        calls(call("weather__get_forecast", location="Paris", days=2)),
        answer_from_output(lambda out: f"Tomorrow: {out['days'][1]['conditions']}"),
    )
    async with clawdia(world) as app:
        first = await say(app, "what's the weather in Paris?")
        second = await say(app, "and tomorrow?")
    assert first.startswith("Paris, Île-de-France, France: ")
    assert second.startswith("Tomorrow: ")
    follow_up = inputs(world.llm.requests[2])
    kinds = [(i.get("type"), i.get("role")) for i in follow_up]
    assert kinds == [
        ("message", "user"),
        ("function_call", None),
        ("function_call_output", None),
        ("message", "assistant"),
        ("message", "user"),
    ]
    assert follow_up[0]["content"] == "what's the weather in Paris?"
    assert follow_up[1]["name"] == "weather__get_current_weather"
    assert follow_up[3]["content"] == first
    assert follow_up[4]["content"] == "and tomorrow?"


async def test_parallel_tool_calls_run_concurrently_and_all_answer(world: World) -> None:
    world.llm.script(
        calls(
            call("toys__echo", text="a"),
            call("toys__meet", n=2),
            call("toys__meet", n=2),
            call("weather__get_current_weather", location="Zürich"),
        ),
        lambda body: text(f"{len(inputs(body))} items"),
    )
    async with clawdia(world) as app:
        with anyio.fail_after(10):
            reply = await say(app, "three things")
    outputs = [i for i in inputs(world.llm.requests[1]) if i["type"] == "function_call_output"]
    call_ids = [i["call_id"] for i in inputs(world.llm.requests[1]) if i["type"] == "function_call"]
    assert [o["call_id"] for o in outputs] == call_ids
    assert json.loads(outputs[0]["output"]) == {"echo": "a"}
    # Each "meet" waits for the other: they can only both succeed if they ran together.
    assert [o["output"] for o in outputs[1:3]] == ["met 2", "met 2"]
    assert json.loads(outputs[3]["output"])["place"]["name"].startswith("Zürich")
    assert reply == "9 items"


async def test_tool_errors_unknown_tools_and_bad_arguments_reach_the_model(world: World) -> None:
    before = CALLS.get("confirm_thing", 0)
    world.llm.script(
        calls(
            call("toys__fail", reason="disk full"),
            call("toys__confirm_thing", thing="milk"),
            call("nope__nothing"),
            call("toys__echo", text=7),
        ),
        text("Sorry, that did not work."),
    )
    async with clawdia(world) as app:
        assert await say(app, "do it") == "Sorry, that did not work."
    outputs = [
        json.loads(i["output"])
        for i in inputs(world.llm.requests[1])
        if i["type"] == "function_call_output"
    ]
    assert outputs[0] == {"error": "failed because disk full"}
    assert "no tool named 'toys__confirm_thing'" in outputs[1]["error"]
    assert "no tool named 'nope__nothing'" in outputs[2]["error"]
    assert "error" in outputs[3]
    assert CALLS.get("confirm_thing", 0) == before  # a confirm tool is never the model's


async def test_a_proposal_of_a_kind_its_server_cannot_make_is_never_staged(
    world: World,
) -> None:
    # toys may propose (its entry says so) and has confirm_thing, but not confirm_unheard: a
    # proposal of that kind could only be left executing by a tap, so it never gets one.
    world.llm.script(calls(call("toys__propose_unheard", thing="milk")), text("It cannot be done."))
    async with clawdia(world) as app:
        reply = await app.dispatcher.on_text(
            TextContext("clawdia", "chat-9", "do it", user="chat-9")
        )
    assert reply.text == "It cannot be done."
    assert reply.buttons == []
    error = last_output(world.llm.requests[1])["error"]
    assert "proposed a change of a kind (unheard) that the toys server cannot make" in error
    assert "nothing was proposed" in error


async def test_a_tool_that_hangs_times_out_and_the_model_is_told(world: World) -> None:
    world.llm.script(calls(call("toys__slow")), text("It timed out."))
    async with clawdia(world) as app:
        with anyio.fail_after(10):
            assert await say(app, "slow please") == "It timed out."
    assert "did not answer within 3 s" in last_output(world.llm.requests[1])["error"]


async def test_the_round_limit_ends_with_an_honest_reply(world: World) -> None:
    world.llm.default = calls(call("toys__echo", text="again"))
    async with clawdia(world) as app:
        reply = await say(app, "loop forever")
    assert reply.startswith("I stopped after 3 rounds of tool calls")
    assert len(world.llm.requests) == 3


@pytest.mark.parametrize(
    ("steps", "expected", "requests", "waits"),
    [
        ([invalid_api_key()], "OPENAI_API_KEY", 1, []),
        ([quota_exceeded()], "quota", 1, []),
        ([bad_request()], "OPENAI_MODEL", 1, []),
        ([rate_limited(120)], "try again in 120 seconds", 1, []),
        ([rate_limited(3), text("ok after waiting")], "ok after waiting", 2, [3.0]),
        ([server_error(), server_error(), server_error()], "not answering right now", 3, None),
        ([server_error(), text("recovered")], "recovered", 2, None),
        ([HANG, HANG, HANG], "not answering right now", 3, None),
    ],
    ids=["401", "quota", "400", "429-long", "429-short", "500x3", "500-then-ok", "hang"],
)
async def test_every_llm_error_class_gets_the_right_retries_and_message(
    world: World, steps: list[Any], expected: str, requests: int, waits: list[float] | None
) -> None:
    world.llm.script(*steps)
    sleeps: list[float] = []
    async with clawdia(world, sleeps=sleeps, llm_timeout_s=2) as app:  # as every test
        with anyio.fail_after(20):
            reply = await say(app, "hello")
    assert expected.lower() in reply.lower()
    assert API_KEY not in reply
    assert len(world.llm.requests) == requests
    if waits is not None:
        assert sleeps == waits


async def test_a_failed_turn_stores_nothing(world: World) -> None:
    world.llm.script(invalid_api_key(), text("second try works"), text("third"))
    async with clawdia(world) as app:
        await say(app, "first")
        await say(app, "second")
        await say(app, "third")
    third = inputs(world.llm.requests[2])
    assert [i["content"] for i in third if i.get("role") == "user"] == ["second", "third"]


async def test_history_survives_an_orchestrator_restart(world: World) -> None:
    world.llm.script(text("Noted: you like tea."), text("You like tea."))
    async with clawdia(world) as app:
        await say(app, "I like tea")
    async with clawdia(world) as app:
        assert await say(app, "what do I like?") == "You like tea."
    carried = inputs(world.llm.requests[1])
    assert carried[0] == {"type": "message", "role": "user", "content": "I like tea"}
    assert carried[1]["content"] == "Noted: you like tea."


async def test_a_message_answered_again_after_a_crash_is_remembered_once(world: World) -> None:
    world.llm.default = lambda body: text(f"{len(inputs(body))} items")
    async with clawdia(world) as app:
        first = await app.dispatcher.on_text(TextContext("clawdia", "c", "hi", message_id="bot:1"))
        # The process died before the reply went out; the same message comes again.
        again = await app.dispatcher.on_text(TextContext("clawdia", "c", "hi", message_id="bot:1"))
        after = await app.dispatcher.on_text(
            TextContext("clawdia", "c", "next", message_id="bot:2")
        )
    assert (first.text, again.text) == ("1 items", "3 items")
    assert after.text == "3 items"  # "hi" and its answer once, then "next"


async def test_new_forgets_and_chats_are_separate(world: World) -> None:
    world.llm.default = lambda body: text(f"{len(inputs(body))}")
    async with clawdia(world) as app:
        assert await say(app, "one") == "1"
        assert await say(app, "two") == "3"
        assert await say(app, "other chat", chat="chat-2") == "1"
        assert (
            await app.dispatcher.on_text(TextContext("clawdia", "chat-1", "/new"))
        ).text.startswith("Fresh start")
        assert await say(app, "three") == "1"


async def test_help_and_status_describe_tools_servers_and_model(world: World) -> None:
    async with clawdia(world) as app:
        help_text = (await app.dispatcher.on_text(TextContext("clawdia", "c", "/help"))).text
        status = (await app.dispatcher.on_text(TextContext("clawdia", "c", "/status"))).text
        unknown = (await app.dispatcher.on_text(TextContext("clawdia", "c", "/frobnicate"))).text
    assert "I'm Clawdia" in help_text
    assert "weather: Current weather, Daily forecast, Hourly forecast" in help_text
    assert "/new" in help_text
    assert "model gpt-5-mini" in status
    assert "✅ weather (in-process): up, 3 tools" in status
    assert "✅ memory (in-process)" in status
    assert unknown.startswith("I don't know /frobnicate.")
    assert world.llm.requests == []  # commands never reach the model


async def test_chat_completions_agents_run_the_same_turn(world: World, tmp_path: Any) -> None:

    write_config(tmp_path, api="chat")
    world.llm.script(
        calls(call("weather__get_current_weather", location="Paris")),
        lambda body: text(f"{len(body['messages'])} messages"),
    )
    async with clawdia(world) as app:
        assert await say(app, "weather?") == "4 messages"
    body = world.llm.requests[1]
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "tool"]
    assert "tools" in body


async def test_help_names_only_servers_that_are_down(world: World) -> None:
    async with clawdia(world) as app:
        help_text = (await app.dispatcher.on_text(TextContext("clawdia", "c", "/help"))).text
        status = (await app.dispatcher.on_text(TextContext("clawdia", "c", "/status"))).text
    assert "unavailable right now" not in help_text
    assert "✅ memory (in-process): up, 4 tools\n" in status + "\n"


async def test_a_turn_out_of_time_tells_the_user_and_stores_nothing(world: World) -> None:
    usual = world.settings
    world.settings = usual.model_copy(update={"turn_timeout_s": 0.5, "llm_timeout_s": 30})
    world.llm.script(HANG, text("Back again."))
    async with clawdia(world) as app:
        with anyio.fail_after(10):
            reply = await say(app, "think about everything")
        assert reply.startswith("That took too long (0.5 s)")
    world.llm.release()
    # The next turn with the usual time (0.5 s is too short for a loaded machine's turn).
    world.settings = usual
    async with clawdia(world) as app:
        assert await say(app, "hello?") == "Back again."
    # The turn that ran out of time left nothing in the conversation.
    assert [i.get("content") for i in inputs(world.llm.requests[-1])] == ["hello?"]


async def test_tool_calls_past_the_turns_limit_are_not_made(world: World) -> None:
    world.settings = world.settings.model_copy(update={"max_tool_calls": 2})
    world.llm.script(
        calls(*(call("toys__echo", text=f"n{n}") for n in range(3))),
        calls(call("toys__echo", text="again")),
        text("Done."),
    )
    before = CALLS.get("echo", 0)
    async with clawdia(world) as app:
        assert await say(app, "echo three times") == "Done."
    assert CALLS.get("echo", 0) - before == 2
    first_round = [i for i in inputs(world.llm.requests[1]) if i["type"] == "function_call_output"]
    assert [json.loads(o["output"]).get("echo") for o in first_round[:2]] == ["n0", "n1"]
    assert "used its 2 tool calls" in json.loads(first_round[2]["output"])["error"]
    second_round = inputs(world.llm.requests[2])[-1]
    assert "used its 2 tool calls" in json.loads(second_round["output"])["error"]
