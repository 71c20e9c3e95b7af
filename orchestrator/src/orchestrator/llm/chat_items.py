"""Stored input items in the shapes of Chat Completions: pure data, no ``openai`` import.

Function calls in a row become one assistant message with ``tool_calls`` (joined to the
assistant text just before them); outputs become ``tool`` messages; reasoning has no place
in a chat and is left out.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from orchestrator.llm.base import FunctionCall, Item


def call_item(call: FunctionCall) -> Item:
    return {
        "type": "function_call",
        "call_id": call.call_id,
        "name": call.name,
        "arguments": call.arguments,
    }


def chat_messages(instructions: str, items: Sequence[Item]) -> list[dict[str, Any]]:
    """Input items as chat messages: function calls in a row become one assistant message
    with ``tool_calls`` (joined to the assistant text just before them); outputs become
    ``tool`` messages; reasoning has no place in a chat and is left out."""
    messages: list[dict[str, Any]] = []
    if instructions:
        messages.append({"role": "system", "content": instructions})
    for item in items:
        kind = item.get("type", "message")
        if kind == "message":
            messages.append({"role": item["role"], "content": _content(item["content"])})
        elif kind == "function_call":
            tool_call = {
                "id": item["call_id"],
                "type": "function",
                "function": {"name": item["name"], "arguments": item["arguments"]},
            }
            last = messages[-1] if messages else None
            if last is not None and last["role"] == "assistant":
                last.setdefault("tool_calls", []).append(tool_call)
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [tool_call]})
        elif kind == "function_call_output":
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": item["call_id"],
                    "content": text_of(item["output"]),
                }
            )
    return messages


def _content(content: object) -> str | list[dict[str, Any]]:
    """A message's content: its text, or with an image its parts as a chat has them."""
    parts = [p for p in content if isinstance(p, dict)] if isinstance(content, list) else []
    if not any(part.get("type") == "input_image" for part in parts):
        return text_of(content)
    return [
        {"type": "image_url", "image_url": {"url": part["image_url"], "detail": "auto"}}
        if part.get("type") == "input_image"
        else {"type": "text", "text": str(part.get("text", ""))}
        for part in parts
    ]


def text_of(content: object) -> str:
    """Message content as plain text: a string, or the text of its parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return "" if content is None else str(content)


def arguments_text(arguments: object) -> str:
    if isinstance(arguments, str):
        return arguments or "{}"
    return "{}" if arguments is None else json.dumps(arguments)
