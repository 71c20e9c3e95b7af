"""An answer of the fake OpenAI API (fakes.responses_api) streamed as each API streams it
when the request says ``"stream": true``, built from the JSON it answers otherwise:

    Responses         ``event: <type>`` / ``data: <json>`` server-sent events, each with its
                      ``type`` and a ``sequence_number`` counted from 0:
                        response.created, response.in_progress (status "in_progress", no output)
                        per output item, at its ``output_index``:
                          reasoning       output_item.added, output_item.done
                          message         output_item.added (no content yet), content_part.added
                                          (text ""), output_text.delta..., output_text.done,
                                          content_part.done, output_item.done
                          function_call   output_item.added (arguments ""),
                                          function_call_arguments.delta..., .done, output_item.done
                        response.completed: the whole answer, the same ids as the items before
    Chat Completions  ``data: <chat.completion.chunk>`` lines with the answer's id, created and
                      model: the role (content ""), the text, each tool call (its index, id and
                      name, arguments "") then fragments of its arguments, the finish reason with
                      an empty delta; with ``stream_options.include_usage`` the usage in a chunk
                      without choices (every chunk before says ``"usage": null``); ``data: [DONE]``.

Text goes out a word at a time (each with the whitespace before it: the deltas join to the
text), arguments in three fragments or fewer. A ``Pace`` spaces the deltas (``every_s``), holds
the stream after ``hold_after`` text deltas until its gate is set, or breaks it off after
``break_after`` text deltas (or before the end, when there are fewer): Responses send the
``error`` event of the API reference (``code``, ``message``, ``param`` at the top level) and end,
without ``response.completed``; Chat Completions send ``data: {"error": {...}}`` and end, without
``[DONE]``. With ``cut`` the connection is closed mid-body instead, as a dropped connection ends.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Literal

import anyio
from starlette.responses import StreamingResponse
from starlette.types import Send

Body = dict[str, Any]
FAILED = "The server had an error while processing your request. Sorry about that!"


@dataclass(frozen=True)
class Pace:
    """How a stream goes out: at once by default (see the module's docstring)."""

    every_s: float = 0.0
    hold_after: int | None = None
    gate: anyio.Event | None = None
    break_after: int | None = None
    cut: bool = False


@dataclass(frozen=True)
class Event:
    """One event of a stream: a ``text`` delta counts for ``hold_after`` and ``break_after``,
    every delta is spaced by ``every_s``, a broken stream breaks at its ``end`` at the latest."""

    data: Body
    kind: Literal["text", "delta", "end", ""] = ""


class _Cut(Exception):
    """The stream breaks off here, without ending its body."""


class EventStream(StreamingResponse):
    """``text/event-stream`` of ``events`` at their ``pace``: ``failure(n)`` is what a broken
    stream sends after its ``n`` events, ``trailer`` what a whole one ends with."""

    def __init__(
        self,
        events: list[Event],
        pace: Pace,
        encode: Callable[[Body], str],
        failure: Callable[[int], str],
        trailer: str = "",
    ) -> None:
        self._chunks = _paced(events, pace, encode, failure, trailer)
        super().__init__(self._chunks, media_type="text/event-stream")

    async def stream_response(self, send: Send) -> None:
        start = {
            "type": "http.response.start",
            "status": self.status_code,
            "headers": self.raw_headers,
        }
        await send(start)
        try:
            async for chunk in self._chunks:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        except _Cut:
            return  # uvicorn logs "returned without completing response" and closes
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def responses_stream(response: Body, request: Body, pace: Pace) -> EventStream:
    started = response | {
        "status": "in_progress",
        "output": [],
        "usage": None,
        "completed_at": None,
    }
    events = [
        Event({"type": "response.created", "response": started}),
        Event({"type": "response.in_progress", "response": started}),
    ]
    for index, item in enumerate(response["output"]):
        events += _item_events(index, item)
    events.append(Event({"type": "response.completed", "response": response}, "end"))
    numbered = [Event(e.data | {"sequence_number": n}, e.kind) for n, e in enumerate(events)]

    def failure(sent: int) -> str:
        error = {"type": "error", "code": "server_error", "message": FAILED, "param": None}
        return _event(error | {"sequence_number": sent})

    return EventStream(numbered, pace, _event, failure)


def chat_stream(completion: Body, request: Body, pace: Pace) -> EventStream:
    usage = (request.get("stream_options") or {}).get("include_usage") and "usage" in completion
    fields = ("id", "created", "model", "system_fingerprint", "service_tier")
    head = {k: completion[k] for k in fields} | {"object": "chat.completion.chunk"}
    head |= {"usage": None} if usage else {}

    def chunk(delta: Body, finish: str | None = None) -> Body:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return head | {"choices": [choice]}

    choice = completion["choices"][0]
    message = choice["message"]
    events = [Event(chunk({"role": "assistant", "content": ""}))]
    events += [Event(chunk({"content": w}), "text") for w in words(message["content"] or "")]
    for index, made in enumerate(message.get("tool_calls", [])):
        named = {"name": made["function"]["name"], "arguments": ""}
        opened = {"index": index} | ({"id": made["id"]} if "id" in made else {})
        opened |= {"type": "function", "function": named}
        events.append(Event(chunk({"tool_calls": [opened]})))
        events += [
            Event(chunk({"tool_calls": [{"index": index, "function": {"arguments": f}}]}), "delta")
            for f in fragments(made["function"]["arguments"])
        ]
    events.append(Event(chunk({}, choice["finish_reason"]), "end"))
    if usage:
        events.append(Event(head | {"choices": [], "usage": completion["usage"]}))

    def failure(sent: int) -> str:
        error = {"message": FAILED, "type": "server_error", "param": None, "code": None}
        return _data({"error": error})

    return EventStream(events, pace, _data, failure, trailer="data: [DONE]\n\n")


def words(text: str) -> list[str]:
    """``text`` a word at a time, each with the whitespace before it (as tokens come)."""
    return re.findall(r"\s*\S+|\s+", text)


def fragments(arguments: str, parts: int = 3) -> list[str]:
    size = max(1, -(-len(arguments) // parts))
    return [arguments[i : i + size] for i in range(0, len(arguments), size)]


def _item_events(index: int, item: Body) -> list[Event]:
    at = {"item_id": item.get("id"), "output_index": index}
    if item["type"] == "message":
        events = [_added(index, item | {"status": "in_progress", "content": []})]
        for number, part in enumerate(item["content"]):
            on = at | {"content_index": number}
            empty = part | {"text": ""}
            events.append(Event({"type": "response.content_part.added", **on, "part": empty}))
            events += [
                Event(
                    {"type": "response.output_text.delta", **on, "delta": w, "logprobs": []}, "text"
                )
                for w in words(part["text"])
            ]
            done = {"text": part["text"], "logprobs": []}
            events.append(Event({"type": "response.output_text.done", **on, **done}))
            events.append(Event({"type": "response.content_part.done", **on, "part": part}))
    elif item["type"] == "function_call":
        events = [_added(index, item | {"arguments": "", "status": "in_progress"})]
        events += [
            Event({"type": "response.function_call_arguments.delta", **at, "delta": f}, "delta")
            for f in fragments(item["arguments"])
        ]
        done = {"arguments": item["arguments"]}
        events.append(Event({"type": "response.function_call_arguments.done", **at, **done}))
    else:
        events = [_added(index, item)]
    events.append(Event({"type": "response.output_item.done", "output_index": index, "item": item}))
    return events


def _added(index: int, item: Body) -> Event:
    return Event({"type": "response.output_item.added", "output_index": index, "item": item})


def _event(data: Body) -> str:
    return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n"


def _data(data: Body) -> str:
    return f"data: {json.dumps(data)}\n\n"


async def _paced(
    events: list[Event],
    pace: Pace,
    encode: Callable[[Body], str],
    failure: Callable[[int], str],
    trailer: str,
) -> AsyncIterator[bytes]:
    said, deltas = 0, 0
    for sent, event in enumerate(events):
        due = event.kind == "end" or (event.kind == "text" and said == pace.break_after)
        if pace.break_after is not None and due:
            if pace.cut:
                raise _Cut
            yield failure(sent).encode()
            return
        if event.kind in ("text", "delta"):
            if deltas and pace.every_s:
                await anyio.sleep(pace.every_s)
            deltas += 1
        yield encode(event.data).encode()
        if event.kind == "text":
            said += 1
            if said == pace.hold_after and pace.gate is not None:
                await pace.gate.wait()
    if trailer:
        yield trailer.encode()
