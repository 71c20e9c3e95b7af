"""Responses API input items: the three kinds a conversation keeps, checked on the way in and out.

    {"type": "message", "role": "user" | "assistant" | ..., "content": "<text>" | [parts]}
    {"type": "function_call", "call_id": "...", "name": "...", "arguments": "<json text>"}
    {"type": "function_call_output", "call_id": "...", "output": "<text>" | [parts]}

A message may come without ``type`` (the API's short form): it is stored with
``"type": "message"``. Items of other types (reasoning, built-in tool calls) belong
to the turn that produced them and are not kept.
"""

from __future__ import annotations

import json
from typing import Any

MESSAGE = "message"
FUNCTION_CALL = "function_call"
FUNCTION_CALL_OUTPUT = "function_call_output"
KEPT = frozenset({MESSAGE, FUNCTION_CALL, FUNCTION_CALL_OUTPUT})
ROLES = ("user", "assistant", "system", "developer")


class BadItem(ValueError):
    """What is wrong with one item, in words for the caller."""


def normalise(item: dict[str, Any]) -> dict[str, Any] | None:
    """The item to store, or None for a type that is not kept. Raises BadItem."""
    if "type" not in item:
        if "role" not in item:
            raise BadItem("it has neither a 'type' nor a 'role'")
        item = {"type": MESSAGE, **item}
    kind = item["type"]
    if not isinstance(kind, str) or not kind:
        raise BadItem("'type' must be a non-empty string")
    if kind not in KEPT:
        return None
    check(item)
    return item


def check(item: dict[str, Any]) -> None:
    """Raise BadItem unless ``item`` is a well-formed item of a kept type."""
    kind = item.get("type")
    if kind == MESSAGE:
        if item.get("role") not in ROLES:
            raise BadItem(f"a message needs 'role' to be one of {', '.join(ROLES)}")
        _text_or_parts(item, "content")
    elif kind == FUNCTION_CALL:
        _non_empty(item, "call_id")
        _non_empty(item, "name")
        if not isinstance(item.get("arguments"), str):
            raise BadItem("a function_call needs 'arguments' as a JSON string")
    elif kind == FUNCTION_CALL_OUTPUT:
        _non_empty(item, "call_id")
        _text_or_parts(item, "output")
    else:
        raise BadItem(f"type {kind!r} is not one of {', '.join(sorted(KEPT))}")


def decode(text: str) -> dict[str, Any]:
    """A stored item back from its JSON text. Raises BadItem (a ValueError) when malformed."""
    try:
        item = json.loads(text)
    except ValueError as error:
        raise BadItem(f"not JSON ({error})") from error
    if not isinstance(item, dict):
        raise BadItem("not a JSON object")
    check(item)
    return item


def is_user_message(item: dict[str, Any]) -> bool:
    return item.get("type") == MESSAGE and item.get("role") == "user"


def is_note(item: dict[str, Any]) -> bool:
    """A developer message: what the orchestrator told the conversation outside a turn (a
    tap's outcome, another client's proposal or change)."""
    return item.get("type") == MESSAGE and item.get("role") == "developer"


def _non_empty(item: dict[str, Any], key: str) -> None:
    value = item.get(key)
    if not isinstance(value, str) or not value:
        raise BadItem(f"a {item['type']} needs {key!r} as a non-empty string")


def _text_or_parts(item: dict[str, Any], key: str) -> None:
    if not isinstance(item.get(key), str | list):
        raise BadItem(f"a {item['type']} needs {key!r} as a string or a list of content parts")


def searchable(item: dict[str, Any]) -> str | None:
    """The words recall can find in an item: what the user and the assistant said."""
    if item.get("type") != MESSAGE or item.get("role") not in ("user", "assistant"):
        return None
    content = item.get("content")
    if isinstance(content, str):
        return content or None
    parts = [p.get("text") for p in content or [] if isinstance(p, dict)]
    return " ".join(p for p in parts if isinstance(p, str)) or None
