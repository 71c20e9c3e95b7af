"""What telegram-io's tools return, and the buttons a message carries.

Normalized update kinds:

    text       a message with text (commands included: the orchestrator parses them)
    callback   a button tap: ``callback_id`` and ``callback_data``, ``message_id`` of its
               message and ``message_key``, the idempotency key that message was sent under
    media      a photo, voice note, sticker, file...: ``media`` names which (and ``text``
               holds the caption, if any); ``file`` describes its file, when it has one,
               for telegram-io's ``download_media`` (``Downloaded`` with the file as MCP
               content: a photo as an image, a voice note or audio file as audio, any
               other file as an embedded resource)
    other      anything else (edited messages, service messages): acked and ignored
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

# How telegram-io's tool error begins when a send was refused for now but may go later
# (Telegram rate-limits the chat for longer than telegram-io waits, cannot be reached, or did
# not answer in time); any other error of a send is a refusal trying again won't change
# (the chat is not found, the user blocked the bot, a bad request).
TRY_LATER = "Try again later: "
# How download_media's error begins when the file is over its bound or Telegram's.
TOO_BIG = "too big to download: "

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


# The media that carry a file (not a location, a contact or a poll).
MediaKind = Literal[
    "photo", "voice", "audio", "video_note", "document", "sticker", "video", "animation"
]
# What Telegram gives a bot to download: getFile refuses larger files.
MAX_DOWNLOAD_BYTES = 20 * 1024 * 1024


class MediaFile(BaseModel):
    """The file of a media update: what to know before downloading it."""

    kind: MediaKind
    file_name: str | None = Field(default=None, description="as sent (audio, document, video)")
    mime_type: str | None = Field(
        default=None, description="the type download_media gives the file (a photo: image/jpeg)"
    )
    file_size: int | None = Field(default=None, description="bytes; null: Telegram did not say")
    duration: int | None = Field(default=None, description="seconds (voice, audio, video)")
    width: int | None = Field(
        default=None, description="pixels; a photo: of the size download_media fetches"
    )
    height: int | None = None


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
    file: MediaFile | None = Field(
        default=None, description="for media with a file: the file download_media fetches"
    )
    callback_id: str | None = None
    callback_data: str | None = None
    message_id: int | None = Field(
        default=None, description="the message, or for a tap the message the button is on"
    )
    message_key: str | None = Field(
        default=None,
        description="for a tap: the idempotency key the tapped message was sent under (null: "
        "not sent by telegram-io with one)",
    )
    reply_to_message_id: int | None = None
    deliveries: int = Field(description="1 the first time; more after a lease ran out")


class Updates(BaseModel):
    updates: list[InboxUpdate]
    lease_s: float = Field(
        default=0,
        description="how long each is leased: extend the leases before that to keep them",
    )


class Extended(BaseModel):
    extended: int = Field(description="how many of the ids this run still held (now extended)")


class Acked(BaseModel):
    acked: int = Field(description="how many of the ids were waiting")


class Sent(BaseModel):
    message_ids: list[int] = Field(description="one per part, in order")
    parts: int
    plain_fallback: bool = Field(description="true when Telegram refused the formatting")
    duplicate: bool = Field(description="true when this idempotency key was sent before")
    acked: int = Field(default=0, description="how many of the ids in ack were waiting")


class Done(BaseModel):
    ok: bool = True
    acked: int = Field(default=0, description="how many of the ids in ack were waiting")


class Downloaded(BaseModel):
    """What download_media fetched; the file itself is the result's content."""

    kind: MediaKind
    mime_type: str
    file_name: str | None = None
    size: int = Field(description="bytes")
    duration: int | None = Field(default=None, description="seconds (voice, audio, video)")


class BotStatus(BaseModel):
    agent: str
    state: str = Field(description="starting, ok, retrying, conflict, unauthorized, parked, failed")
    detail: str | None = None
    username: str | None = Field(
        default=None, description="the bot's @username (without @), once Telegram answered"
    )


class AgentInbox(BaseModel):
    """One agent's side of the inbox: paused by the operator, what waits, when the last came."""

    agent: str
    paused: bool = Field(description="paused (clawmesh agent stop): its updates wait here")
    waiting: int = Field(description="its updates received and not yet acked")
    last_update_at: float | None = Field(description="when its newest update came (Unix s)")


class Status(BaseModel):
    bots: list[BotStatus]
    pending: int = Field(description="updates received and not yet acked")
    parked: bool = Field(description="the kill switch file is present: pollers are parked")
    readers: int = Field(
        default=0, description="next_updates calls waiting for updates now (a polling consumer)"
    )
    agents: list[AgentInbox] = Field(
        default_factory=list, description="each agent paused or with updates kept here"
    )


class BotCommand(BaseModel):
    """One entry of a bot's command menu (Telegram's "/" menu)."""

    command: str = Field(
        pattern=r"^[a-z0-9_]{1,32}$", max_length=32, description="without its slash"
    )
    description: str = Field(min_length=1, max_length=256)


class Button(BaseModel):
    label: str = Field(min_length=1, max_length=100, description="what the button says")
    data: str = Field(
        min_length=1,
        max_length=64,  # characters here; the sender checks Telegram's 64 bytes
        description="callback data sent back when tapped, at most 64 bytes",
    )
