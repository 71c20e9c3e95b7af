"""How a raw Telegram update becomes an ``InboxUpdate`` (the wire shapes: meshkit.wire)."""

from __future__ import annotations

import json
import mimetypes
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast, get_args

from meshkit.wire.telegram_io import (
    MEDIA,
    Acked,
    AgentInbox,
    BotCommand,
    BotStatus,
    Button,
    Done,
    Downloaded,
    Extended,
    InboxUpdate,
    Kind,
    MediaFile,
    MediaKind,
    Sent,
    Status,
    Updates,
)

PHOTO_MAX_SIDE = 1280  # pixels, the longer side: the photo size an update describes
FILE_KINDS: frozenset[str] = frozenset(get_args(MediaKind))
# The type a file is given when Telegram does not say (a voice note is Opus in Ogg; an
# animation and a video note are MPEG-4; a sticker's depends on its format).
DEFAULT_TYPES = {
    "photo": "image/jpeg",
    "voice": "audio/ogg",
    "audio": "audio/mpeg",
    "video": "video/mp4",
    "video_note": "video/mp4",
    "animation": "video/mp4",
    "document": "application/octet-stream",
}

__all__ = [
    "MEDIA",
    "Acked",
    "AgentInbox",
    "BotCommand",
    "BotStatus",
    "Button",
    "Done",
    "Downloaded",
    "Extended",
    "FileRef",
    "InboxUpdate",
    "Kind",
    "MediaFile",
    "Sent",
    "Status",
    "Updates",
    "message_file",
    "normalize",
]


@dataclass(frozen=True)
class FileRef:
    """A message's file: Telegram's ids for it and what the update says of it."""

    file_id: str
    unique_id: str
    file: MediaFile


def normalize(
    agent: str,
    bot: str,
    update_id: int,
    body: str,
    deliveries: int,
    *,
    photo_max_side: int = PHOTO_MAX_SIDE,
) -> InboxUpdate:
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
        found = message_file(message, photo_max_side)
        return InboxUpdate(
            **base,
            kind="media",
            media=media,
            text=message.get("caption"),
            file=found.file if found else None,
            **fields,
        )
    return InboxUpdate(**base, kind="other", **fields)


def message_file(
    message: Mapping[str, Any], photo_max_side: int = PHOTO_MAX_SIDE
) -> FileRef | None:
    """The file of a raw message (Bot API shapes), None when it has none: of a photo, the
    largest size whose longer side is at most ``photo_max_side`` pixels (the smallest when
    every size is larger)."""
    kind = next((name for name in MEDIA if name in message), None)
    if kind not in FILE_KINDS:
        return None
    obj = message[kind]
    if kind == "photo":
        sizes = [s for s in obj if isinstance(s, Mapping)] if isinstance(obj, list) else []
        obj = _photo_size(sizes, photo_max_side)
    if not isinstance(obj, Mapping) or not isinstance(obj.get("file_id"), str):
        return None
    name = _str(obj.get("file_name"))
    width, height = _int(obj.get("width")), _int(obj.get("height"))
    if kind == "video_note":
        width = height = _int(obj.get("length"))  # a round video: its diameter
    file = MediaFile(
        kind=cast(MediaKind, kind),
        file_name=name,
        mime_type=_str(obj.get("mime_type")) or _default_type(kind, obj, name),
        file_size=_int(obj.get("file_size")),
        duration=_int(obj.get("duration")),
        width=width,
        height=height,
    )
    return FileRef(obj["file_id"], str(obj.get("file_unique_id") or ""), file)


def _photo_size(sizes: list[Mapping[str, Any]], bound: int) -> Mapping[str, Any] | None:
    def side(size: Mapping[str, Any]) -> int:
        return max(_int(size.get("width")) or 0, _int(size.get("height")) or 0)

    def area(size: Mapping[str, Any]) -> int:
        return (_int(size.get("width")) or 0) * (_int(size.get("height")) or 0)

    fitting = [s for s in sizes if side(s) <= bound]
    if fitting:
        return max(fitting, key=lambda s: (side(s), area(s)))
    return min(sizes, key=lambda s: (side(s), area(s)), default=None)


def _default_type(kind: str, obj: Mapping[str, Any], name: str | None) -> str:
    if kind == "sticker":
        if obj.get("is_animated"):
            return "application/x-tgsticker"
        return "video/webm" if obj.get("is_video") else "image/webp"
    if kind == "document" and name:
        return mimetypes.guess_type(name)[0] or DEFAULT_TYPES[kind]
    return DEFAULT_TYPES[kind]


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _chat(chat: dict[str, Any] | None) -> dict[str, Any]:
    if not chat:
        return {}
    return {"chat_id": str(chat.get("id")), "chat_type": chat.get("type")}


def _user(user: dict[str, Any] | None) -> dict[str, Any]:
    if not user:
        return {}
    return {"user_id": str(user.get("id")), "user_name": user.get("first_name")}
