"""Server-sent events as a model streams them: the JSON of each event's data.

    event: response.output_text.delta        (a name: the data says its type too)
    data: {"type": "response.output_text.delta", "delta": "It", ...}
    <blank line>                             (the event ends)
    data: [DONE]                             (Chat Completions: the stream ends)

Read as the SSE specification reads a stream: ``data:`` lines joined by newlines, one
space after the colon dropped, comments (``:``) and other fields ignored, an event
dispatched at a blank line. Pure data: no ``openai`` import.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

DONE = "[DONE]"


async def events(lines: AsyncIterator[str]) -> AsyncIterator[Any]:
    """The JSON of each event's data, until ``[DONE]`` or the stream's end; a ``ValueError``
    for data that is not JSON."""
    data: list[str] = []
    async for line in lines:
        if line.startswith("data:"):
            value = line[5:]
            data.append(value[1:] if value.startswith(" ") else value)
        elif not line and data:
            joined, data = "\n".join(data), []
            if joined == DONE:
                return
            yield json.loads(joined)
    if data and (joined := "\n".join(data)) != DONE:  # the last event, without its blank line
        yield json.loads(joined)
