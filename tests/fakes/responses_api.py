"""A fake OpenAI API that follows the real contract, scripted per test.

    POST /v1/responses          -> a Response        ("object": "response")
    POST /v1/chat/completions   -> a ChatCompletion  ("object": "chat.completion")

``fake.script(step, ...)`` queues replies, one per request whichever endpoint it
reaches, each shaped for that endpoint: ``text("...")``, ``calls(call(name, **args),
...)`` (ids generated; either with ``usage=``: ``(input, output)`` tokens, ``Tokens(...)``
with cached input and reasoning tokens in the details, or ``UNREPORTED``, an answer
without usage, as some local servers give; else estimated from the request), an ``Error``
(``rate_limited()``, ``quota_exceeded()``, ``invalid_api_key()``, ``bad_request()``,
``server_error()``, ``overloaded()``), ``HANG``
(no answer until ``release()`` or ``close()``), ``Slow(seconds, step)``, ``Gated(event,
step)`` (answered once the test sets ``event``), or a function of the request body that
returns one of these. An empty script answers 500 "the test script ran out", or
``fake.default`` when set (for end-to-end runs and benchmarks).

Like the real API it refuses (400) a function call without its output and an output
without its call, and (404) a reasoning item sent back without ``encrypted_content``
when ``store`` is false. With a reasoning effort, a Responses answer starts with a
reasoning item. Every request body is in ``requests``, its Authorization header in
``authorizations``; ``on_request`` (if set) is called at each, so that a test waiting on
another fake's events (``FakeTelegram.wait_for``) checks again. Serve it with
``async with fake.serve() as base_url``.
"""

from __future__ import annotations

import itertools
import json
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from fakes.serving import serving

Body = dict[str, Any]

# What an answer holds whatever the request, as the API reference shows it.
RESPONSE: Body = json.loads("""{
    "object": "response", "status": "completed", "background": false, "error": null,
    "incomplete_details": null, "max_output_tokens": null, "previous_response_id": null,
    "service_tier": "default", "temperature": 1.0, "top_p": 1.0, "truncation": "disabled",
    "text": {"format": {"type": "text"}, "verbosity": "medium"}, "tool_choice": "auto",
    "user": null, "metadata": {},
    "usage": {"input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
              "output_tokens_details": {"reasoning_tokens": 0}}
}""")
COMPLETION: Body = json.loads("""{
    "object": "chat.completion", "system_fingerprint": null, "service_tier": "default",
    "usage": {"prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
              "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                  "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}}
}""")
NOT_STORED = "Items are not persisted when `store` is set to false."


@dataclass(frozen=True)
class Call:
    name: str
    arguments: dict[str, Any] | str  # a str is sent as written (e.g. "" or broken JSON)


@dataclass(frozen=True)
class Tokens:
    """An answer's usage: ``cached`` is part of ``input``, ``reasoning`` part of ``output``
    (in the details objects, as both APIs report them)."""

    input: int
    output: int
    cached: int = 0
    reasoning: int = 0


class Unreported:
    """An answer that says nothing of its usage."""


UNREPORTED = Unreported()
Usage: TypeAlias = tuple[int, int] | Tokens | Unreported | None


@dataclass(frozen=True)
class Reply:
    text: str = ""  # with calls: an assistant message before them
    calls: tuple[Call, ...] = ()
    usage: Usage = None  # (input, output) tokens, Tokens, UNREPORTED; estimated when None
    ids: bool = True  # False: chat tool calls without "id", as some local servers send


@dataclass(frozen=True)
class Error:
    status: int
    message: str  # "{key}" is replaced by the caller's key, masked as the real API does
    code: str | None = None
    type: str = "invalid_request_error"
    param: str | None = None
    headers: dict[str, str] = field(default_factory=dict)


class Hang:
    """No answer until the fake is released or closed."""


HANG = Hang()


@dataclass(frozen=True)
class Slow:
    """``step``, answered after ``seconds`` (a model that takes its time)."""

    seconds: float
    step: Step


@dataclass(frozen=True)
class Gated:
    """``step``, answered once ``gate`` is set (a model still writing until the test says)."""

    gate: anyio.Event
    step: Step


Step: TypeAlias = Reply | Error | Hang | Slow | Gated | Callable[[Body], "Step"]


def text(value: str, *, usage: Usage = None) -> Reply:
    return Reply(value, usage=usage)


def call(name: str, /, **arguments: Any) -> Call:
    return Call(name, arguments)


def calls(*made: Call, preamble: str = "", ids: bool = True, usage: Usage = None) -> Reply:
    return Reply(preamble, made, usage, ids)


def rate_limited(retry_after_s: float | None = 1.0) -> Error:
    headers = {} if retry_after_s is None else {"retry-after": f"{retry_after_s:g}"}
    message = "Rate limit reached for requests per min (RPM): Limit 3, Used 3, Requested 1."
    return Error(429, message, "rate_limit_exceeded", "requests", headers=headers)


def quota_exceeded() -> Error:
    message = "You exceeded your current quota, please check your plan and billing details."
    return Error(429, message, "insufficient_quota", "insufficient_quota")


def invalid_api_key() -> Error:
    message = (
        "Incorrect API key provided: {key}. "
        "You can find your API key at https://platform.openai.com/account/api-keys."
    )
    return Error(401, message, "invalid_api_key")


def bad_request(message: str = "Invalid value for 'model'.", param: str | None = "model") -> Error:
    return Error(400, message, "invalid_value", param=param)


def server_error(status: int = 500) -> Error:
    message = "The server had an error while processing your request. Sorry about that!"
    return Error(status, message, None, "server_error")


def overloaded() -> Error:
    message = "The engine is currently overloaded, please try again later."
    return Error(503, message, None, "server_error")


class FakeOpenAI:
    def __init__(self) -> None:
        self.queue: deque[Step] = deque()
        self.default: Step | None = None
        self.requests: list[Body] = []
        self.authorizations: list[str | None] = []
        self.on_request: Callable[[], None] | None = None
        self._ids = itertools.count(1)
        self._released: anyio.Event | None = None
        self._closed = False
        self.app = Starlette(
            routes=[
                Route("/v1/responses", self._endpoint(self._response), methods=["POST"]),
                Route("/v1/chat/completions", self._endpoint(self._completion), methods=["POST"]),
            ]
        )

    def script(self, *steps: Step) -> FakeOpenAI:
        self.queue.extend(steps)
        return self

    @asynccontextmanager
    async def serve(self) -> AsyncIterator[str]:
        """Serve on loopback; yield the base URL for the client (``http://127.0.0.1:PORT/v1``)."""
        async with serving(self.app) as url:
            try:
                yield f"{url}/v1"
            finally:
                self.close()  # before uvicorn waits for the requests still hanging

    def reset(self) -> None:
        """Forget the script, the default and the requests; release what hangs."""
        self.queue.clear()
        self.default = None
        self.requests.clear()
        self.authorizations.clear()
        self.release()

    def release(self) -> None:
        """Let hanging requests answer (503). Call it from the loop that serves the app."""
        if self._released is not None:
            self._released.set()
            self._released = None

    def close(self) -> None:
        self._closed = True
        self.release()

    def _endpoint(self, answer: Callable[[Body, Reply], Body]) -> Callable[..., Any]:
        async def endpoint(request: Request) -> Response:
            body: Body = await request.json()
            self.requests.append(body)
            self.authorizations.append(request.headers.get("authorization"))
            if self.on_request is not None:
                self.on_request()
            step = self.queue.popleft() if self.queue else self.default
            if step is None:
                ran_out = f"request {len(self.requests)} to {request.url.path}"
                return _error(Error(500, f"fake OpenAI: the test script ran out ({ran_out})"))
            while callable(step) or isinstance(step, (Slow, Gated)):
                if isinstance(step, Slow):
                    await anyio.sleep(step.seconds)
                    step = step.step
                elif isinstance(step, Gated):
                    await step.gate.wait()
                    step = step.step
                else:
                    step = step(body)
            if isinstance(step, Hang):
                if not self._closed:
                    self._released = self._released or anyio.Event()
                    await self._released.wait()
                return _error(overloaded())
            if isinstance(step, Error):
                key = (request.headers.get("authorization") or "").removeprefix("Bearer ")
                return _error(step, key)
            refusal = _refusal(request.url.path, body)
            return _error(refusal) if refusal else JSONResponse(answer(body, step))

        return endpoint

    def _id(self, prefix: str) -> str:
        return f"{prefix}_{next(self._ids):08d}"

    def _response(self, body: Body, reply: Reply) -> Body:
        output: list[Body] = []
        effort = (body.get("reasoning") or {}).get("effort")
        if effort:
            reasoning: Body = {"id": self._id("rs"), "type": "reasoning", "summary": []}
            if "reasoning.encrypted_content" in (body.get("include") or []):
                reasoning["encrypted_content"] = f"gAAAA{self._id('enc')}"
            output.append(reasoning)
        if reply.text:
            said = {"type": "output_text", "text": reply.text, "annotations": [], "logprobs": []}
            message = {"type": "message", "role": "assistant", "content": [said]}
            output.append({"id": self._id("msg"), **message, "status": "completed"})
        for made in reply.calls:
            item = {"type": "function_call", "name": made.name, "arguments": _arguments(made)}
            ids = {"id": self._id("fc"), "call_id": self._id("call")}
            output.append({**ids, **item, "status": "completed"})
        now = int(time.time())
        return RESPONSE | {
            "id": self._id("resp"), "created_at": now, "completed_at": now,
            "model": body.get("model"), "instructions": body.get("instructions"),
            "output": output, "parallel_tool_calls": body.get("parallel_tool_calls", True),
            "reasoning": {"effort": effort, "summary": None}, "store": body.get("store", True),
            "tools": body.get("tools", []), "usage": _reported(body, reply, "input", "output"),
        }  # fmt: skip

    def _completion(self, body: Body, reply: Reply) -> Body:
        message: Body = {"role": "assistant", "content": reply.text or None, "refusal": None}
        if reply.calls:
            message["tool_calls"] = [
                ({"id": self._id("call")} if reply.ids else {})
                | {"type": "function", "function": {"name": c.name, "arguments": _arguments(c)}}
                for c in reply.calls
            ]
        finish = "tool_calls" if reply.calls else "stop"
        choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}
        completion = COMPLETION | {
            "id": self._id("chatcmpl").replace("_", "-"),
            "created": int(time.time()),
            "model": body.get("model"),
            "choices": [choice],
            "usage": _reported(body, reply, "prompt", "completion"),
        }
        if completion["usage"] is None:  # local servers leave the key out
            del completion["usage"]
        return completion


def _arguments(made: Call) -> str:
    return made.arguments if isinstance(made.arguments, str) else json.dumps(made.arguments)


def _reported(body: Body, reply: Reply, inputs: str, outputs: str) -> Body | None:
    """The usage object of an answer: Responses (``input``/``output``) or Chat Completions
    (``prompt``/``completion``) tokens with their details; None when it reports none."""
    if isinstance(reply.usage, Unreported):
        return None
    tokens = _usage(body, reply)
    template = RESPONSE["usage"] if inputs == "input" else COMPLETION["usage"]
    in_details, out_details = f"{inputs}_tokens_details", f"{outputs}_tokens_details"
    usage: Body = template | {
        f"{inputs}_tokens": tokens.input,
        f"{outputs}_tokens": tokens.output,
        "total_tokens": tokens.input + tokens.output,
        in_details: template[in_details] | {"cached_tokens": tokens.cached},
        out_details: template[out_details] | {"reasoning_tokens": tokens.reasoning},
    }
    return usage


def _usage(body: Body, reply: Reply) -> Tokens:
    if isinstance(reply.usage, Tokens):
        return reply.usage
    if isinstance(reply.usage, tuple):
        return Tokens(*reply.usage)
    written = reply.text + "".join(c.name + _arguments(c) for c in reply.calls)
    return Tokens(len(json.dumps(body)) // 4 + 1, len(written) // 4 + 1)  # ~4 characters a token


def _error(error: Error, key: str = "") -> Response:
    masked = f"{key[:3]}{'*' * 10}{key[-4:]}" if len(key) > 8 else "***"
    message = error.message.replace("{key}", masked)
    details = {"message": message, "type": error.type, "param": error.param, "code": error.code}
    return JSONResponse({"error": details}, status_code=error.status, headers=error.headers)


def _refusal(path: str, body: Body) -> Error | None:
    """What the real API refuses: a call without its output or an output without its call
    (400); reasoning sent back unreadable when nothing is stored (404)."""
    if path.endswith("/chat/completions"):
        messages = body.get("messages") or []
        called = [c["id"] for m in messages for c in m.get("tool_calls") or []]
        answered = [m.get("tool_call_id") for m in messages if m.get("role") == "tool"]
    else:
        items = body["input"] if isinstance(body.get("input"), list) else []
        for item in items:
            lost = item.get("type") == "reasoning" and not item.get("encrypted_content")
            if lost and body.get("store") is False:
                return Error(404, f"Item with id '{item.get('id')}' not found. {NOT_STORED}")
        called = [i["call_id"] for i in items if i.get("type") == "function_call"]
        answered = [i["call_id"] for i in items if i.get("type") == "function_call_output"]
    if missing := [c for c in called if c not in answered]:
        return Error(400, f"No tool output found for function call {missing[0]}.")
    if orphans := [a for a in answered if a not in called]:
        return Error(400, f"No tool call found for function call output with call_id {orphans[0]}.")
    return None
