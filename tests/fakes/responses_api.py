"""A fake OpenAI API that follows the real contract, scripted per test.

    POST /v1/responses             -> a Response        ("object": "response")
    POST /v1/chat/completions      -> a ChatCompletion  ("object": "chat.completion")
    POST /v1/audio/transcriptions  -> a Transcription   ({"text": ..., "usage": ...})

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

A request with ``"stream": true`` gets the same reply streamed as that API streams it
(fakes.openai_streams: the events, the chunks), at once unless its step is ``Streamed(step,
every_s=, hold_after=, gate=)``: ``every_s`` between deltas (a model writing at its pace), and
after ``hold_after`` text deltas nothing more until the test sets ``gate`` (to act
mid-stream). ``Broken(step, after)`` breaks the stream off after ``after`` text deltas: the
Responses API sends its ``error`` event and ends, Chat Completions a ``data: {"error": ...}``
chunk (the SDK raises ``APIError``); ``cut=True`` closes the connection mid-body instead (the
SDK raises ``APIConnectionError``). Errors, refusals and ``HANG`` answer a stream request as
any other: before any stream, with their status. A request that does not stream gets
``Streamed``'s step as JSON, and ``Broken``'s as a 500 ``server_error()``. Whether a request
asked to stream is in its body (``fake.requests[i].get("stream")``).

Like the real API it refuses (400) a function call without its output and an output
without its call, and (404) a reasoning item sent back without ``encrypted_content``
when ``store`` is false. With a reasoning effort, a Responses answer starts with a
reasoning item. Every request body of the model's two endpoints is in ``requests``, its
Authorization header in ``authorizations`` (a transcription's in its ``Heard``);
``on_request`` (if set) is called at each request, so that a test waiting on another fake's
events (``FakeTelegram.wait_for``) checks again. Serve it with ``async with fake.serve() as
base_url``.

Transcriptions (multipart: ``file`` and ``model``; ``language``, ``prompt``, ``temperature``,
``response_format`` json, text or verbose_json) are scripted apart: ``fake.hear("what the
audio says")`` queues a transcript, or an ``Error``; an empty queue answers
``fake.default_transcript`` when set, else 500. Like the real API the fake refuses a request
without file or model (400), a file over 25 MiB (413), a name without one of the supported
extensions (400 "Invalid file format"), and bytes that are not the container the extension
says (400 "Audio file might be corrupted or unsupported"; fakes.audio reads them). The usage
is whisper-1's (``{"type": "duration", "seconds": N}``, whole seconds rounded up) or the
gpt-4o transcribe models' (tokens: 10 audio tokens a second in, 4 characters a token out),
from the duration of Ogg and WAV files, estimated from the size of others (4 kB a second).
Each request is in ``transcriptions`` (a ``Heard``).
"""

from __future__ import annotations

import itertools
import json
import math
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath
from typing import Any, TypeAlias

import anyio
from starlette.applications import Starlette
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from fakes.audio import NotAudio, Probe, probe
from fakes.openai_streams import Pace, chat_stream, responses_stream
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
# The file extensions the transcription endpoint takes, each with the container it must be.
AUDIO = {
    "flac": "flac", "m4a": "mp4", "mp3": "mp3", "mp4": "mp4", "mpeg": "mp3", "mpga": "mp3",
    "oga": "ogg", "ogg": "ogg", "wav": "wav", "webm": "webm",
}  # fmt: skip
MAX_AUDIO_BYTES = 26_214_400


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


@dataclass(frozen=True)
class Streamed:
    """``step``, streamed with ``every_s`` between deltas, and after ``hold_after`` text deltas
    nothing more until ``gate`` is set."""

    step: Step
    every_s: float = 0.0
    hold_after: int | None = None
    gate: anyio.Event | None = None

    def __post_init__(self) -> None:
        if (self.hold_after is None) != (self.gate is None):
            raise ValueError("hold_after and gate go together")


@dataclass(frozen=True)
class Broken:
    """``step``, whose stream breaks off after ``after`` text deltas (before its end, when it
    has fewer): with the API's error in the stream, or ``cut`` mid-body."""

    step: Step
    after: int
    cut: bool = False


Step: TypeAlias = Reply | Error | Hang | Slow | Gated | Streamed | Broken | Callable[[Body], "Step"]
Streamer: TypeAlias = Callable[[Body, Body, Pace], Response]


@dataclass(frozen=True)
class Heard:
    """A transcription request as the fake received it."""

    model: str | None
    filename: str | None
    content_type: str | None
    size: int  # bytes
    seconds: float | None  # None: not an Ogg or WAV file the fake could read
    language: str | None
    prompt: str | None
    response_format: str
    authorization: str | None


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
        self.transcripts: deque[str | Error] = deque()
        self.default_transcript: str | None = None
        self.transcriptions: list[Heard] = []
        self.on_request: Callable[[], None] | None = None
        self._ids = itertools.count(1)
        self._released: anyio.Event | None = None
        self._closed = False
        self.app = Starlette(
            routes=[
                Route(
                    "/v1/responses",
                    self._endpoint(self._response, responses_stream),
                    methods=["POST"],
                ),
                Route(
                    "/v1/chat/completions",
                    self._endpoint(self._completion, chat_stream),
                    methods=["POST"],
                ),
                Route("/v1/audio/transcriptions", self._transcription, methods=["POST"]),
            ]
        )

    def script(self, *steps: Step) -> FakeOpenAI:
        self.queue.extend(steps)
        return self

    def hear(self, *transcripts: str | Error) -> FakeOpenAI:
        """Queue what the next transcription requests answer, one each."""
        self.transcripts.extend(transcripts)
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
        """Forget the scripts, the defaults and the requests; release what hangs."""
        self.queue.clear()
        self.default = None
        self.requests.clear()
        self.authorizations.clear()
        self.transcripts.clear()
        self.default_transcript = None
        self.transcriptions.clear()
        self.release()

    def release(self) -> None:
        """Let hanging requests answer (503). Call it from the loop that serves the app."""
        if self._released is not None:
            self._released.set()
            self._released = None

    def close(self) -> None:
        self._closed = True
        self.release()

    def _endpoint(
        self, answer: Callable[[Body, Reply], Body], stream: Streamer
    ) -> Callable[..., Any]:
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
            pace = Pace()
            while not isinstance(step, (Reply, Error, Hang)):
                if isinstance(step, Slow):
                    await anyio.sleep(step.seconds)
                    step = step.step
                elif isinstance(step, Gated):
                    await step.gate.wait()
                    step = step.step
                elif isinstance(step, Streamed):
                    pace = replace(
                        pace, every_s=step.every_s, hold_after=step.hold_after, gate=step.gate
                    )
                    step = step.step
                elif isinstance(step, Broken):
                    pace = replace(pace, break_after=step.after, cut=step.cut)
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
            if refusal := _refusal(request.url.path, body):
                return _error(refusal)
            if body.get("stream"):
                return stream(answer(body, step), body, pace)
            if pace.break_after is not None:
                return _error(server_error())
            return JSONResponse(answer(body, step))

        return endpoint

    async def _transcription(self, request: Request) -> Response:
        async with request.form() as form:
            upload = form.get("file")
            fields = {k: v for k, v in form.multi_items() if isinstance(v, str)}
            data = await upload.read() if isinstance(upload, UploadFile) else b""
        file = upload if isinstance(upload, UploadFile) else None
        try:
            probed: Probe | None = probe(data)
        except NotAudio:
            probed = None
        heard = Heard(
            model=fields.get("model"),
            filename=file.filename if file else None,
            content_type=file.content_type if file else None,
            size=len(data),
            seconds=probed.seconds if probed else None,
            language=fields.get("language"),
            prompt=fields.get("prompt"),
            response_format=fields.get("response_format", "json"),
            authorization=request.headers.get("authorization"),
        )
        self.transcriptions.append(heard)
        if self.on_request is not None:
            self.on_request()
        if refusal := _unheard(heard, probed):
            return _error(refusal)
        said = self.transcripts.popleft() if self.transcripts else self.default_transcript
        if said is None:
            ran_out = f"transcription {len(self.transcriptions)}"
            return _error(Error(500, f"fake OpenAI: the test script ran out ({ran_out})"))
        if isinstance(said, Error):
            return _error(said, (heard.authorization or "").removeprefix("Bearer "))
        return _transcript(said, heard)

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


def _unheard(heard: Heard, probed: Probe | None) -> Error | None:
    """What the real API refuses of a transcription request, in the order it checks."""
    if heard.size > MAX_AUDIO_BYTES:
        exceeded = f"({MAX_AUDIO_BYTES}) exceeded ({heard.size} bytes read)"
        return Error(413, f"Maximum content size limit {exceeded}", type="server_error")
    if heard.filename is None:
        missing = "Missing required parameter: 'file'."
        return Error(400, missing, "missing_required_parameter", param="file")
    if not heard.model:
        return Error(400, "you must provide a model parameter")
    extension = PurePosixPath(heard.filename).suffix.removeprefix(".").lower()
    if extension not in AUDIO:
        return Error(400, f"Invalid file format. Supported formats: {sorted(AUDIO)}")
    if probed is None or probed.container != AUDIO[extension]:
        corrupted = "Audio file might be corrupted or unsupported"
        return Error(400, corrupted, "invalid_value", param="file")
    if heard.response_format not in ("json", "text", "verbose_json"):
        unsupported = f"The fake answers json, text or verbose_json, not {heard.response_format!r}."
        return Error(400, unsupported, "invalid_value", param="response_format")
    return None


def _transcript(text: str, heard: Heard) -> Response:
    """The answer to ``heard``: its usage from the duration (or, unread, from the size)."""
    seconds = heard.seconds if heard.seconds is not None else heard.size / 4_000
    usage: Body = {"type": "duration", "seconds": math.ceil(seconds)}
    if "transcribe" in (heard.model or ""):  # gpt-4o-transcribe, gpt-4o-mini-transcribe
        audio, written = max(1, round(seconds * 10)), len(text) // 4 + 1
        details = {"text_tokens": 0, "audio_tokens": audio}
        usage = {"type": "tokens", "input_tokens": audio, "output_tokens": written}
        usage |= {"total_tokens": audio + written, "input_token_details": details}
    if heard.response_format == "text":
        return PlainTextResponse(text)
    if heard.response_format == "verbose_json":
        task = {"task": "transcribe", "language": heard.language or "english"}
        return JSONResponse(task | {"duration": seconds, "text": text, "usage": usage})
    return JSONResponse({"text": text, "usage": usage})


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
