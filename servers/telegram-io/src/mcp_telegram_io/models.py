"""What the tools return, and how a raw Telegram update becomes an ``InboxUpdate``.

Normalized kinds:

    text       a message with text (commands included: the orchestrator parses them)
    callback   a button tap: ``callback_id`` and ``callback_data``, ``message_id`` of its message
    media      a photo, voice note, sticker, file...: ``media`` names which (and ``text``
               holds the caption, if any)
    other      anything else (edited messages, service messages): acked and ignored
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, Field

Kind = Literal["text", "callback", "media", "other"]
MEDIA = (
    "photo",
    "voice",
    "audio",
    "video",
    "video_note",
    "sticker",
    "animation",
    "document",
    "location",
    "contact",
    "poll",
)


class InboxUpdate(BaseModel):
    id: str = Field(description="'<bot>:<update_id>': pass it to ack")
    agent: str
    update_id: int
    kind: Kind
    chat_id: str | None = None
    chat_type: str | None = Field(default=None, description="private, group, supergroup, channel")
    user_id: str | None = None
    user_name: str | None = None
    text: str | None = None
    media: str | None = None
    callback_id: str | None = None
    callback_data: str | None = None
    message_id: int | None = Field(
        default=None, description="the message, or for a tap the message the button is on"
    )
    reply_to_message_id: int | None = None
    deliveries: int = Field(description="1 the first time; more after a lease ran out")


class Updates(BaseModel):
    updates: list[InboxUpdate]


class Acked(BaseModel):
    acked: int = Field(description="how many of the ids were waiting")


class Sent(BaseModel):
    message_ids: list[int] = Field(description="one per part, in order")
    parts: int
    plain_fallback: bool = Field(description="true when Telegram refused the formatting")
    duplicate: bool = Field(description="true when this idempotency key was sent before")


class Done(BaseModel):
    ok: bool = True


class BotStatus(BaseModel):
    agent: str
    state: str = Field(description="starting, ok, retrying, conflict, unauthorized, parked")
    detail: str | None = None


class Status(BaseModel):
    bots: list[BotStatus]
    pending: int = Field(description="updates received and not yet acked")
    parked: bool = Field(description="the kill switch file is present: pollers are parked")


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


class Button(BaseModel):
    label: str = Field(min_length=1, max_length=100, description="what the button says")
    data: str = Field(
        min_length=1, description="callback data sent back when tapped, at most 64 bytes"
    )
