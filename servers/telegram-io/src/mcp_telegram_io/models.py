"""How a raw Telegram update becomes an ``InboxUpdate`` (the wire shapes: meshkit.wire)."""

from __future__ import annotations

import json
from typing import Any

from meshkit.wire.telegram_io import (
    MEDIA,
    Acked,
    AgentInbox,
    BotCommand,
    BotStatus,
    Button,
    Done,
    Extended,
    InboxUpdate,
    Kind,
    Sent,
    Status,
    Updates,
)

__all__ = [
    "MEDIA",
    "Acked",
    "AgentInbox",
    "BotCommand",
    "BotStatus",
    "Button",
    "Done",
    "Extended",
    "InboxUpdate",
    "Kind",
    "Sent",
    "Status",
    "Updates",
    "normalize",
]


def normalize(agent: str, bot: str, update_id: int, body: str, deliveries: int) -> InboxUpdate:
    raw: dict[str, Any] = json.loads(body)
    base: dict[str, Any] = {
        "id": f"{bot}:{update_id}",
        "agent": agent,
        "update_id": update_id,
        "deliveries": deliveries,
    }
    if (query := raw.get("callback_query")) is not None:
        message = query.get("message") or {}
        return InboxUpdate(
            **base,
            kind="callback",
            **_chat(message.get("chat")),
            **_user(query.get("from")),
            callback_id=str(query.get("id")),
            callback_data=query.get("data"),
            message_id=message.get("message_id"),
        )
    message = raw.get("message")
    if message is None:
        return InboxUpdate(**base, kind="other")
    fields: dict[str, Any] = {
        **_chat(message.get("chat")),
        **_user(message.get("from")),
        "message_id": message.get("message_id"),
        "reply_to_message_id": (message.get("reply_to_message") or {}).get("message_id"),
    }
    if "text" in message:
        return InboxUpdate(**base, kind="text", text=message["text"], **fields)
    media = next((name for name in MEDIA if name in message), None)
    if media is not None:
        return InboxUpdate(**base, kind="media", media=media, text=message.get("caption"), **fields)
    return InboxUpdate(**base, kind="other", **fields)


def _chat(chat: dict[str, Any] | None) -> dict[str, Any]:
    if not chat:
        return {}
    return {"chat_id": str(chat.get("id")), "chat_type": chat.get("type")}


def _user(user: dict[str, Any] | None) -> dict[str, Any]:
    if not user:
        return {}
    return {"user_id": str(user.get("id")), "user_name": user.get("first_name")}
