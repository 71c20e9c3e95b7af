"""What pending-actions checks of a request before anything is stored, and its new ids."""

from __future__ import annotations

import json
import secrets
from typing import Any

from mcp_pending_actions.errors import InvalidRequest
from mcp_pending_actions.rows import ActionRow

MAX_JSON_CHARS = 64_000  # a payload or a result, encoded


def new_id(prefix: str) -> str:
    return prefix + secrets.token_hex(6)


def check_present(**values: str | None) -> None:
    """Each value given (not None) must hold more than whitespace."""
    for name, value in values.items():
        if value is not None and not value.strip():
            raise InvalidRequest(f"{name} must not be empty.")


def check_size(name: str, value: dict[str, Any]) -> None:
    size = len(json.dumps(value, ensure_ascii=False))
    if size > MAX_JSON_CHARS:
        raise InvalidRequest(
            f"{name} is too large ({size} characters of JSON, at most {MAX_JSON_CHARS})."
        )


def yours(row: ActionRow, user_id: str, chat_id: str | None) -> bool:
    """Whether the action is this user's to decide, in this chat (when one is given)."""
    if chat_id is not None and row.chat_id != chat_id:
        return False
    return row.user_id is None or row.user_id == user_id
