"""Both LLM implementations against the fake OpenAI API, over real HTTP.

Every test runs for the Responses API and for Chat Completions: same script, same
items and calls back, same errors. Sleeps between retries are recorded, never slept.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import pytest

from fakes.responses_api import (
    HANG,
    UNREPORTED,
    Body,
    Broken,
    Call,
    Error,
    FakeOpenAI,
    Step,
    Tokens,
    bad_request,
    call,
    calls,
    invalid_api_key,
    overloaded,
    quota_exceeded,
    rate_limited,
    server_error,
    text,
)
from fakes.serving import free_port
from orchestrator.llm.base import FunctionCall, Image, Item, LLMReply, ToolSpec, Usage
from orchestrator.llm.errors import (
    LLMAuthFailed,
    LLMError,
    LLMQuotaExceeded,
    LLMRateLimited,
    LLMRejected,
    LLMUnavailable,
)
from orchestrator.llm.openai_api import ChatCompletionsLLM, ResponsesLLM, build_llm
from orchestrator.llm.retry import CallFailed, RetryPolicy

pytestmark = pytest.mark.anyio

Api = Literal["responses", "chat"]
E = TypeVar("E", bound=LLMError)
KEY = "sk-clawmesh-TEST-KEY-must-never-leak-7f3a"
USER: Item = {"type": "message", "role": "user", "content": "Weather in Paris?"}
FORECAST = ToolSpec(
    name="weather__get_forecast",
    description="The forecast for a place.",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
    strict=True,
)
NOTE = ToolSpec("memory__note", "Keep a note.", {"type": "object"}, strict=False)


@dataclass
class Rig:
    fake: FakeOpenAI
    llm: ResponsesLLM | ChatCompletionsLLM
    sleeps: list[float]
    api: Api

    async def respond(self, *items: Item, tools: tuple[ToolSpec, ...] = (FORECAST,)) -> LLMReply:
        return await self.llm.respond(
            instructions="You are Clawdia.", items=list(items) or [USER], tools=tools
        )


@dataclass(frozen=True)
class Served:
    """One fake server and one model per API for the whole module: a server start and
    stop costs about 0.2 s, a client about 40 ms (its TLS context)."""

    fake: FakeOpenAI
    base_url: str
    sleeps: list[float]
    llms: dict[str, ResponsesLLM | ChatCompletionsLLM]

    def build(
        self, api: Api, *, timeout_s: float = 5, reasoning_effort: str | None = None
    ) -> ResponsesLLM | ChatCompletionsLLM:
        async def sleep(seconds: float) -> None:
            self.sleeps.append(seconds)

        return build_llm(
            api,
            api_key=KEY,
            base_url=self.base_url,
            model="gpt-test",
            reasoning_effort=reasoning_effort,
            timeout_s=timeout_s,
            retry=RetryPolicy(sleep=sleep, random=lambda: 0.0),
        )


@pytest.fixture(scope="module")
async def served() -> AsyncIterator[Served]:
    fake = FakeOpenAI()
    async with fake.serve() as base_url:
        made = Served(fake, base_url, [], {})
        made.llms.update({api: made.build(api) for api in ("responses", "chat")})
        try:
            yield made
        finally:
            for llm in made.llms.values():
                await llm.aclose()


@pytest.fixture(params=["responses", "chat"])
def rig(served: Served, request: pytest.FixtureRequest) -> Iterator[Rig]:
    served.fake.reset()
    served.sleeps.clear()
    yield Rig(served.fake, served.llms[request.param], served.sleeps, request.param)
    served.fake.release()


@asynccontextmanager
async def rig_for(
    served: Served, api: Api, *, timeout_s: float = 5, reasoning_effort: str | None = None
) -> AsyncIterator[Rig]:
    """A rig with a model of its own, for other settings."""
    served.fake.reset()
    served.sleeps.clear()
    llm = served.build(api, timeout_s=timeout_s, reasoning_effort=reasoning_effort)
    try:
        yield Rig(served.fake, llm, served.sleeps, api)
    finally:
        await llm.aclose()
        served.fake.release()  # requests stay readable after the block


# Replies


async def test_a_text_reply_is_one_assistant_message(rig: Rig) -> None:
    rig.fake.script(text("Sunny, 21 °C."))
    reply = await rig.respond()
    assert reply.text == "Sunny, 21 °C."
    assert reply.calls == []
    assert reply.items == [{"type": "message", "role": "assistant", "content": "Sunny, 21 °C."}]


async def test_one_function_call_comes_back_as_a_call_and_an_item(rig: Rig) -> None:
    rig.fake.script(calls(call("weather__get_forecast", city="Paris")))
    reply = await rig.respond()
    [made] = reply.calls
    assert made.name == "weather__get_forecast"
    assert json.loads(made.arguments) == {"city": "Paris"}
    assert made.call_id.startswith("call_")
    assert reply.items == [
        {
            "type": "function_call",
            "call_id": made.call_id,
            "name": made.name,
            "arguments": made.arguments,
        }
    ]
    assert reply.text == ""


async def test_parallel_calls_keep_their_order_after_the_preamble(rig: Rig) -> None:
    rig.fake.script(
        calls(
            call("weather__get_forecast", city="Paris"),
            call("weather__get_forecast", city="Lyon"),
            call("memory__note", text="likes sun"),
            preamble="Checking both.",
        )
    )
    reply = await rig.respond(tools=(FORECAST, NOTE))
    assert [(c.name, json.loads(c.arguments)) for c in reply.calls] == [
        ("weather__get_forecast", {"city": "Paris"}),
        ("weather__get_forecast", {"city": "Lyon"}),
        ("memory__note", {"text": "likes sun"}),
    ]
    assert len({c.call_id for c in reply.calls}) == 3
    assert reply.text == "Checking both."
    assert [i["type"] for i in reply.items] == ["message", *["function_call"] * 3]


async def test_a_reply_carried_back_with_its_outputs_is_accepted(rig: Rig) -> None:
    """The fake refuses, as the real API does, calls without outputs and outputs without calls."""
    rig.fake.script(
        calls(
            call("weather__get_forecast", city="Paris"),
            call("weather__get_forecast", city="Lyon"),
            preamble="Checking.",
        ),
        lambda body: text(f"seen {len(body.get('input') or body['messages'])}"),
    )
    first = await rig.respond()
    outputs = [output_for(c, f"forecast {i}") for i, c in enumerate(first.calls)]
    second = await rig.respond(USER, *first.items, *outputs)
    # Responses: 1 + 3 + 2 input items; chat: system, user, one assistant, two tool messages.
    assert second.text == ("seen 6" if rig.api == "responses" else "seen 5")


async def test_usage_is_reported(rig: Rig) -> None:
    rig.fake.script(
        text("ok", usage=(1234, 56)),
        calls(call("weather__get_forecast", city="Paris"), usage=(2000, 17)),
    )
    assert (await rig.respond()).usage == Usage(1234, 56)
    assert (await rig.respond()).usage == Usage(2000, 17)


async def test_cached_input_and_reasoning_tokens_are_read_from_the_details(rig: Rig) -> None:
    rig.fake.script(text("ok", usage=Tokens(5000, 300, cached=4096, reasoning=256)))

    usage = (await rig.respond()).usage

    assert usage == Usage(5000, 300, cached_input_tokens=4096, reasoning_tokens=256)
    assert usage.known


async def test_an_answer_without_usage_is_unknown_never_guessed(rig: Rig) -> None:
    rig.fake.script(text("ok", usage=UNREPORTED), text("again", usage=(10, 2)))

    unreported = (await rig.respond()).usage
    reported = (await rig.respond()).usage

    assert unreported == Usage(unknown=1)
    assert not unreported.known
    assert unreported + reported == Usage(10, 2, unknown=1)


async def test_the_api_key_is_the_bearer_token(rig: Rig) -> None:
    rig.fake.script(text("ok"))
    await rig.respond()
    assert rig.fake.authorizations == [f"Bearer {KEY}"]


@pytest.mark.parametrize("api", ["responses", "chat"])
async def test_a_local_server_without_a_key_gets_a_placeholder(served: Served, api: Api) -> None:
    served.fake.reset()
    served.fake.script(text("ok"))
    llm = build_llm(
        api,
        api_key=None,
        base_url=served.base_url,
        model="qwen3:8b",
        reasoning_effort=None,
        timeout_s=5,
    )
    assert (await llm.respond(instructions="", items=[USER], tools=[])).text == "ok"
    await llm.aclose()
    assert served.fake.authorizations == ["Bearer not-needed"]
    assert served.fake.requests[0]["model"] == "qwen3:8b"


async def test_a_reply_can_be_computed_from_the_request(rig: Rig) -> None:
    def echo_output(body: Body) -> Step:
        sent = body.get("input") or body["messages"]
        last = sent[-1]
        return text(f"The tool said: {last.get('output') or last.get('content')}")

    rig.fake.script(calls(call("weather__get_forecast", city="Paris")), echo_output)
    first = await rig.respond()
    second = await rig.respond(USER, *first.items, output_for(first.calls[0], "rain"))
    assert second.text == "The tool said: rain"


# Requests, as each API expects them


HISTORY: list[Item] = [
    {"type": "message", "role": "user", "content": "Weather in Paris and Lyon?"},
    {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA-secret"},
    {"type": "message", "role": "assistant", "content": "Checking both."},
    {
        "type": "function_call",
        "call_id": "call_a",
        "name": "weather__get_forecast",
        "arguments": '{"city": "Paris"}',
    },
    {
        "type": "function_call",
        "call_id": "call_b",
        "name": "weather__get_forecast",
        "arguments": '{"city": "Lyon"}',
    },
    {"type": "function_call_output", "call_id": "call_a", "output": "Paris: sun"},
    {"type": "function_call_output", "call_id": "call_b", "output": "Lyon: rain"},
    {"type": "message", "role": "assistant", "content": "Sun in Paris, rain in Lyon."},
    {"type": "message", "role": "user", "content": "And tomorrow?"},
    {
        "type": "function_call",
        "call_id": "call_c",
        "name": "weather__get_forecast",
        "arguments": '{"city": "Paris"}',
    },
    {"type": "function_call_output", "call_id": "call_c", "output": "Paris: clouds"},
]


async def test_responses_requests_send_the_items_as_they_are(served: Served) -> None:
    async with rig_for(served, "responses") as rig:
        rig.fake.script(text("Clouds."), text("Hello."))
        await rig.llm.respond(
            instructions="You are Clawdia.", items=HISTORY, tools=[FORECAST, NOTE]
        )
        await rig.llm.respond(instructions="You are Clawdia.", items=[USER], tools=[])
    with_tools, without = rig.fake.requests
    assert with_tools == {
        "model": "gpt-test",
        "instructions": "You are Clawdia.",
        "input": HISTORY,
        "store": False,
        "parallel_tool_calls": True,
        "tools": [
            {
                "type": "function",
                "name": "weather__get_forecast",
                "description": "The forecast for a place.",
                "parameters": FORECAST.parameters,
                "strict": True,
            },
            {
                "type": "function",
                "name": "memory__note",
                "description": "Keep a note.",
                "parameters": {"type": "object"},
                "strict": False,
            },
        ],
    }
    assert "tools" not in without
    assert "parallel_tool_calls" not in without
    assert without["store"] is False


async def test_chat_requests_group_calls_and_answer_them_with_tool_messages(served: Served) -> None:
    async with rig_for(served, "chat") as rig:
        rig.fake.script(text("Clouds."), text("Hello."))
        await rig.llm.respond(instructions="You are Clawdia.", items=HISTORY, tools=[FORECAST])
        await rig.llm.respond(instructions="You are Clawdia.", items=[USER], tools=[])
    with_tools, without = rig.fake.requests

    def tool_call(call_id: str, city: str) -> dict[str, Any]:
        return {
            "id": call_id,
            "type": "function",
            "function": {"name": "weather__get_forecast", "arguments": json.dumps({"city": city})},
        }

    assert with_tools["messages"] == [
        {"role": "system", "content": "You are Clawdia."},
        {"role": "user", "content": "Weather in Paris and Lyon?"},
        {
            "role": "assistant",
            "content": "Checking both.",
            "tool_calls": [tool_call("call_a", "Paris"), tool_call("call_b", "Lyon")],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "Paris: sun"},
        {"role": "tool", "tool_call_id": "call_b", "content": "Lyon: rain"},
        {"role": "assistant", "content": "Sun in Paris, rain in Lyon."},
        {"role": "user", "content": "And tomorrow?"},
        {"role": "assistant", "content": None, "tool_calls": [tool_call("call_c", "Paris")]},
        {"role": "tool", "tool_call_id": "call_c", "content": "Paris: clouds"},
    ]
    assert with_tools["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "weather__get_forecast",
                "description": "The forecast for a place.",
                "parameters": FORECAST.parameters,
                "strict": True,
            },
        }
    ]
    assert with_tools["model"] == "gpt-test"
    assert "tools" not in without
    assert "reasoning_effort" not in without


async def test_responses_reasoning_is_asked_for_encrypted_and_carried_back(served: Served) -> None:
    async with rig_for(served, "responses", reasoning_effort="low") as rig:
        rig.fake.script(calls(call("weather__get_forecast", city="Paris")), text("Sun."))
        first = await rig.respond()
        reasoning = first.items[0]
        assert reasoning["type"] == "reasoning"
        assert reasoning["encrypted_content"]
        await rig.respond(USER, *first.items, output_for(first.calls[0], "sun"))
    asked = rig.fake.requests[0]
    assert asked["reasoning"] == {"effort": "low"}
    assert asked["include"] == ["reasoning.encrypted_content"]
    assert rig.fake.requests[1]["input"][1] == reasoning


async def test_without_an_effort_no_reasoning_is_asked_for(served: Served) -> None:
    async with rig_for(served, "responses") as rig:
        rig.fake.script(text("ok"))
        await rig.respond()
    assert "reasoning" not in rig.fake.requests[0]
    assert "include" not in rig.fake.requests[0]


async def test_chat_passes_the_effort_and_leaves_reasoning_items_out(served: Served) -> None:
    async with rig_for(served, "chat", reasoning_effort="high") as rig:
        rig.fake.script(text("ok"))
        await rig.respond(*HISTORY[:3])
    sent = rig.fake.requests[0]
    assert sent["reasoning_effort"] == "high"
    assert [m["role"] for m in sent["messages"]] == ["system", "user", "assistant"]


async def test_chat_calls_without_ids_or_arguments_are_made_whole(served: Served) -> None:
    async with rig_for(served, "chat") as rig:
        rig.fake.script(
            calls(Call("weather__get_forecast", ""), Call("memory__note", "{}"), ids=False)
        )
        reply = await rig.respond()
    first, second = reply.calls
    assert first.arguments == "{}"
    assert first.call_id.startswith("call_")
    assert len(first.call_id) > len("call_")
    assert first.call_id != second.call_id
    assert reply.items[0]["call_id"] == first.call_id


# Errors: retried by cause, then one LLMError with a fixed user message


async def test_a_500_is_retried_then_the_answer_is_returned(rig: Rig) -> None:
    rig.fake.script(server_error(), text("ok"))
    assert (await rig.respond()).text == "ok"
    assert len(rig.fake.requests) == 2
    assert rig.sleeps == [1.0]


async def test_an_overloaded_server_is_retried(rig: Rig) -> None:
    rig.fake.script(overloaded(), server_error(529), text("ok"))
    assert (await rig.respond()).text == "ok"
    assert rig.sleeps == [1.0, 2.0]


async def test_three_500s_make_the_model_unavailable(rig: Rig) -> None:
    rig.fake.script(server_error(), server_error(), server_error(), text("never"))
    error = await failure(rig, LLMUnavailable)
    assert len(rig.fake.requests) == 3
    assert "in a minute" in error.user_message


async def test_a_short_retry_after_is_waited_then_retried(rig: Rig) -> None:
    rig.fake.script(rate_limited(retry_after_s=1), text("ok"))
    assert (await rig.respond()).text == "ok"
    assert rig.sleeps == [1.0]
    assert len(rig.fake.requests) == 2


async def test_a_long_retry_after_gives_up_at_once_and_says_how_long(rig: Rig) -> None:
    rig.fake.script(rate_limited(retry_after_s=120), text("never"))
    error = await failure(rig, LLMRateLimited)
    assert error.retry_after_s == 120
    assert "120 seconds" in error.user_message
    assert len(rig.fake.requests) == 1
    assert rig.sleeps == []


async def test_an_exhausted_quota_is_not_retried(rig: Rig) -> None:
    rig.fake.script(quota_exceeded(), text("never"))
    error = await failure(rig, LLMQuotaExceeded)
    assert "billing" in error.user_message
    assert len(rig.fake.requests) == 1


async def test_a_wrong_key_is_not_retried_and_never_shown(rig: Rig) -> None:
    rig.fake.script(invalid_api_key(), text("never"))
    error = await failure(rig, LLMAuthFailed)
    assert "OPENAI_API_KEY" in error.user_message
    assert len(rig.fake.requests) == 1


async def test_a_bad_request_is_not_retried(rig: Rig) -> None:
    rig.fake.script(bad_request(), text("never"))
    error = await failure(rig, LLMRejected)
    assert "OPENAI_MODEL" in error.user_message
    assert len(rig.fake.requests) == 1


@pytest.mark.parametrize("api", ["responses", "chat"])
async def test_a_silent_server_times_out_as_unavailable(served: Served, api: Api) -> None:
    async with rig_for(served, api, timeout_s=0.1) as rig:
        rig.fake.script(HANG, HANG, HANG, text("never"))
        await failure(rig, LLMUnavailable)
    assert len(rig.fake.requests) == 3
    assert len(rig.sleeps) == 2


@pytest.mark.parametrize("api", ["responses", "chat"])
async def test_a_server_that_is_not_there_is_unavailable(api: Api) -> None:
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    llm = build_llm(
        api,
        api_key=KEY,
        base_url=f"http://127.0.0.1:{free_port()}/v1",
        model="gpt-test",
        reasoning_effort=None,
        timeout_s=2,
        retry=RetryPolicy(sleep=sleep),
    )
    with pytest.raises(LLMUnavailable):
        await llm.respond(instructions="", items=[USER], tools=[])
    await llm.aclose()
    assert len(sleeps) == 2


async def test_the_fake_says_when_the_script_ran_out(rig: Rig) -> None:
    error = await failure(rig, LLMUnavailable)
    assert len(rig.fake.requests) == 3
    assert isinstance(error.__cause__, CallFailed)
    assert "the test script ran out" in str(error.__cause__.__cause__)  # the client's error


async def test_a_default_reply_serves_when_the_script_is_empty(rig: Rig) -> None:
    rig.fake.default = text("always")
    rig.fake.script(text("first"))
    assert [(await rig.respond()).text for _ in range(3)] == ["first", "always", "always"]


ERRORS: list[Error] = [
    rate_limited(120),
    quota_exceeded(),
    invalid_api_key(),
    bad_request(),
    server_error(),
    overloaded(),
]


@pytest.mark.parametrize("error", ERRORS, ids=lambda e: f"{e.status}-{e.code}")
async def test_no_error_text_holds_the_key_or_the_provider_message(rig: Rig, error: Error) -> None:
    rig.fake.script(error, error, error)
    raised = await failure(rig, LLMError)
    for shown in (raised.user_message, str(raised), repr(raised.__cause__)):
        assert KEY not in shown
        assert KEY[-4:] not in shown
        assert error.message[:20] not in shown
    assert raised.user_message.endswith(".")


def output_for(made: FunctionCall, output: str) -> Item:
    return {"type": "function_call_output", "call_id": made.call_id, "output": output}


async def failure(rig: Rig, kind: type[E]) -> E:
    with pytest.raises(kind) as caught:
        await rig.respond()
    return caught.value


async def streamed(rig: Rig, *items: Item, tools: tuple[ToolSpec, ...] = (FORECAST,)) -> Streamed:
    """The reply of a streamed call, with what ``writing`` was told along the way."""
    told: list[str] = []

    async def writing(so_far: str) -> None:
        told.append(so_far)

    reply = await rig.llm.respond(
        instructions="You are Clawdia.", items=list(items) or [USER], tools=tools, writing=writing
    )
    return Streamed(reply, told)


@dataclass(frozen=True)
class Streamed:
    reply: LLMReply
    told: list[str]


async def test_a_streamed_reply_is_told_word_by_word_and_is_the_unstreamed_reply(
    rig: Rig,
) -> None:
    said = "It is **sunny** in Paris, 21 °C."
    rig.fake.script(text(said, usage=(120, 9)), text(said, usage=(120, 9)))

    whole = await rig.respond()
    got = await streamed(rig)

    assert got.reply.text == whole.text == said
    assert got.reply.usage == whole.usage == Usage(120, 9)
    assert [i["type"] for i in got.reply.items] == [i["type"] for i in whole.items]
    assert got.told == ["It", "It is", "It is **sunny**", *got.told[3:]]
    assert got.told[-1] == said
    assert all(a == b[: len(a)] for a, b in itertools.pairwise(got.told))  # only ever grows
    assert rig.fake.requests[1]["stream"] is True
    assert "stream" not in rig.fake.requests[0]
    if rig.api == "chat":
        assert rig.fake.requests[1]["stream_options"] == {"include_usage": True}


async def test_streamed_tool_calls_are_the_unstreamed_calls(rig: Rig) -> None:
    made = calls(
        call("weather__get_forecast", city="Paris"),
        call("memory__note", text="likes Paris in spring", tags=["travel"]),
        preamble="Let me check.",
    )
    rig.fake.script(made, made)

    whole = await rig.respond(tools=(FORECAST, NOTE))
    got = await streamed(rig, tools=(FORECAST, NOTE))

    assert [(c.name, json.loads(c.arguments)) for c in got.reply.calls] == [
        (c.name, json.loads(c.arguments)) for c in whole.calls
    ]
    assert got.reply.text == whole.text == "Let me check."
    assert got.told[-1] == "Let me check."


async def test_a_stream_broken_midway_is_tried_again_from_the_start(rig: Rig) -> None:
    said = "Sunny in Paris all week long."
    rig.fake.script(Broken(text(said), after=3), Broken(text(said), after=2, cut=True), text(said))

    got = await streamed(rig)

    assert got.reply.text == said
    assert len(rig.fake.requests) == 3
    assert len(rig.sleeps) == 2  # two backoffs, recorded
    assert "Sunny in Paris" in got.told  # the first try's words, told again from the start
    assert got.told[-1] == said


async def test_a_streamed_call_refused_before_it_streams_is_the_same_error(rig: Rig) -> None:
    rig.fake.script(bad_request())
    with pytest.raises(LLMRejected):
        await streamed(rig)
    rig.fake.script(rate_limited(0.5), text("ok"))
    assert (await streamed(rig)).reply.text == "ok"
    assert rig.sleeps == [0.5]


async def test_a_photo_goes_as_each_api_takes_an_image(rig: Rig) -> None:
    photo = Image("image/jpeg", "/9j/4AAQSkZJRgABAQ==")
    user: Item = {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": "What is this?"}, photo.part()],
    }
    rig.fake.script(text("A receipt."))

    assert (await rig.respond(user)).text == "A receipt."

    url = "data:image/jpeg;base64,/9j/4AAQSkZJRgABAQ=="
    [request] = rig.fake.requests
    if rig.api == "responses":
        assert request["input"][0]["content"] == [
            {"type": "input_text", "text": "What is this?"},
            {"type": "input_image", "image_url": url, "detail": "auto"},
        ]
    else:
        assert request["messages"][1]["content"] == [
            {"type": "text", "text": "What is this?"},
            {"type": "image_url", "image_url": {"url": url, "detail": "auto"}},
        ]
