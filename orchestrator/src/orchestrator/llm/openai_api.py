"""The LLM protocol over the OpenAI API; the only module that imports ``openai``.

``ResponsesLLM`` speaks the Responses API (OpenAI itself). ``ChatCompletionsLLM`` speaks
Chat Completions, for OpenAI-compatible servers without the Responses API (Ollama,
llama.cpp, vLLM). Both translate the stored input items (``base``) to their wire format
and back. The client's own retries are off: ``retry.RetryPolicy`` decides, from the
:class:`~orchestrator.llm.retry.CallFailed` that the library's errors become here.

A call given ``writing`` streams: the events are read as JSON (``sse``; the SDK's typed
events cost ~0.1 ms each, ~20 ms for a reply of 200 words, to be read back into items
here), the text deltas told as they come, and the reply read from what the stream ends
with (Responses: the ``response.completed`` event's whole response, the same JSON a call
without streaming answers; Chat Completions: the chunks put together, and the usage chunk
``stream_options.include_usage`` asks for). A stream that ends without its end is a call
that got no answer, tried again by the policy from the start.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, Literal, TypeVar, cast

import anyio
import httpx2
import openai
from openai import omit
from openai.types.audio import Transcription
from openai.types.audio.transcription import UsageDuration, UsageTokens
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageFunctionToolCall,
    ChatCompletionMessageParam,
)
from openai.types.responses import FunctionToolParam
from openai.types.shared import ReasoningEffort

from orchestrator.llm.base import (
    FunctionCall,
    Heard,
    Item,
    LLMReply,
    ToolSpec,
    Usage,
    Writing,
)
from orchestrator.llm.chat_items import arguments_text, call_item, chat_messages
from orchestrator.llm.retry import QUOTA_CODE, CallFailed, RetryPolicy
from orchestrator.llm.sse import events

T = TypeVar("T")

OPENAI_BASE_URL = "https://api.openai.com/v1"
NO_KEY = "not-needed"  # local servers want no key, the client wants one


def build_llm(
    api: Literal["responses", "chat"],
    *,
    api_key: str | None,
    base_url: str | None,
    model: str,
    reasoning_effort: str | None,
    timeout_s: float,
    retry: RetryPolicy | None = None,
) -> ResponsesLLM | ChatCompletionsLLM:
    """The model behind ``api`` at ``base_url`` (OpenAI when None)."""
    client = _client(api_key, base_url, timeout_s)
    if api == "chat":
        return ChatCompletionsLLM(
            client, model, reasoning_effort=reasoning_effort, retry=retry, timeout_s=timeout_s
        )
    return ResponsesLLM(client, model, reasoning_effort, retry=retry, timeout_s=timeout_s)


def build_transcriber(
    *,
    api_key: str | None,
    base_url: str | None,
    model: str,
    timeout_s: float,
    retry: RetryPolicy | None = None,
) -> OpenAITranscriber:
    """Speech to text at ``base_url``'s ``/audio/transcriptions`` (OpenAI when None)."""
    client = _client(api_key, base_url, timeout_s)
    return OpenAITranscriber(client, model, retry=retry, timeout_s=timeout_s)


def _client(api_key: str | None, base_url: str | None, timeout_s: float) -> openai.AsyncOpenAI:
    """The client of a server (OpenAI when ``base_url`` is None), its own retries off."""
    return openai.AsyncOpenAI(
        api_key=api_key or NO_KEY,
        # Explicit, or the client would read OPENAI_BASE_URL itself.
        base_url=base_url or OPENAI_BASE_URL,
        timeout=timeout_s,
        max_retries=0,
    )


async def _guarded(call: Callable[[], Awaitable[T]], deadline_s: float) -> T:
    """``call()``, with the library's errors turned into ``CallFailed`` for the policy.

    The client's timeout bounds each read, not the whole answer: a server that
    trickles bytes could hold a turn for minutes, so each attempt also has a deadline.
    """
    try:
        with anyio.fail_after(deadline_s):
            return await call()
    except (TimeoutError, openai.APITimeoutError, httpx2.TimeoutException) as error:
        raise CallFailed(None, timed_out=True) from error
    except (openai.APIConnectionError, httpx2.TransportError) as error:  # a stream cut too
        raise CallFailed(None) from error
    except ValueError as error:  # a streamed event that is not JSON
        raise CallFailed(None) from error
    except openai.APIStatusError as error:
        code = error.code
        if code is None and error.type == QUOTA_CODE:
            code = QUOTA_CODE
        raise CallFailed(error.status_code, code=code, headers=error.response.headers) from error
    except openai.APIError as error:  # an answer the client could not read
        raise CallFailed(None) from error


class _OpenAIModel:
    """What both APIs share: the client, the model, the retry policy and the deadline."""

    def __init__(
        self,
        client: openai.AsyncOpenAI,
        model: str,
        reasoning_effort: str | None = None,
        *,
        retry: RetryPolicy | None = None,
        timeout_s: float = 90.0,
    ) -> None:
        self._client = client
        self._model = model
        self._effort = reasoning_effort
        self._retry = retry or RetryPolicy()
        self._timeout_s = timeout_s

    @property
    def model(self) -> str:
        return self._model

    async def aclose(self) -> None:
        await self._client.close()

    async def _call(self, create: Callable[[], Awaitable[T]]) -> T:
        return await self._retry.run(
            lambda: _guarded(create, self._timeout_s), what=f"LLM {self._model}"
        )


class ResponsesLLM(_OpenAIModel):
    """The Responses API, stateless (``store=False``): every call sends the whole history."""

    async def respond(
        self,
        *,
        instructions: str,
        items: Sequence[Item],
        tools: Sequence[ToolSpec],
        writing: Writing | None = None,
    ) -> LLMReply:
        # The whole request goes as extra_body, sent as it is: it is plain JSON already, and
        # the SDK's typed transform of it costs ~8 ms a request (20 items) and ~0.4 ms for
        # the few scalar parameters alone.
        bulk: dict[str, Any] = {"input": list(items), "store": False}
        if instructions:
            bulk["instructions"] = instructions
        if tools:
            bulk["tools"] = [_function_tool(spec) for spec in tools]
            bulk["parallel_tool_calls"] = True
        if self._effort:
            bulk["reasoning"] = {"effort": self._effort}
            # Without storage, reasoning is carried back encrypted.
            bulk["include"] = ["reasoning.encrypted_content"]

        async def create() -> Any:
            # The raw answer, read as JSON: the SDK's typed model of a response (built field
            # by field in Python) costs ~1 ms a request, to be read back into items here.
            raw = await self._client.responses.with_raw_response.create(
                model=self._model, extra_body=bulk
            )
            try:
                return raw.http_response.json()
            except ValueError as error:
                raise CallFailed(None) from error

        async def stream() -> Any:
            assert writing is not None
            return await self._streamed(bulk, writing)

        return _responses_reply(await self._call(create if writing is None else stream))

    async def _streamed(self, bulk: dict[str, Any], writing: Writing) -> Any:
        """The response a streamed call ends with (its JSON), ``writing`` told the text as
        it comes: every message's, in the order they began, as the reply joins them."""
        said: dict[str, str] = {}  # message item id -> its text so far
        async with self._client.responses.with_streaming_response.create(
            model=self._model, stream=True, extra_body=bulk
        ) as answer:
            async for event in events(answer.iter_lines()):
                kind = event.get("type") if isinstance(event, dict) else None
                if kind in ("response.output_text.delta", "response.refusal.delta"):
                    item = str(event.get("item_id"))
                    said[item] = said.get(item, "") + str(event.get("delta") or "")
                    await writing("\n\n".join(text for text in said.values() if text))
                elif kind in ("response.completed", "response.incomplete"):
                    return event.get("response")  # an incomplete one as a non-streamed call
                elif kind in ("response.failed", "error"):
                    failed = (
                        (event.get("response") or {}).get("error") if kind != "error" else event
                    )
                    code = failed.get("code") if isinstance(failed, dict) else None
                    raise CallFailed(None, code=str(code) if code else None)
        raise CallFailed(None)  # the stream ended before the response did


def _function_tool(spec: ToolSpec) -> FunctionToolParam:
    return {
        "type": "function",
        "name": spec.name,
        "description": spec.description,
        "parameters": spec.parameters,
        "strict": spec.strict,
    }


def _responses_reply(response: Any) -> LLMReply:
    """The reply a Responses API answer (its JSON) holds; what is not understood is left out."""
    items: list[Item] = []
    calls: list[FunctionCall] = []
    texts: list[str] = []
    body = response if isinstance(response, dict) else {}
    for output in _dicts(body.get("output")):
        kind = output.get("type")
        if kind == "message":
            said = "".join(
                str(part.get("text") if part.get("type") == "output_text" else part.get("refusal"))
                for part in _dicts(output.get("content"))
            )
            message: Item = {"type": "message", "role": "assistant", "content": said}
            if output.get("phase") is not None:  # newer models want it back as it came
                message["phase"] = output["phase"]
            items.append(message)
            texts.append(said)
        elif kind == "function_call":
            call = FunctionCall(
                str(output.get("call_id")), str(output.get("name")), output.get("arguments") or "{}"
            )
            items.append(call_item(call))
            calls.append(call)
        elif kind == "reasoning" and output.get("encrypted_content"):
            # Unstored reasoning can only be sent back encrypted: without it, drop the item.
            items.append(
                {
                    "type": "reasoning",
                    "id": output.get("id"),
                    "summary": _dicts(output.get("summary")),
                    "encrypted_content": output["encrypted_content"],
                }
            )
    return LLMReply(
        items=items,
        calls=calls,
        text="\n\n".join(t for t in texts if t),
        usage=_reported(body.get("usage"), "input_tokens", "output_tokens"),
    )


def _reported(usage: Any, inputs: str, outputs: str) -> Usage:
    """The usage object of an answer (Responses: input/output_tokens with their _details;
    Chat Completions: prompt/completion_tokens with theirs); unknown when it has none or
    its counts are not numbers (never guessed)."""
    if not isinstance(usage, dict):
        return Usage.not_reported()
    n_in, n_out = _count(usage.get(inputs)), _count(usage.get(outputs))
    if n_in is None or n_out is None:
        return Usage.not_reported()
    in_details, out_details = usage.get(f"{inputs}_details"), usage.get(f"{outputs}_details")
    cached = _count(in_details.get("cached_tokens")) if isinstance(in_details, dict) else None
    reasoning = (
        _count(out_details.get("reasoning_tokens")) if isinstance(out_details, dict) else None
    )
    return Usage(n_in, n_out, min(cached or 0, n_in), min(reasoning or 0, n_out))


def _count(value: Any) -> int | None:
    """A token count: a non-negative integer (bool is not one)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def _object(value: Any) -> dict[str, Any]:
    """A JSON object (an empty one when it is not one)."""
    return value if isinstance(value, dict) else {}


def _dicts(value: Any) -> list[dict[str, Any]]:
    """The objects of a JSON list (none when it is not one)."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


class ChatCompletionsLLM(_OpenAIModel):
    """Chat Completions, for servers without the Responses API. Reasoning items are dropped."""

    async def respond(
        self,
        *,
        instructions: str,
        items: Sequence[Item],
        tools: Sequence[ToolSpec],
        writing: Writing | None = None,
    ) -> LLMReply:
        effort = cast(ReasoningEffort, self._effort)

        # As for Responses: the bulk skips the SDK's typed transform (see ResponsesLLM).
        bulk: dict[str, Any] = {
            "messages": cast(list[ChatCompletionMessageParam], chat_messages(instructions, items))
        }
        if tools:
            bulk["tools"] = [_chat_tool(spec) for spec in tools]

        async def create() -> ChatCompletion:
            return await self._client.chat.completions.create(
                model=self._model,
                messages=[],  # replaced by extra_body's
                extra_body=bulk,
                reasoning_effort=effort if effort else omit,
            )

        async def stream() -> LLMReply:
            assert writing is not None
            async with self._client.chat.completions.with_streaming_response.create(
                model=self._model,
                messages=[],
                extra_body=bulk | {"stream_options": {"include_usage": True}},
                reasoning_effort=effort if effort else omit,
                stream=True,
            ) as answer:
                return await _streamed_chat(answer.iter_lines(), writing)

        if writing is not None:
            return await self._call(stream)
        completion = await self._call(create)
        return _chat_reply(completion)


def _chat_tool(spec: ToolSpec) -> ChatCompletionFunctionToolParam:
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": spec.parameters,
            "strict": spec.strict,
        },
    }


def _chat_reply(completion: ChatCompletion) -> LLMReply:
    usage = completion.usage
    tokens = _chat_usage(usage.model_dump() if usage is not None else None)
    if not completion.choices:
        return LLMReply(items=[], calls=[], text="", usage=tokens)
    message = completion.choices[0].message
    made = [
        (tool_call.id, tool_call.function.name, tool_call.function.arguments)
        for tool_call in message.tool_calls or []
        if isinstance(tool_call, ChatCompletionMessageFunctionToolCall)
    ]
    return _chat_said(message.content or message.refusal or "", made, tokens)


async def _streamed_chat(lines: AsyncIterator[str], writing: Writing) -> LLMReply:
    """The reply streamed chunks make: text deltas joined (and told), each tool call's
    fragments joined by its index, the usage from the last chunk. A stream that ends
    without a finish reason got no whole answer."""
    said, finished, usage = "", False, None
    made: dict[int, list[Any]] = {}  # index -> [id, name, arguments so far]
    async for chunk in events(lines):
        if not isinstance(chunk, dict):
            continue
        if isinstance(chunk.get("error"), dict):  # a server's error in the stream
            raise CallFailed(None, code=str(chunk["error"].get("code") or "") or None)
        if isinstance(chunk.get("usage"), dict):
            usage = chunk["usage"]
        for choice in _dicts(chunk.get("choices"))[:1]:
            delta = _object(choice.get("delta"))
            finished = finished or choice.get("finish_reason") is not None
            if piece := delta.get("content") or delta.get("refusal"):
                said += str(piece)
                await writing(said)
            for part in _dicts(delta.get("tool_calls")):
                index = part.get("index")
                call = made.setdefault(
                    index if isinstance(index, int) else len(made), [None, "", ""]
                )
                call[0] = call[0] or part.get("id")
                function = _object(part.get("function"))
                call[1] += str(function.get("name") or "")
                call[2] += str(function.get("arguments") or "")
    if not finished:
        raise CallFailed(None)
    calls = [(c[0], c[1], c[2]) for _, c in sorted(made.items())]
    return _chat_said(said, calls, _chat_usage(usage))


def _chat_usage(usage: dict[str, Any] | None) -> Usage:
    return _reported(usage, "prompt_tokens", "completion_tokens")


def _chat_said(said: str, made: Sequence[tuple[str | None, str, object]], usage: Usage) -> LLMReply:
    """The reply of an assistant's text and tool calls (id, name, arguments)."""
    items: list[Item] = []
    if said:
        items.append({"type": "message", "role": "assistant", "content": said})
    calls: list[FunctionCall] = []
    for call_id, name, arguments in made:
        # Local servers may leave out ids, or send "" (or an object) as the arguments.
        call = FunctionCall(
            call_id=call_id or f"call_{secrets.token_hex(12)}",
            name=name,
            arguments=arguments_text(arguments),
        )
        items.append(call_item(call))
        calls.append(call)
    return LLMReply(items=items, calls=calls, text=said, usage=usage)


class OpenAITranscriber(_OpenAIModel):
    """OpenAI's ``/audio/transcriptions``, and any server with the same API (a local Whisper
    server). What it used: the tokens it reports (the gpt-4o transcribe models), and the
    audio's length (a duration it reports, else the sender's)."""

    async def transcribe(
        self, audio: bytes, *, file_name: str, mime_type: str, seconds: float
    ) -> Heard:
        async def create() -> Transcription:
            return await self._client.audio.transcriptions.create(
                model=self._model, file=(file_name, audio, mime_type), response_format="json"
            )

        heard = await self._call(create)
        used = heard.usage
        if isinstance(used, UsageTokens):
            usage = Usage(used.input_tokens, used.output_tokens, audio_s=seconds)
        elif isinstance(used, UsageDuration):
            usage = Usage(audio_s=used.seconds)
        else:  # a local server may say nothing of it
            usage = Usage(audio_s=seconds)
        return Heard(heard.text.strip(), usage)
