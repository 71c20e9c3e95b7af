"""The fake OpenAI API streams as both APIs stream and transcribes as the audio endpoint does,
seen through the real ``openai`` client (which builds its models without validating them:
the events are validated here against the SDK's own types)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterable
from typing import Any, TypeVar

import anyio
import openai
import pytest
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletionChunk
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseErrorEvent,
    ResponseFunctionCallArgumentsDeltaEvent,
    ResponseFunctionCallArgumentsDoneEvent,
    ResponseOutputItemAddedEvent,
    ResponseStreamEvent,
    ResponseTextDeltaEvent,
)
from pydantic import TypeAdapter

from fakes.responses_api import (
    HANG,
    Body,
    Broken,
    FakeOpenAI,
    Step,
    Streamed,
    call,
    calls,
    rate_limited,
    text,
)

pytestmark = pytest.mark.anyio
T = TypeVar("T")

SAID = "Hello there, wide world!"
STREAM_EVENT: TypeAdapter[ResponseStreamEvent] = TypeAdapter(ResponseStreamEvent)
MESSAGE_EVENTS = [
    "response.output_item.added",
    "response.content_part.added",
    *["response.output_text.delta"] * 4,
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
]


async def collect(stream: AsyncIterable[T], into: list[T]) -> None:
    with anyio.fail_after(5):
        async for item in stream:
            into.append(item)


async def streamed(openai_client: AsyncOpenAI, **request: Any) -> list[ResponseStreamEvent]:
    events: list[ResponseStreamEvent] = []
    stream = await openai_client.responses.create(
        model="gpt-test", input="hi", stream=True, **request
    )
    await collect(stream, events)
    return events


async def chunks(openai_client: AsyncOpenAI, **request: Any) -> list[ChatCompletionChunk]:
    got: list[ChatCompletionChunk] = []
    stream = await openai_client.chat.completions.create(
        model="gpt-test", messages=[{"role": "user", "content": "hi"}], stream=True, **request
    )
    await collect(stream, got)
    return got


def without_ids(response: Response) -> dict[str, Any]:
    dumped = response.model_dump(exclude={"id", "created_at", "completed_at"})
    for item in dumped["output"]:
        item.pop("id", None)
        item.pop("call_id", None)
    return dumped


async def test_a_streamed_response_sends_its_events_in_order_and_completes_as_the_json(
    fake: FakeOpenAI, openai_client: AsyncOpenAI
) -> None:
    fake.script(text(SAID, usage=(12, 5)), text(SAID, usage=(12, 5)))
    events = await streamed(openai_client)
    assert [e.type for e in events] == [
        "response.created",
        "response.in_progress",
        *MESSAGE_EVENTS,
        "response.completed",
    ]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    for event in events:
        STREAM_EVENT.validate_python(event.to_dict())
    assert "".join(e.delta for e in events if isinstance(e, ResponseTextDeltaEvent)) == SAID
    completed = events[-1]
    assert isinstance(completed, ResponseCompletedEvent)
    message = completed.response.output[0]
    assert {e.item_id for e in events if isinstance(e, ResponseTextDeltaEvent)} == {message.id}
    assert fake.requests[0]["stream"] is True
    answered = await openai_client.responses.create(model="gpt-test", input="hi")
    assert "stream" not in fake.requests[1]
    assert without_ids(completed.response) == without_ids(answered)


async def test_streamed_calls_send_their_arguments_in_fragments(
    fake: FakeOpenAI, openai_client: AsyncOpenAI
) -> None:
    fake.script(calls(call("w__f", city="Paris"), call("w__g"), preamble="Checking."))
    events = await streamed(openai_client, reasoning={"effort": "low"})
    for event in events:
        STREAM_EVENT.validate_python(event.to_dict())
    added = [e.item for e in events if isinstance(e, ResponseOutputItemAddedEvent)]
    assert [i.type for i in added] == ["reasoning", "message", "function_call", "function_call"]
    assert [getattr(i, "arguments", None) for i in added[2:]] == ["", ""]
    done = [e for e in events if isinstance(e, ResponseFunctionCallArgumentsDoneEvent)]
    assert [json.loads(d.arguments) for d in done] == [{"city": "Paris"}, {}]
    fragments = [e.delta for e in events if isinstance(e, ResponseFunctionCallArgumentsDeltaEvent)]
    assert len(fragments) > 2
    assert "".join(fragments) == done[0].arguments + done[1].arguments
    completed = events[-1]
    assert isinstance(completed, ResponseCompletedEvent)
    assert [i.id for i in completed.response.output] == [i.id for i in added]


async def test_a_held_stream_sends_nothing_past_its_hold_until_the_gate_opens(
    fake: FakeOpenAI, openai_client: AsyncOpenAI
) -> None:
    gate = anyio.Event()
    fake.script(Streamed(text(SAID), hold_after=2, gate=gate))
    deltas: list[str] = []
    two = anyio.Event()

    async def read() -> None:
        async for event in await openai_client.responses.create(model="m", input="hi", stream=True):
            if isinstance(event, ResponseTextDeltaEvent):
                deltas.append(event.delta)
                if len(deltas) == 2:
                    two.set()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(read)
            await two.wait()
            await anyio.wait_all_tasks_blocked()  # the fake waits on the gate, the client on it
            assert deltas == ["Hello", " there,"]
            gate.set()
    assert "".join(deltas) == SAID


async def test_a_paced_stream_spaces_its_deltas(
    fake: FakeOpenAI, openai_client: AsyncOpenAI
) -> None:
    fake.script(Streamed(text(SAID), every_s=0.02))
    started = anyio.current_time()
    events = await streamed(openai_client)
    assert anyio.current_time() - started >= 3 * 0.02  # four words, three gaps
    assert "".join(e.delta for e in events if isinstance(e, ResponseTextDeltaEvent)) == SAID


async def test_a_streamed_step_answers_json_to_a_request_that_does_not_stream(
    fake: FakeOpenAI, openai_client: AsyncOpenAI
) -> None:
    fake.script(Streamed(text(SAID), every_s=5))
    with anyio.fail_after(2):
        answered = await openai_client.responses.create(model="gpt-test", input="hi")
    assert answered.output_text == SAID


async def test_a_streamed_chat_sends_text_finish_and_usage_last(
    fake: FakeOpenAI, openai_client: AsyncOpenAI
) -> None:
    fake.script(text(SAID, usage=(9, 4)))
    got = await chunks(openai_client, stream_options={"include_usage": True})
    for chunk in got:
        ChatCompletionChunk.model_validate(chunk.to_dict())
    assert {(c.id, c.created, c.model, c.object) for c in got} == {
        (got[0].id, got[0].created, "gpt-test", "chat.completion.chunk")
    }
    assert got[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in got if c.choices) == SAID
    assert [c.choices[0].finish_reason for c in got[:-1]] == [None] * 5 + ["stop"]
    assert got[-1].choices == []
    assert got[-1].usage is not None
    assert (got[-1].usage.prompt_tokens, got[-1].usage.completion_tokens) == (9, 4)
    assert [c.usage for c in got[:-1]] == [None] * 6


async def test_streamed_chat_tool_calls_accumulate_by_index(
    fake: FakeOpenAI, openai_client: AsyncOpenAI
) -> None:
    made = (call("w__f", city="Paris"), call("w__g", n=1))
    fake.script(calls(*made), calls(*made, ids=False))
    for ids in (True, False):
        got = await chunks(openai_client)
        assembled: dict[int, dict[str, str]] = {}
        for chunk in got:
            ChatCompletionChunk.model_validate(chunk.to_dict())
            for delta in chunk.choices[0].delta.tool_calls or []:
                into = assembled.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
                into["id"] += delta.id or ""
                into["name"] += (delta.function and delta.function.name) or ""
                into["arguments"] += (delta.function and delta.function.arguments) or ""
        assert [(c["name"], json.loads(c["arguments"])) for c in assembled.values()] == [
            ("w__f", {"city": "Paris"}),
            ("w__g", {"n": 1}),
        ]
        assert all(c["id"].startswith("call_") == ids for c in assembled.values())
        assert got[-1].choices[0].finish_reason == "tool_calls"
        assert all(c.choices and c.usage is None for c in got)  # no usage chunk unasked


async def test_errors_and_refusals_answer_a_stream_request_before_any_stream(
    fake: FakeOpenAI, openai_client: AsyncOpenAI
) -> None:
    fake.script(rate_limited(), text("never"))
    with pytest.raises(openai.RateLimitError):
        await openai_client.responses.create(model="m", input="hi", stream=True)
    with pytest.raises(openai.BadRequestError, match="No tool call found"):
        await openai_client.chat.completions.create(
            model="m",
            messages=[
                {"role": "user", "content": "hi"},
                {"role": "tool", "tool_call_id": "c1", "content": "x"},
            ],
            stream=True,
        )


async def test_a_hanging_stream_request_answers_once_released(
    fake: FakeOpenAI, openai_client: AsyncOpenAI
) -> None:
    arrived = anyio.Event()

    def hang(body: Body) -> Step:
        arrived.set()
        return HANG

    fake.script(hang)
    raised: list[openai.InternalServerError] = []

    async def ask() -> None:
        try:
            await openai_client.responses.create(model="m", input="hi", stream=True)
        except openai.InternalServerError as error:
            raised.append(error)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(ask)
            await arrived.wait()
            fake.release()
    assert [e.status_code for e in raised] == [503]


async def test_a_broken_response_stream_ends_with_the_error_event(
    fake: FakeOpenAI, openai_client: AsyncOpenAI
) -> None:
    fake.script(Broken(text(SAID), after=2))
    events = await streamed(openai_client)
    assert [e.delta for e in events if isinstance(e, ResponseTextDeltaEvent)] == [
        "Hello",
        " there,",
    ]
    error = events[-1]
    assert isinstance(error, ResponseErrorEvent)
    STREAM_EVENT.validate_python(error.to_dict())
    assert (error.code, error.sequence_number) == ("server_error", len(events) - 1)
    assert not any(isinstance(e, ResponseCompletedEvent) for e in events)


async def test_a_broken_chat_stream_raises_the_error_it_sends(
    fake: FakeOpenAI, openai_client: AsyncOpenAI
) -> None:
    fake.script(Broken(text(SAID), after=1))
    got: list[ChatCompletionChunk] = []
    stream = await openai_client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    with pytest.raises(openai.APIError, match="The server had an error"):
        await collect(stream, got)
    assert "".join(c.choices[0].delta.content or "" for c in got) == "Hello"


async def test_a_cut_stream_raises_a_connection_error_in_the_client(
    fake: FakeOpenAI, openai_client: AsyncOpenAI
) -> None:
    fake.script(Broken(text(SAID), after=3, cut=True), Broken(text(SAID), after=0))
    events: list[ResponseStreamEvent] = []
    stream = await openai_client.responses.create(model="m", input="hi", stream=True)
    with pytest.raises(openai.APIConnectionError):
        await collect(stream, events)
    said = "".join(e.delta for e in events if isinstance(e, ResponseTextDeltaEvent))
    assert said == "Hello there, wide"
    with pytest.raises(openai.InternalServerError):  # a request that does not stream
        await openai_client.responses.create(model="m", input="hi")
