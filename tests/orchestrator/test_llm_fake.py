"""The fake OpenAI API keeps the real contract: its answers validate as the SDK's own
models (the client itself only constructs them, without validation), and it refuses
what the real API refuses. This is the one test that imports ``openai``: for its types."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import httpx2
import pytest
from openai.types.chat import ChatCompletion
from openai.types.responses import Response

from fakes.responses_api import HANG, Body, FakeOpenAI, Step, call, calls, rate_limited, text

pytestmark = pytest.mark.anyio

USER = {"type": "message", "role": "user", "content": "hi"}
TOOL = {
    "type": "function",
    "name": "w__f",
    "description": "d",
    "strict": True,
    "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
}


async def post(fake: FakeOpenAI, path: str, body: dict[str, Any]) -> httpx2.Response:
    transport = httpx2.ASGITransport(app=fake.app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://fake") as client:
        return await client.post(
            f"/v1/{path}", json=body, headers={"Authorization": "Bearer sk-fake-key-12345678"}
        )


async def test_responses_answers_validate_as_the_sdk_response(fake: FakeOpenAI) -> None:
    fake.script(text("hello"), calls(call("w__f", x=1), call("w__f"), preamble="Checking."))
    body = {
        "model": "gpt-test",
        "input": [USER],
        "tools": [TOOL],
        "store": False,
        "reasoning": {"effort": "low"},
        "include": ["reasoning.encrypted_content"],
    }
    said = Response.model_validate((await post(fake, "responses", body)).json())
    assert said.output_text == "hello"
    assert said.status == "completed"
    called = Response.model_validate((await post(fake, "responses", body)).json())
    assert [o.type for o in called.output] == [
        "reasoning",
        "message",
        "function_call",
        "function_call",
    ]
    assert called.usage is not None
    assert called.usage.total_tokens == called.usage.input_tokens + called.usage.output_tokens


async def test_chat_answers_validate_as_the_sdk_completion(fake: FakeOpenAI) -> None:
    fake.script(text("hello"), calls(call("w__f", x=1)))
    body = {"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}]}
    said = ChatCompletion.model_validate((await post(fake, "chat/completions", body)).json())
    assert said.choices[0].message.content == "hello"
    assert said.choices[0].finish_reason == "stop"
    called = ChatCompletion.model_validate((await post(fake, "chat/completions", body)).json())
    assert called.choices[0].finish_reason == "tool_calls"
    assert called.choices[0].message.tool_calls is not None
    assert fake.authorizations == ["Bearer sk-fake-key-12345678"] * 2


@pytest.mark.parametrize(
    ("items", "status", "says"),
    [
        (
            [USER, {"type": "function_call", "call_id": "c1", "name": "w__f", "arguments": "{}"}],
            400,
            "No tool output found for function call c1",
        ),
        (
            [USER, {"type": "function_call_output", "call_id": "c9", "output": "x"}],
            400,
            "No tool call found for function call output with call_id c9",
        ),
        (
            [USER, {"type": "reasoning", "id": "rs_1", "summary": []}],
            404,
            "Items are not persisted when `store` is set to false",
        ),
    ],
)
async def test_responses_refuses_broken_histories(
    fake: FakeOpenAI, items: list[dict[str, Any]], status: int, says: str
) -> None:
    fake.default = text("never")
    answer = await post(fake, "responses", {"model": "m", "input": items, "store": False})
    assert answer.status_code == status
    assert says in answer.json()["error"]["message"]


@pytest.mark.parametrize(
    ("messages", "says"),
    [
        (
            [
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "f", "arguments": "{}"},
                        }
                    ],
                },
                {"role": "user", "content": "hi"},
            ],
            "No tool output found for function call c1",
        ),
        (
            [
                {"role": "user", "content": "hi"},
                {"role": "tool", "tool_call_id": "c1", "content": "x"},
            ],
            "No tool call found for function call output with call_id c1",
        ),
    ],
)
async def test_chat_refuses_broken_histories(
    fake: FakeOpenAI, messages: list[dict[str, Any]], says: str
) -> None:
    fake.default = text("never")
    answer = await post(fake, "chat/completions", {"model": "m", "messages": messages})
    assert answer.status_code == 400
    assert says in answer.json()["error"]["message"]


async def test_errors_have_the_real_shape_and_headers(fake: FakeOpenAI) -> None:
    fake.script(rate_limited(retry_after_s=7))
    answer = await post(fake, "responses", {"model": "m", "input": [USER]})
    assert answer.status_code == 429
    assert answer.headers["retry-after"] == "7"
    assert answer.json()["error"]["code"] == "rate_limit_exceeded"
    assert set(answer.json()["error"]) == {"message", "type", "param", "code"}


async def test_an_empty_script_fails_loudly(fake: FakeOpenAI) -> None:
    answer = await post(fake, "chat/completions", {"model": "m", "messages": []})
    assert answer.status_code == 500
    assert "the test script ran out" in answer.json()["error"]["message"]


async def test_a_hanging_request_answers_once_released(fake: FakeOpenAI) -> None:
    arrived = anyio.Event()

    def hang(body: Body) -> Step:
        arrived.set()
        return HANG

    fake.script(hang)
    answers: list[httpx2.Response] = []

    async def ask() -> None:
        answers.append(await post(fake, "responses", {"model": "m", "input": [USER]}))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(ask)
            await arrived.wait()
            await anyio.lowlevel.checkpoint()  # the request now waits in the fake
            assert answers == []
            fake.release()
    assert answers[0].status_code == 503


async def test_a_closed_fake_hangs_no_more(fake: FakeOpenAI) -> None:
    fake.close()
    fake.script(HANG)
    with anyio.fail_after(5):
        answer = await post(fake, "responses", {"model": "m", "input": [USER]})
    assert answer.status_code == 503
