"""Sending to Telegram: formatting, parts, pacing, rate limits, blocked users, idempotency.

    Telegram answers                   what a send does
    400 can't parse entities           sends the same part again as plain text
    400 chat not found                 refused: the user has not written to the bot yet
    429 retry_after <= 30 s            waits that long and sends again
    429 retry_after > 30 s             gives up: "Try again later: ..." with how long
    403 (the user blocked the bot)     records the chat as blocked; later sends fail at once
    connection failed                  tries again (3 tries), then "Try again later: ..."
    timed out                          no retry: "Try again later: ..." (it may have arrived)

A failure worth trying again later is a :class:`SendLater`, whose message begins with
``meshkit.wire.telegram_io.TRY_LATER``: the caller tells it from a refusal for good.

A text is sent in parts of at most 4096 UTF-16 units (formatting.py), ``MAX_PARTS`` at most:
past that, the last part ends with one line saying the reply was cut and how much was left
out, so a long reply is never lost without a word. An edit is one message, cut the same way.

Each chat gets about one message a second with short bursts (``Pacer``), in the
order the sends were asked for. A send with an idempotency key records each part
as Telegram accepts it; the same key again delivers only the parts still missing,
so a retried tool call never delivers a message twice.

Each part is recorded with its bot, chat and message id, so a tap on it is reported
with the key it was sent under (``sent_under``): the orchestrator binds buttons to that
key before the send. The user may see a message (and tap) before Telegram's answer to
the send reaches us: a tap on a message not recorded yet, in a chat with a send under
way, waits for that send (which holds the chat's lock until each part is recorded).
"""

from __future__ import annotations

import functools
import logging
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import anyio
from telegram import (
    Bot,
    BotCommand,
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    LinkPreviewOptions,
    Message,
    MessageEntity,
    ReplyParameters,
)
from telegram.error import BadRequest, Forbidden, NetworkError, RetryAfter, TimedOut

from mcp_telegram_io.formatting import Part, check_callback_data, render
from mcp_telegram_io.models import Done, Sent
from mcp_telegram_io.pacer import Pacer
from mcp_telegram_io.poller import seconds
from mcp_telegram_io.store import InboxStore
from meshkit.errors import ModelError
from meshkit.wire.telegram_io import TRY_LATER

logger = logging.getLogger(__name__)

T = TypeVar("T")

NO_PREVIEW = LinkPreviewOptions(is_disabled=True)
CALLBACK_TEXT_LIMIT = 200
CONNECT_TRIES = 3
MAX_PARTS = 5  # messages per reply: about 20,000 characters, five seconds of a chat's pace


class TelegramRefused(ModelError):
    """Telegram would not take the request; the message says why and what to do."""


class SendLater(TelegramRefused):
    """Telegram would not take the request now; later it may (``TRY_LATER`` begins it)."""

    def __init__(self, why: str) -> None:
        super().__init__(f"{TRY_LATER}{why}")


@dataclass(frozen=True)
class ButtonSpec:
    label: str
    data: str


@dataclass
class Sender:
    bots: dict[str, Bot]
    store: InboxStore
    pacer: Pacer
    clock: Callable[[], float]
    max_retry_after_s: float = 30.0
    sleep: Callable[[float], Awaitable[None]] = field(default=anyio.sleep, repr=False)
    _chat_locks: defaultdict[tuple[str, str], anyio.Lock] = field(
        default_factory=lambda: defaultdict(anyio.Lock), repr=False
    )

    async def send_message(
        self,
        agent: str,
        chat_id: str,
        text: str,
        *,
        buttons: Sequence[Sequence[ButtonSpec]] = (),
        reply_to: int | None = None,
        key: str | None = None,
        replace: int | None = None,
    ) -> Sent:
        """Send ``text`` in parts (see the module docstring); with ``replace``, its first
        part is that message of the bot, edited (a streamed reply's placeholder), or a new
        message when it can no longer be edited."""
        bot = self._bot(agent)
        markup = keyboard(buttons)
        parts = _parts(text, MAX_PARTS)
        reply = ReplyParameters(reply_to, allow_sending_without_reply=True) if reply_to else None
        async with self._chat_locks[(agent, chat_id)]:
            blocked, done = await self.store.before_send(agent, chat_id, key)
            if blocked:
                raise TelegramRefused(
                    "the user has blocked this bot; nothing can be sent until they write again"
                )
            ids: list[int] = []
            plain = False
            for number, part in enumerate(parts):
                if number in done:
                    ids.append(done[number])
                    continue
                await self.pacer.wait_turn(f"{agent}:{chat_id}")
                last = markup if number == len(parts) - 1 else None
                message_id, fell_back = None, False
                if number == 0 and replace is not None:
                    message_id, fell_back = await self._in_place(
                        agent, chat_id, replace, part, last
                    )
                if message_id is None:
                    request = functools.partial(
                        _send_part,
                        bot,
                        chat_id,
                        part.text,
                        markup=last,
                        reply=reply if number == 0 else None,
                    )
                    message, fell_back = await self._deliver(agent, request, part.entities, chat_id)
                    message_id = message.message_id
                plain = plain or fell_back
                ids.append(message_id)
                if key:
                    await self.store.record_part(
                        key,
                        number,
                        message_id,
                        self.clock(),
                        bot=_bot_id(bot),
                        chat_id=chat_id,
                    )
        return Sent(
            message_ids=ids,
            parts=len(parts),
            plain_fallback=plain,
            duplicate=len(done) == len(parts),
        )

    async def _in_place(
        self,
        agent: str,
        chat_id: str,
        message_id: int,
        part: Part,
        markup: InlineKeyboardMarkup | None,
    ) -> tuple[int | None, bool]:
        """``part`` shown in the bot's message ``message_id`` (edited): its id, and whether
        the formatting fell back; None when it cannot be edited (deleted, too old)."""
        try:
            fell_back = await self._edit_part(agent, chat_id, message_id, part, markup)
        except SendLater:
            raise
        except TelegramRefused as error:
            logger.info("%s: the placeholder could not be edited (%s); sent anew", agent, error)
            return None, False
        return message_id, fell_back

    async def send_draft(self, agent: str, chat_id: str, draft_id: int, text: str) -> Done:
        """Show ``text`` as the chat's draft ``draft_id`` (Telegram animates the changes of one
        draft; "" shows its "Thinking…"). Never waited for: Telegram's 429 or no answer is a
        :class:`SendLater` at once (a draft is worth showing now or not at all); a refusal is
        a ``TelegramRefused`` (the caller shows the reply another way)."""
        bot = self._bot(agent)
        if not chat_id.isdigit():
            raise TelegramRefused("drafts are shown in private chats only: a user's chat id")
        parts = render(text, max_parts=1)
        shown = parts[0] if parts else Part("")
        entities: Sequence[MessageEntity] | None = shown.entities or None
        while True:
            try:
                await bot.send_message_draft(int(chat_id), draft_id, shown.text, entities=entities)
            except RetryAfter as error:
                wait = seconds(error.retry_after)
                raise SendLater(f"Telegram rate-limits drafts for {wait:g} s") from error
            except BadRequest as error:
                if "can't parse entities" in error.message.lower() and entities:
                    entities = None
                    continue
                raise TelegramRefused(f"Telegram refused the draft: {error.message}") from error
            except Forbidden as error:
                raise TelegramRefused("the user has blocked this bot") from error
            except NetworkError as error:  # TimedOut included
                raise SendLater("Telegram did not take the draft") from error
            return Done(ok=True)

    async def sent_under(self, agent: str, chat_id: str, message_id: int) -> str | None:
        """The idempotency key the agent's message ``message_id`` in the chat was sent under
        (None: it was not sent with one). A send to the chat under way when it is not found
        yet may be the one that sent it: its parts are recorded once it holds its lock no
        more. (The tap exists only once its message does, so that send had taken the lock.)"""
        bot = _bot_id(self._bot(agent))
        key = await self.store.sent_under(bot, chat_id, message_id)
        lock = self._chat_locks.get((agent, chat_id))
        if key is None and lock is not None:
            async with lock:
                key = await self.store.sent_under(bot, chat_id, message_id)
        return key

    async def edit_message(
        self,
        agent: str,
        chat_id: str,
        message_id: int,
        text: str,
        buttons: Sequence[Sequence[ButtonSpec]] = (),
        *,
        callback_id: str | None = None,
        notice: str | None = None,
    ) -> Done:
        """Redraw a message; with ``callback_id``, the tap on it answered first (``notice``)."""
        self._bot(agent)  # an agent without a bot is refused before anything is done
        (part,) = _parts(text, max_parts=1)
        if callback_id is not None:
            await self.answer_callback(agent, callback_id, notice)
        await self._edit_part(agent, chat_id, message_id, part, keyboard(buttons))
        return Done(ok=True)

    async def _edit_part(
        self,
        agent: str,
        chat_id: str,
        message_id: int,
        part: Part,
        markup: InlineKeyboardMarkup | None,
    ) -> bool:
        """The bot's message ``message_id`` redrawn as ``part`` (one that shows exactly this
        already counts as redrawn); whether the formatting fell back to plain text."""
        bot = self._bot(agent)
        try:
            _, fell_back = await self._deliver(
                agent,
                lambda entities: bot.edit_message_text(
                    part.text,
                    chat_id=chat_id,
                    message_id=message_id,
                    entities=entities,
                    link_preview_options=NO_PREVIEW,
                    reply_markup=markup,
                ),
                part.entities,
                chat_id,
            )
        except TelegramRefused as error:
            if "message is not modified" in str(error).lower():
                return False  # it shows exactly this already
            raise
        return fell_back

    async def answer_callback(
        self, agent: str, callback_id: str, text: str | None = None, alert: bool = False
    ) -> Done:
        """Best effort: a query older than Telegram's window just cannot be answered."""
        bot = self._bot(agent)
        if text and len(text) > CALLBACK_TEXT_LIMIT:
            text = text[: CALLBACK_TEXT_LIMIT - 1] + "…"
        try:
            await bot.answer_callback_query(callback_id, text=text, show_alert=alert)
        except (BadRequest, NetworkError) as error:
            logger.info("answer_callback for %s failed: %s", agent, type(error).__name__)
            return Done(ok=False)
        return Done(ok=True)

    async def send_chat_action(self, agent: str, chat_id: str, action: str = "typing") -> Done:
        """Best effort: a missed typing indicator is not worth an error."""
        bot = self._bot(agent)
        try:
            await bot.send_chat_action(chat_id, action)
        except (BadRequest, Forbidden, NetworkError, RetryAfter) as error:
            logger.info("chat action for %s failed: %s", agent, type(error).__name__)
            return Done(ok=False)
        return Done(ok=True)

    async def set_commands(self, agent: str, commands: Sequence[tuple[str, str]]) -> Done:
        """The bot's command menu ("/" in Telegram's chat), for every chat."""
        bot = self._bot(agent)
        try:
            await bot.set_my_commands([BotCommand(name, text) for name, text in commands])
        except (BadRequest, Forbidden, NetworkError, RetryAfter) as error:
            raise TelegramRefused(
                f"Telegram refused the commands ({type(error).__name__})"
            ) from None
        return Done(ok=True)

    async def _deliver(
        self,
        agent: str,
        request: Callable[[Sequence[MessageEntity] | None], Awaitable[T]],
        entities: Sequence[MessageEntity],
        chat_id: str,
    ) -> tuple[T, bool]:
        """Run one send or edit through the table in the module docstring."""
        formatted: Sequence[MessageEntity] | None = entities or None
        fell_back = False
        connect_failures = 0
        while True:
            try:
                result = await request(formatted)
            except RetryAfter as error:
                wait = seconds(error.retry_after)
                if wait > self.max_retry_after_s:
                    raise SendLater(
                        f"Telegram rate-limits this chat for {wait:g} s; nothing was sent."
                    ) from error
                logger.info("%s: 429 from Telegram, waiting %g s", agent, wait)
                await self.sleep(wait)
            except BadRequest as error:
                if "can't parse entities" in error.message.lower() and formatted:
                    logger.warning("%s: Telegram refused the formatting; sending plain text", agent)
                    formatted, fell_back = None, True
                    continue
                if "chat not found" in error.message.lower():
                    raise TelegramRefused(
                        "Telegram refused the message: chat not found (the user has not "
                        "written to this bot yet, and a bot may write only to people who did)"
                    ) from error
                raise TelegramRefused(f"Telegram refused the message: {error.message}") from error
            except Forbidden as error:
                await self.store.block(agent, chat_id, self.clock())
                logger.warning("%s: chat %s blocked the bot (403)", agent, chat_id)
                raise TelegramRefused(
                    "the user has blocked this bot (or left the chat); it was not delivered"
                ) from error
            except TimedOut as error:
                raise SendLater(
                    "Telegram did not answer in time; the message may or may not have arrived"
                ) from error
            except NetworkError as error:
                connect_failures += 1
                if connect_failures >= CONNECT_TRIES:
                    raise SendLater(
                        "Telegram cannot be reached right now; nothing was sent"
                    ) from error
                await self.sleep(0.5 * connect_failures)
            else:
                return result, fell_back

    def _bot(self, agent: str) -> Bot:
        bot = self.bots.get(agent)
        if bot is None:
            raise TelegramRefused(
                f"no bot for agent {agent!r}; the agents with a bot token are {sorted(self.bots)}"
            )
        return bot


def _bot_id(bot: Bot) -> str:
    """Telegram's id of the bot: the number its token starts with (message ids are the
    bot's own in each chat)."""
    return bot.token.partition(":")[0]


def _parts(text: str, max_parts: int) -> list[Part]:
    parts = render(text, max_parts=max_parts)
    if not parts:
        raise TelegramRefused("the text is empty; send at least one visible character")
    return parts


async def _send_part(
    bot: Bot,
    chat_id: str,
    text: str,
    entities: Sequence[MessageEntity] | None,
    *,
    markup: InlineKeyboardMarkup | None,
    reply: ReplyParameters | None,
) -> Message:
    return await bot.send_message(
        chat_id,
        text,
        entities=entities,
        link_preview_options=NO_PREVIEW,
        reply_markup=markup,
        reply_parameters=reply,
    )


def keyboard(rows: Sequence[Sequence[ButtonSpec]]) -> InlineKeyboardMarkup | None:
    """Inline buttons, each with callback data checked against Telegram's 64-byte limit."""
    if not rows:
        return None
    try:
        return InlineKeyboardMarkup([[_button(b) for b in row] for row in rows if row])
    except ValueError as error:
        raise TelegramRefused(str(error)) from error


def _button(spec: ButtonSpec) -> InlineKeyboardButton:
    return InlineKeyboardButton(spec.label, callback_data=check_callback_data(spec.data))
