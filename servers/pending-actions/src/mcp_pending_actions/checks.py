"""What pending-actions checks of a request before anything is stored, and its new ids."""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from typing import Any

from mcp_pending_actions.errors import InvalidRequest
from mcp_pending_actions.rows import ActionRow, BatchRow

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


@dataclass(frozen=True)
class Tap:
    """Where a tap came from: the agent (bot), its chat, the idempotency key the message its
    button is on was sent under (telegram-io reports it with the tap), and the user who
    tapped."""

    agent: str
    chat_id: str
    message_key: str
    user_id: str


def shown_there(batch: BatchRow, tap: Tap) -> bool:
    """Whether the tap came from the message that carries the batch's buttons (the one sent
    under the batch's key), in its agent's chat. A batch staged without a key (or before
    keys were kept, or whose key a later batch took over) is shown nowhere: no tap is
    taken."""
    return (
        (batch.agent, batch.chat_id) == (tap.agent, tap.chat_id)
        and batch.message_key is not None
        and batch.message_key == tap.message_key
    )


def yours(row: ActionRow, batch: BatchRow, tap: Tap) -> bool:
    """Whether the action is this user's to decide, from this message."""
    if (row.agent, row.chat_id) != (batch.agent, batch.chat_id) or not shown_there(batch, tap):
        return False
    return row.user_id is None or row.user_id == tap.user_id
