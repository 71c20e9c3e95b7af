"""Server-sent events read as the specification reads them (``orchestrator.llm.sse``)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from orchestrator.llm.sse import events

pytestmark = pytest.mark.anyio


async def read(*lines: str) -> list[object]:
    async def stream() -> AsyncIterator[str]:
        for line in lines:
            yield line

    return [event async for event in events(stream())]


async def test_each_events_data_is_read_as_json_until_done() -> None:
    got = await read(
        ": a comment, ignored",
        "event: response.output_text.delta",
        'data: {"type": "response.output_text.delta", "delta": "It"}',
        "",
        "",  # a blank line with no event before it dispatches nothing
        'data:{"n": 2}',  # no space after the colon
        "id: 7",
        "",
        "data: [DONE]",
        "",
        'data: {"after": "done"}',
        "",
    )
    assert got == [{"type": "response.output_text.delta", "delta": "It"}, {"n": 2}]


async def test_data_over_several_lines_is_joined_and_the_last_event_needs_no_blank_line() -> None:
    got = await read('data: {"text":', 'data:  "two lines"}', "", 'data: {"last": true}')
    assert got == [{"text": "two lines"}, {"last": True}]


async def test_data_that_is_not_json_is_an_error() -> None:
    with pytest.raises(json.JSONDecodeError):
        await read("data: <html>502 Bad Gateway</html>", "")
