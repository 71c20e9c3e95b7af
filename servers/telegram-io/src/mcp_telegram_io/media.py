"""Downloading a media update's file from Telegram, for the orchestrator (no MCP here).

The orchestrator reads the update's ``file`` (``models.message_file``: of a photo, the size
under ``photo_max_side``), decides, and asks for it by the update's id; the file is found
again the same way in the stored update (acked ones are kept ``keep_s``), so what it read
is what it gets.

    what happens                                      the error
    the id is not "<bot>:<update_id>"                 BadUpdateId
    no such update here (or forgotten)                MediaRefused
    the update has no file (text, location, ...)      MediaRefused
    its file_size is over max_file_bytes              MediaRefused "too big ...", no getFile
    getFile's file_size is over it                    MediaRefused "too big ...", no download
    Telegram: 400 "file is too big"                   MediaRefused "too big ..."
    Telegram: other 400 (invalid file_id), 401, 403   TelegramRefused
    Telegram: 429, unreachable, 5xx, no answer        SendLater: "Try again later: ..."

A file is read whole into memory (``request.Httpx2Request`` reads bodies whole, and PTB's
``download_as_bytearray`` copies them): that is why the size is checked before each step,
and why ``max_file_bytes`` never exceeds Telegram's 20 MB. Nothing of a file is logged: not
its bytes, its caption or its path (the download URL holds the bot's token).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

from telegram import Bot
from telegram.error import (
    BadRequest,
    Forbidden,
    InvalidToken,
    NetworkError,
    RetryAfter,
    TimedOut,
)

from mcp_telegram_io.models import FileRef, MediaFile, message_file
from mcp_telegram_io.poller import seconds
from mcp_telegram_io.sender import SendLater, TelegramRefused
from mcp_telegram_io.service import update_key
from mcp_telegram_io.store import InboxStore
from meshkit.errors import ModelError
from meshkit.wire.telegram_io import MAX_DOWNLOAD_BYTES, TOO_BIG

logger = logging.getLogger(__name__)

MB = 1024 * 1024
NOTHING = "nothing was downloaded"


class MediaRefused(ModelError):
    """No file telegram-io may download for that update; the message says why."""


@dataclass(frozen=True)
class Download:
    file: MediaFile  # as the update describes it, ``file_size`` the bytes fetched
    unique_id: str  # Telegram's file_unique_id: the same file, whichever bot or day
    data: bytearray = field(repr=False)


class Media:
    def __init__(
        self,
        bots: Mapping[str, Bot],
        store: InboxStore,
        *,
        max_file_bytes: int,
        photo_max_side: int,
        keep_s: float,
    ) -> None:
        self._bots = bots
        self._store = store
        self._limit = min(max_file_bytes, MAX_DOWNLOAD_BYTES)
        self._photo_max_side = photo_max_side
        self._keep_s = keep_s

    async def download(self, update: str) -> Download:
        """The file of the update whose 'id' is ``update``, fetched whole (see the module
        docstring for the refusals)."""
        kept = await self._store.kept(*update_key(update))
        if kept is None:
            raise MediaRefused(
                f"no update {update!r} is kept here: pass the 'id' of a media update from "
                f"next_updates (acked updates are forgotten after {self._keep_s / 3600:g} h)"
            )
        agent, body = kept
        found = self._file(body)
        if found is None:
            raise MediaRefused(f"update {update!r} has no file to download")
        kind = found.file.kind
        self._check(kind, found.file.file_size)
        bot = self._bots.get(agent)
        if bot is None:
            raise MediaRefused(f"no bot for agent {agent!r} any more; {NOTHING}")
        with _telegram(unauthorized="Telegram refused this bot's token; " + NOTHING):
            await bot.initialize()  # once: the poller has done it, unless it is not polling
            file = await bot.get_file(found.file_id)
        self._check(kind, file.file_size)
        with _telegram(unauthorized="Telegram no longer serves the file; ask for it again"):
            data = await file.download_as_bytearray()
        self._check(kind, len(data))
        logger.info("%s: downloaded the %s of update %s (%d bytes)", agent, kind, update, len(data))
        described = found.file.model_copy(update={"file_size": len(data)})
        return Download(described, found.unique_id or file.file_unique_id, data)

    def _file(self, body: str) -> FileRef | None:
        try:
            message = json.loads(body).get("message")
        except (ValueError, AttributeError):
            return None
        if not isinstance(message, Mapping):
            return None
        return message_file(message, self._photo_max_side)

    def _check(self, kind: str, size: int | None) -> None:
        if size is not None and size > self._limit:
            raise MediaRefused(
                f"{TOO_BIG}the {kind.replace('_', ' ')} is {_size(size)}, "
                f"telegram-io downloads files of {_size(self._limit)} at most; {NOTHING}"
            )


def _size(size: int) -> str:
    return f"{size / MB:.1f} MB" if size >= MB else f"{size / 1024:.1f} KB"


@contextmanager
def _telegram(*, unauthorized: str) -> Iterator[None]:
    """Telegram's refusals of a step of a download, as the module docstring's table says.
    Never Telegram's own text for a token error (PTB puts the token in it), nor any
    exception chained (``from None``): errors and their logs stay free of it."""
    try:
        yield
    except RetryAfter as error:
        wait = seconds(error.retry_after)
        raise SendLater(f"Telegram rate-limits this bot for {wait:g} s; {NOTHING}") from None
    except BadRequest as error:  # before NetworkError, its base class
        if "too big" in error.message.lower():
            raise MediaRefused(
                f"{TOO_BIG}Telegram gives bots files of "
                f"{MAX_DOWNLOAD_BYTES / MB:.0f} MB at most; {NOTHING}"
            ) from None
        raise TelegramRefused(f"Telegram refused the file: {error.message}") from None
    except (InvalidToken, Forbidden):
        raise TelegramRefused(unauthorized) from None
    except TimedOut:
        raise SendLater(f"Telegram did not answer in time; {NOTHING}") from None
    except NetworkError:
        raise SendLater(f"Telegram cannot be reached right now; {NOTHING}") from None
