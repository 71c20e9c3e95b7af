"""Answering one accepted Telegram update: a message's turn, a button tap, or media.

The update's kind picks its handler from one table (``UpdateAnswerer.routes``, built
with the answerer):

- A text goes to the dispatcher; "typing…" shows from ``typing_after_s`` into the turn,
  refreshed every ``typing_every_s``, and stops when the reply is delivered. An agent that
  streams (its ``stream``, on by default) shows the reply as the model writes it, then
  sends it as it would unstreamed (``telegram_stream``); what a ``/stop`` cut short stays.
- A tap never reaches the model: it is done once, answered (the spinner on the button
  stops) and its message edited; a tap that answers a question starts a turn whose reply
  is a new message. The handler gives the notice and then its last word (``settle``):
  the notice, the redraw and the ack go out in one call (``edit_message`` with
  ``callback_id`` and ``ack``; ``answer_callback`` with ``ack`` when nothing is redrawn).
  A notice still held ``tap_answer_within_s`` after the tap came (a slow change: a
  Google calendar) goes out on its own then, so the spinner stops in time; the redraw
  and the ack follow together.
- A photo, a recording or a file is read (``telegram_media``): a photo and its caption
  are a turn with the photo as image input, a recording's words (shown first, "🎤 …") and a
  small text file's text a turn of words, an .ics file the calendar's import proposal;
  anything else gets one line saying what is understood.
- Anything else (edited messages, service messages) is acked and ignored.
- Every reply is sent under the idempotency key ``reply:<update id>`` (``Deliver.key``):
  a turn redone after a crash delivers nothing twice, and a batch of proposed changes is
  bound to it before the send (telegram-io reports the key of a tapped message).
- A reply is the last thing its update needs (the turn was stored, and its buttons bound
  to its key, before it): its send acks the update, in the same call.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from types import MappingProxyType

import anyio

from meshkit.exception_groups import as_itself
from meshkit.wire.telegram_io import InboxUpdate, Kind, Sent
from orchestrator.channels.telegram_io import (
    TelegramIO,
    TelegramIOFailed,
    best_effort,
    without_bot_name,
)
from orchestrator.channels.telegram_media import (
    HEARD,
    CalendarFile,
    Declined,
    MediaReader,
)
from orchestrator.channels.telegram_stream import ReplyStream, StreamPace
from orchestrator.core.dispatch import Dispatcher, Reply
from orchestrator.core.routes import Deliver, FileContext, TapContext, TextContext
from orchestrator.core.runtime import AgentRuntime
from orchestrator.core.usage import Who
from orchestrator.llm.base import Image

logger = logging.getLogger(__name__)

# (agent, chat, update) -> whether the reply's send acked the update
UpdateHandler = Callable[[str, str, InboxUpdate], Awaitable[bool]]
DRAFT_IDS = 2**31 - 1  # a draft's id: 1 up to this, from its update's id


class UpdateAnswerer:
    def __init__(
        self,
        dispatcher: Dispatcher,
        io: TelegramIO,
        *,
        typing_after_s: float,
        typing_every_s: float,
        tap_answer_within_s: float = 3.0,
        reader: MediaReader,
        pace: StreamPace | None = None,
        sleep: Callable[[float], Awaitable[None]],
    ) -> None:
        """``reader``: what photos, recordings and files say; ``pace``: how streamed replies
        change on screen (None: no reply is streamed)."""
        self._dispatcher = dispatcher
        self._reader = reader
        self._pace = pace
        self._placeholders: set[str] = set()  # agents whose drafts Telegram refused
        self._io = io
        self._typing_after_s = typing_after_s
        self._typing_every_s = typing_every_s
        self._tap_answer_within_s = tap_answer_within_s
        self._sleep = sleep
        # Update kind → handler (the kinds: meshkit.wire.telegram_io).
        self.routes: Mapping[Kind, UpdateHandler] = MappingProxyType({
            "text": self._text,  # a turn (or a command), its reply delivered
            "callback": self._tap,  # a button tap: the dispatcher's tap routes
            "media": self._media,  # read (telegram_media): a turn, an import, or one line
            "other": self._ignore,  # acked, nothing said
        })  # fmt: skip

    async def answer(self, runtime: AgentRuntime, update: InboxUpdate) -> bool:
        """Answer ``update`` and deliver what it says back; whether its reply's send acked
        it (else the next poll acks it)."""
        return await self.routes[update.kind](runtime.id, str(update.chat_id), update)

    async def send(
        self, agent: str, update: InboxUpdate, reply: Reply, *, ack: bool = False
    ) -> Sent:
        """The reply to ``update``, once however often it is sent (and with ``ack``, the
        update acked once it is)."""
        key, acked = _reply_key(update), [update.id] if ack else []
        return await self._io.send(agent, str(update.chat_id), reply, key, ack=acked)

    async def _text(self, agent: str, chat: str, update: InboxUpdate) -> bool:
        return await self._turn(agent, chat, update, without_bot_name(update.text or ""))

    async def _turn(
        self,
        agent: str,
        chat: str,
        update: InboxUpdate,
        text: str,
        images: tuple[Image, ...] = (),
    ) -> bool:
        """The dispatcher's answer to ``text`` (and ``images``), delivered as the reply to
        ``update``; whether its send acked it."""
        typing = anyio.CancelScope()
        acked = False
        stream = self._stream(agent, chat, update)

        async def keep_typing() -> None:
            with typing:
                await self._keep_typing(agent, chat, stream)

        async def send(reply: Reply) -> str | None:
            nonlocal acked
            typing.cancel()  # the answer is here: no more "typing…"
            placeholder = None if stream is None else await stream.close()
            shown_in = await self._io.deliver(
                agent, chat, reply, _reply_key(update), ack=[update.id], replace=placeholder
            )
            acked = True
            return shown_in

        async def edit_message(message_id: str, reply: Reply) -> None:
            # A question answered by this text shows its answer (clarify).
            if message_id.isdigit():
                await best_effort(self._io.edit(agent, chat, int(message_id), reply))

        async with as_itself(), anyio.create_task_group() as turn:
            turn.start_soon(keep_typing)
            if stream is not None:
                turn.start_soon(stream.run)
            try:
                await self._dispatcher.on_text(
                    TextContext(
                        agent,
                        chat,
                        text,
                        images=images,
                        message_id=update.id,
                        user=update.user_id,
                        deliver=Deliver(_reply_key(update), send),
                        edit_message=edit_message,
                        observe=None if stream is None else stream.calling,
                        writing=None if stream is None else stream.writing,
                    ),
                )
                if stream is not None and not acked:  # /stop: what was shown stays
                    await stream.close()
                    if (kept := stream.stopped()) is not None:
                        await send(kept)
            finally:
                typing.cancel()
                if stream is not None:
                    await stream.close()
        return acked

    def _stream(self, agent: str, chat: str, update: InboxUpdate) -> ReplyStream | None:
        """How the reply is shown as it is written; None: sent when whole (the agent's
        ``stream`` is off, or the channel streams nothing)."""
        if self._pace is None or not self._dispatcher.agents[agent].agent.entry.stream:
            return None
        return ReplyStream(
            self._io, agent, chat, update.id,
            draft_id=update.update_id % DRAFT_IDS + 1, pace=self._pace,
            placeholders=self._placeholders, sleep=self._sleep,
        )  # fmt: skip

    async def _media(self, agent: str, chat: str, update: InboxUpdate) -> bool:
        """A photo, a recording, a file: what it says answered as a text is (``telegram_media``),
        an .ics file as the calendar's import proposal, anything else in one line."""
        who = Who(agent, update.user_id or chat, chat, "voice", update.id)
        async with as_itself(), anyio.create_task_group() as reading:
            # "typing…" while it is downloaded (and transcribed)
            reading.start_soon(self._keep_typing, agent, chat, None)
            read = await self._reader.read(who, update)
            reading.cancel_scope.cancel()
        if isinstance(read, Declined):
            await self.send(agent, update, Reply(read.line), ack=True)
            return True
        if isinstance(read, CalendarFile):
            return await self._calendar(agent, chat, update, read)
        if read.heard is not None:  # what was heard, before its answer
            heard = Reply(HEARD.format(text=read.heard))
            await best_effort(self._io.send(agent, chat, heard, f"heard:{update.id}"))
        return await self._turn(agent, chat, update, read.text, read.images)

    async def _calendar(
        self, agent: str, chat: str, update: InboxUpdate, file: CalendarFile
    ) -> bool:
        """An .ics file: the calendar's proposal to import it, its buttons in the reply."""
        acked = False

        async def send(reply: Reply) -> str | None:
            nonlocal acked
            shown_in = await self._io.deliver(
                agent, chat, reply, _reply_key(update), ack=[update.id]
            )
            acked = True
            return shown_in

        await self._dispatcher.on_calendar_file(
            FileContext(agent, chat, update.user_id or chat, file.name, file.text, file.caption,
                        Deliver(_reply_key(update), send))
        )  # fmt: skip
        return acked

    async def _ignore(self, agent: str, chat: str, update: InboxUpdate) -> bool:
        return False

    async def _tap(self, agent: str, chat: str, update: InboxUpdate) -> bool:
        at_once = self._tap_answer_within_s <= 0
        tap = _Tap(self._io, agent, chat, update, at_once=at_once)

        async def deliver(reply: Reply) -> str | None:
            sent = await self.send(agent, update, reply, ack=True)
            tap.acked = True
            return str(sent.message_ids[-1]) if sent.message_ids else None

        def keyed(key: str) -> Deliver:
            """More messages after the tap (held messages answered): each its own key."""

            async def send(reply: Reply) -> str | None:
                return await self._io.deliver(agent, chat, reply, key)

            return Deliver(key, send)

        context = TapContext(
            agent=agent,
            chat=chat,
            user=str(update.user_id),
            message=None if update.message_id is None else str(update.message_id),
            data=update.callback_data or "",
            answer=tap.answer,
            edit=tap.edit,
            deliver=Deliver(_reply_key(update), deliver, keyed),
            tap_id=update.id,
            key=update.message_key,
            finish=tap.finish,
        )
        async with as_itself(), anyio.create_task_group() as waiting:
            if not at_once:
                waiting.start_soon(self._answer_in_time, tap)
            try:
                await self._dispatcher.on_callback(context)
            finally:
                waiting.cancel_scope.cancel()
        if not tap.acked:
            await tap.finish(None)  # what the handler left: its notice, and the ack
        return tap.acked

    async def _answer_in_time(self, tap: _Tap) -> None:
        """The tap's notice on its own once ``tap_answer_within_s`` have passed (Telegram
        shows the spinner for a few seconds only), if its last word has not come by then."""
        await self._sleep(self._tap_answer_within_s)
        await tap.show()

    async def _keep_typing(self, agent: str, chat: str, stream: ReplyStream | None) -> None:
        """ "typing…" from a moment into the turn until it ends (Telegram shows it ~5 s), or
        until the reply shows as it is written.

        Not at once: an answer within ``typing_after_s`` (commands, a fast model) needs
        no indicator, and each chat action is a Bot API call competing with the turn.
        """
        await self._sleep(self._typing_after_s)
        while stream is None or not stream.shown:
            await best_effort(self._io.typing(agent, chat))
            await self._sleep(self._typing_every_s)


class _Tap:
    """One tap's way back: its notice held for its last word, so that the notice, the
    redraw and the ack go out in one telegram-io call."""

    def __init__(
        self, io: TelegramIO, agent: str, chat: str, update: InboxUpdate, *, at_once: bool
    ) -> None:
        self._io = io
        self._agent = agent
        self._chat = chat
        self._update = update
        self._notice: str | None = None
        self._due = at_once  # a notice goes out as soon as it is given
        self._answered = False  # the callback answered (the spinner stopped)
        self.acked = False

    async def answer(self, text: str) -> None:
        """The notice, shown with what follows (or on its own once it is due)."""
        self._notice = text
        if self._due:
            await self.show()

    async def show(self) -> None:
        """The notice on its own, now (or as soon as it is given), unless the callback
        was answered already."""
        self._due = True
        if not self._answered and self._notice is not None:
            self._answered = True
            callback = self._update.callback_id or ""
            await best_effort(self._io.answer_callback(self._agent, callback, self._notice))

    async def edit(self, reply: Reply) -> None:
        """A redraw that is not the last word (a question answered, its turn to come)."""
        await self._redraw(reply, ack=False)

    async def finish(self, reply: Reply | None) -> None:
        """The last word: the notice, the redraw (if any) and the ack, in one call."""
        if self.acked:
            return
        if reply is not None and reply.text and self._update.message_id is not None:
            self.acked = await self._redraw(reply, ack=True)
            return
        if self._answered:
            return  # nothing left to send: acked by the next poll
        self._answered = True
        callback, ack = self._update.callback_id or "", [self._update.id]
        try:
            await self._io.answer_callback(self._agent, callback, self._notice or "", ack=ack)
            self.acked = True
        except TelegramIOFailed as error:  # acked by the next poll
            logger.info("update %s: the tap's answer failed (%s)", self._update.id, error)

    async def _redraw(self, reply: Reply, *, ack: bool) -> bool:
        """Edit the tapped message, with the notice if it is not out yet; whether acked."""
        message_id = self._update.message_id
        if not reply.text or message_id is None:
            return False
        with_notice = not self._answered and self._notice is not None
        self._answered = self._answered or with_notice
        try:
            await self._io.edit(
                self._agent,
                self._chat,
                message_id,
                reply,
                callback_id=self._update.callback_id if with_notice else None,
                notice=self._notice if with_notice else None,
                ack=[self._update.id] if ack else [],
            )
        except TelegramIOFailed as error:  # done is done: the notice told the user
            logger.warning(
                "update %s: the message could not be edited (%s)", self._update.id, error
            )
            return False
        return ack


def _reply_key(update: InboxUpdate) -> str:
    """The idempotency key of the reply to ``update``: the same on every redelivery."""
    return f"reply:{update.id}"
