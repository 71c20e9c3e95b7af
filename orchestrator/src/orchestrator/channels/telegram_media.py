"""What a photo, a voice note or a file says, read for the turn that answers it.

    voice, audio, round video  within VOICE_MAX_S and VOICE_MAX_BYTES: downloaded by
                               telegram-io, transcribed (metered as ``voice``, priced per
                               minute), the user shown "🎤 …"; the turn answers the words
    photo                      downloaded (the size telegram-io picks), given to the model as
                               image input with its caption; what is stored: "[photo] caption"
    .ics (an invitation)       the calendar's import proposal: ``CalendarFile``
    a small text file          its text, under the caption (TEXT_FILE_MAX_CHARS at most)
    anything else              one line saying what is understood

Each refusal is one line (``Declined``) saying why and what to do; the bytes never reach a
log, and only words are stored.
"""

from __future__ import annotations

import base64
import logging
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import PurePosixPath

from meshkit.wire.telegram_io import InboxUpdate, MediaFile
from orchestrator.channels.telegram_io import (
    TelegramIO,
    TelegramIOFailed,
    TelegramTooBig,
)
from orchestrator.core.allowance_replies import cap_text
from orchestrator.core.usage import Meter, Who
from orchestrator.llm.base import Image, Transcriber
from orchestrator.llm.errors import LLMError

logger = logging.getLogger(__name__)

HEARD = "🎤 “{text}”"
NOT_LISTENING = (
    "I can't listen to voice notes here: no transcription service is set up. "
    "Please type it instead."
)
TOO_LONG = (
    "That recording is {length} long; I listen to {limit} at most. Could you send a shorter one?"
)
TOO_LARGE = "That file is too large for me ({size}); I take {what} up to {limit}."
NOTHING_HEARD = "I couldn't make out any words in that recording. Could you try again, or type it?"
NOT_TRANSCRIBED = (
    "I couldn't transcribe that recording right now. Please try again in a minute, or type it."
)
NOT_FETCHED = (
    "I couldn't fetch that file from Telegram right now. Please send it again in a minute."
)
NOT_TEXT = "I couldn't read {name} as text. Send it as a plain UTF-8 text file, or paste the words."
UNDERSTOOD = (
    "I understand text, photos, voice notes, calendar files (.ics) and small text files; "
    "{what} is none of these. Tell me in words what you need."
)
WHAT = {
    "sticker": "a sticker", "video": "a video", "animation": "a GIF",
    "location": "a location", "contact": "a contact", "poll": "a poll",
}  # fmt: skip
CALENDAR_TYPES = ("text/calendar", "application/ics")
CALENDAR_SUFFIXES = (".ics", ".ical", ".ifb", ".icalendar")
TEXT_TYPES = ("application/json", "application/xml", "application/x-yaml", "application/yaml")
TEXT_SUFFIXES = (".txt", ".md", ".markdown", ".csv", ".tsv", ".json", ".log", ".yaml", ".yml")
BYTES_PER_CHAR = 4  # at most, in UTF-8: a text file of N characters has at most 4N bytes


@dataclass(frozen=True)
class MediaLimits:
    voice_max_s: int = 600
    voice_max_bytes: int = 20 * 1024 * 1024
    text_max_chars: int = 20_000
    calendar_max_bytes: int = 900_000  # the calendar's import takes its text in one call


MEDIA_LIMITS = MediaLimits()


@dataclass(frozen=True)
class Said:
    """Words for a turn: what came with the media, the images it shows, and for a
    recording the words heard (shown to the user before the answer)."""

    text: str
    images: tuple[Image, ...] = ()
    heard: str | None = None


@dataclass(frozen=True)
class CalendarFile:
    """An .ics file: for the calendar's import, not for the model."""

    name: str
    text: str
    caption: str


@dataclass(frozen=True)
class Declined:
    """One line saying why the media cannot be read, and what to do."""

    line: str


Read = Said | CalendarFile | Declined


class MediaReader:
    """Reads a media update (``read``); ``transcriber`` None: voice notes are declined."""

    def __init__(
        self,
        io: TelegramIO,
        transcriber: Transcriber | None,
        *,
        limits: MediaLimits,
        meter: Meter | None,
    ) -> None:
        self._io = io
        self._transcriber = transcriber
        self._limits = limits
        self._meter = meter
        # A file's kind → its reader (the kinds: meshkit.wire.telegram_io.MediaFile).
        self._readers: dict[str, Callable[[Who, InboxUpdate, MediaFile], Awaitable[Read]]] = {
            "voice": self._listen,
            "audio": self._listen,
            "video_note": self._listen,
            "photo": self._photo,
            "document": self._document,
        }

    async def read(self, who: Who, update: InboxUpdate) -> Read:
        """What ``update`` says (``who``: whose allowance a transcription counts to)."""
        file = update.file
        reader = None if file is None else self._readers.get(file.kind)
        if file is None or reader is None:
            kind = file.kind if file is not None else update.media or ""
            return Declined(UNDERSTOOD.format(what=WHAT.get(kind, "that")))
        try:
            return await reader(who, update, file)
        except TelegramTooBig:
            size = _size(file.file_size)
            return Declined(TOO_LARGE.format(size=size, what="files", limit="20 MB"))
        except TelegramIOFailed as error:
            logger.info("update %s: the file was not downloaded (%s)", update.id, error)
            return Declined(NOT_FETCHED)

    async def _listen(self, who: Who, update: InboxUpdate, file: MediaFile) -> Read:
        if self._transcriber is None:
            return Declined(NOT_LISTENING)
        seconds = float(file.duration or 0)
        declined = self._beyond(seconds, file.file_size or 0)
        if declined is not None:
            return declined
        capped = None if self._meter is None else await self._meter.check(who)
        if capped is not None:  # the allowance reached: no transcription either
            return Declined(cap_text(capped, midway=False))
        described, data = await self._io.download(update.id)
        name = described.file_name or _name_for(file)
        try:
            heard = await self._transcriber.transcribe(
                data, file_name=name, mime_type=described.mime_type, seconds=seconds
            )
        except LLMError as error:
            logger.warning("update %s: transcription failed (%s)", update.id, type(error).__name__)
            return Declined(NOT_TRANSCRIBED)
        if self._meter is not None:
            self._meter.used(who, self._transcriber.model, heard.usage)
        if not heard.text:
            return Declined(NOTHING_HEARD)
        caption = (update.text or "").strip()
        return Said("\n\n".join(filter(None, [heard.text, caption])), heard=heard.text)

    def _beyond(self, seconds: float, size: int) -> Declined | None:
        """A recording over the bounds: the line that says so."""
        limits = self._limits
        if seconds > limits.voice_max_s:
            length, limit = _length(seconds), _length(limits.voice_max_s)
            return Declined(TOO_LONG.format(length=length, limit=limit))
        if size > limits.voice_max_bytes:
            size_, limit = _size(size), _size(limits.voice_max_bytes)
            return Declined(TOO_LARGE.format(size=size_, what="recordings", limit=limit))
        return None

    async def _photo(self, who: Who, update: InboxUpdate, file: MediaFile) -> Read:
        _, data = await self._io.download(update.id)
        image = Image(file.mime_type or "image/jpeg", base64.b64encode(data).decode())
        return Said((update.text or "").strip(), (image,))

    async def _document(self, who: Who, update: InboxUpdate, file: MediaFile) -> Read:
        name, caption = file.file_name or "that file", (update.text or "").strip()
        suffix = PurePosixPath(name.lower()).suffix
        mime, size = (file.mime_type or "").lower(), file.file_size or 0
        if mime in CALENDAR_TYPES or suffix in CALENDAR_SUFFIXES:
            most = self._limits.calendar_max_bytes
            if size > most:
                return Declined(
                    TOO_LARGE.format(size=_size(size), what="calendar files", limit=_size(most))
                )
            text = _text((await self._io.download(update.id))[1])
            return (
                CalendarFile(name, text, caption) if text else Declined(NOT_TEXT.format(name=name))
            )
        if mime.startswith("text/") or mime in TEXT_TYPES or suffix in TEXT_SUFFIXES:
            return await self._text_file(update, name, size, caption)
        what = f"{name} ({file.mime_type})" if file.mime_type else name
        return Declined(UNDERSTOOD.format(what=what))

    async def _text_file(self, update: InboxUpdate, name: str, size: int, caption: str) -> Read:
        most = self._limits.text_max_chars
        if size > most * BYTES_PER_CHAR:
            limit = f"{most:,} characters"
            return Declined(TOO_LARGE.format(size=_size(size), what="text files", limit=limit))
        text = _text((await self._io.download(update.id))[1])
        if text is None:
            return Declined(NOT_TEXT.format(name=name))
        cut = f"\n[… {len(text) - most:,} more characters not read]" if len(text) > most else ""
        return Said("\n\n".join(filter(None, [caption, f"📄 {name}:\n{text[:most]}{cut}"])))


def _text(data: bytes) -> str | None:
    """UTF-8 text (a BOM allowed); None for bytes that are not."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None
    return None if "\x00" in text else text


def _name_for(file: MediaFile) -> str:
    """A file name a transcription server reads the format from (Telegram's voice notes
    have none: Ogg Opus)."""
    suffix = {"voice": ".ogg", "video_note": ".mp4", "audio": ".mp3"}.get(file.kind, "")
    return f"{file.kind}{suffix}"


def _length(seconds: float) -> str:
    whole = math.ceil(seconds)
    return f"{whole // 60} min {whole % 60} s" if whole >= 60 else f"{whole} s"


def _size(size: int | None) -> str:
    if size is None:
        return "size unknown"
    return f"{size / 1024 / 1024:.1f} MB" if size >= 1024 * 1024 else f"{math.ceil(size / 1024)} KB"
