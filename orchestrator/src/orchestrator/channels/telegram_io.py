"""The telegram-io server, as the Telegram channel uses it: typed calls, Telegram's limits.

The server is the registry's server with ``role: telegram-io``. Its answers are read into
the wire models it returns (``meshkit.wire.telegram_io``); a call that gives no result
raises :class:`TelegramIOUnavailable` (no answer: try again later) or
:class:`TelegramRefused` (answered with an error: trying again won't help), or its kind
:class:`TelegramBusy` (Telegram would not take it now: trying again later may).
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Awaitable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from pydantic import BaseModel

from meshkit.wire.telegram_io import (
    TOO_BIG,
    TRY_LATER,
    Acked,
    BotCommand,
    Done,
    Downloaded,
    Extended,
    Sent,
    Status,
    Updates,
)
from orchestrator.core.replies import Reply
from orchestrator.mesh.errors import ToolCallError, ToolFailed
from orchestrator.mesh.registry import Registry

logger = logging.getLogger(__name__)

MAX_TEXT = 4096  # Telegram's limit for one message; send_message splits longer texts itself
M = TypeVar("M", bound=BaseModel)


class TelegramIOFailed(Exception):
    """A call to telegram-io did not succeed."""


class TelegramIOUnavailable(TelegramIOFailed):
    """telegram-io did not answer (down, restarting, lost call): try again later."""


class TelegramRefused(TelegramIOFailed):
    """telegram-io answered with an error (blocked user, bad request): trying again won't help."""


class TelegramTooBig(TelegramRefused):
    """A file over telegram-io's bound (or Telegram's 20 MB for bots): not downloaded."""


class TelegramBusy(TelegramRefused):
    """Telegram would not take it now (rate limit, unreachable): later it may. A refusal to
    whoever does not try again later (a reply, a firing); the consent channel does."""


class TelegramIO:
    """``consumer`` and ``run`` name who holds the leases: the inbox hands what an earlier
    run of ``consumer`` held to the first ``next_updates`` of a new ``run`` at once."""

    def __init__(self, registry: Registry, *, consumer: str, run: str) -> None:
        self._registry = registry
        self._server = registry.server_for("telegram-io")
        self._holder = {"consumer": consumer, "run": run}

    async def next_updates(self, batch: int, wait_s: float) -> Updates:
        arguments = {"max": batch, "wait_s": wait_s, **self._holder}
        return await self._call("next_updates", arguments, Updates)

    async def extend(self, update_ids: list[str]) -> int:
        """Keep the leases of what this run still works on; how many it still held."""
        arguments = {"ids": update_ids, **self._holder}
        return (await self._call("extend_leases", arguments, Extended)).extended

    async def ack(self, update_ids: list[str]) -> None:
        await self._call("ack", {"ids": update_ids}, Acked)

    async def send(
        self,
        agent: str,
        chat_id: str,
        reply: Reply,
        key: str,
        *,
        ack: Sequence[str] = (),
        replace: int | None = None,
    ) -> Sent:
        """``reply``, sent once under the idempotency ``key`` however often it is sent:
        a second try when telegram-io did not answer is therefore safe, and made. The
        updates ``ack`` names are acked once it is sent, in the same call. ``replace``: the
        bot's message it takes the place of (a streamed reply's placeholder, edited)."""
        arguments: dict[str, Any] = {
            "agent": agent,
            "chat_id": chat_id,
            "text": reply.text,
            "idempotency_key": key,
            **_buttons(reply),
        }
        if replace is not None:
            arguments["replace"] = replace
        try:
            return await self._call("send_message", arguments, Sent, ack=ack)
        except TelegramIOUnavailable:  # parts already delivered are not sent again
            return await self._call("send_message", arguments, Sent, ack=ack)

    async def deliver(
        self,
        agent: str,
        chat_id: str,
        reply: Reply,
        key: str,
        *,
        ack: Sequence[str] = (),
        replace: int | None = None,
    ) -> str | None:
        """Send ``reply`` (``send``); the message its buttons are in (the last part). When
        ``key`` had been sent already (a turn redone after a crash), that message shows the
        first try's buttons, never recorded as shown there: this try's replace them."""
        sent = await self.send(agent, chat_id, reply, key, ack=ack, replace=replace)
        shown_in = sent.message_ids[-1] if sent.message_ids else None
        if sent.duplicate and reply.buttons and shown_in is not None:
            await best_effort(self.edit(agent, chat_id, shown_in, reply))
        return None if shown_in is None else str(shown_in)

    async def edit(
        self,
        agent: str,
        chat_id: str,
        message_id: int,
        reply: Reply,
        *,
        callback_id: str | None = None,
        notice: str | None = None,
        ack: Sequence[str] = (),
    ) -> None:
        """Redraw a message; with ``callback_id``, the tap on it answered first with
        ``notice``, and the updates ``ack`` names acked once it is redrawn: one call."""
        arguments: dict[str, Any] = {
            "agent": agent,
            "chat_id": chat_id,
            "message_id": message_id,
            "text": reply.text[:MAX_TEXT],  # an edit cannot grow into a second message
            **_buttons(reply),
        }
        if callback_id is not None:
            arguments |= {"callback_id": callback_id, "notice": notice}
        await self._call("edit_message", arguments, Done, ack=ack)

    async def answer_callback(
        self, agent: str, callback_id: str, text: str, *, ack: Sequence[str] = ()
    ) -> None:
        """Stop a tap's spinner with ``text``; the updates ``ack`` names acked with it."""
        arguments = {"agent": agent, "callback_id": callback_id, "text": text}
        await self._call("answer_callback", arguments, Done, ack=ack)

    async def draft(self, agent: str, chat_id: str, draft_id: int, text: str) -> None:
        """Show ``text`` as the chat's draft (a streamed reply so far): TelegramBusy when
        Telegram would not take it now, TelegramRefused when it refuses drafts here."""
        arguments = {"agent": agent, "chat_id": chat_id, "draft_id": draft_id, "text": text}
        await self._call("send_draft", arguments, Done)

    async def typing(self, agent: str, chat_id: str) -> None:
        await self._call("send_chat_action", {"agent": agent, "chat_id": chat_id}, Done)

    async def set_commands(self, agent: str, commands: list[BotCommand]) -> None:
        arguments = {"agent": agent, "commands": [c.model_dump() for c in commands]}
        await self._call("set_commands", arguments, Done)

    async def status(self) -> Status:
        return await self._call("status", {}, Status)

    async def download(self, update_id: str) -> tuple[Downloaded, bytes]:
        """The file of media update ``update_id`` (telegram-io downloads it): TelegramTooBig
        over its bound, TelegramRefused when it cannot be had, TelegramBusy not now."""
        if self._server is None:
            raise TelegramIOUnavailable("no server with role 'telegram-io' in the registry")
        with _read_as_telegram():
            result = await self._registry.call_named(
                self._server, "download_media", {"id": update_id}
            )
        try:
            described = Downloaded.model_validate(result.structured or {})
            [file] = result.files
            return described, base64.b64decode(file.data, validate=True)
        except (ValueError, binascii.Error) as error:  # one file, as download_media answers
            raise TelegramRefused("telegram-io answered no file") from error

    async def _call(
        self, tool: str, arguments: dict[str, Any], model: type[M], *, ack: Sequence[str] = ()
    ) -> M:
        """``tool`` of telegram-io; the updates ``ack`` names acked with it, in the same call."""
        if self._server is None:
            raise TelegramIOUnavailable("no server with role 'telegram-io' in the registry")
        if ack:
            arguments = {**arguments, "ack": list(ack)}
        with _read_as_telegram():
            return await self._registry.call_as(self._server, tool, arguments, model)


@contextmanager
def _read_as_telegram() -> Iterator[None]:
    """telegram-io's errors as this module's: busy, refused, or no answer."""
    try:
        yield
    except ToolFailed as error:
        if error.message.startswith(TRY_LATER):
            raise TelegramBusy(error.message.removeprefix(TRY_LATER)[:300]) from error
        if error.message.startswith(TOO_BIG):
            raise TelegramTooBig(error.message.removeprefix(TOO_BIG)[:300]) from error
        raise TelegramRefused(error.message[:300]) from error
    except ToolCallError as error:
        failed = TelegramRefused if error.answered else TelegramIOUnavailable
        raise failed(str(error)[:300]) from error


async def best_effort(call: Awaitable[object]) -> None:
    """``call``, whose failure is logged and otherwise ignored (a notice, an indicator)."""
    try:
        await call
    except TelegramIOFailed as error:
        logger.info("telegram-io: %s", error)


def _buttons(reply: Reply) -> dict[str, list[list[dict[str, str]]]]:
    """The ``buttons`` argument of a reply that has some."""
    if not reply.buttons:
        return {}
    return {"buttons": [[{"label": b.label, "data": b.data} for b in row] for row in reply.buttons]}


def command_of(text: str) -> str:
    """``/stop@ClawdiaBot now`` → ``/stop``; "" for a text that is no command."""
    text = without_bot_name(text).strip()
    return text.split(maxsplit=1)[0].lower() if text.startswith("/") else ""


def without_bot_name(text: str) -> str:
    """``/help@ClawdiaBot args`` → ``/help args``: Telegram names the bot in group commands."""
    if not text.startswith("/"):
        return text
    command, space, rest = text.partition(" ")
    return command.split("@", 1)[0] + space + rest
