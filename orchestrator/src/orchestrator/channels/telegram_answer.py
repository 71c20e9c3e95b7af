"""Answering one accepted Telegram update: a message's turn, a button tap, or media.

The update's kind picks its handler from one table (``UpdateAnswerer.routes``, built
with the answerer):

- A text goes to the dispatcher; "typing…" shows from ``typing_after_s`` into the turn,
  refreshed every ``typing_every_s``, and stops when the reply is delivered.
- A tap never reaches the model: it is answered (the spinner on the button stops), done
  once, and its message edited; a tap that answers a question starts a turn whose reply
  is a new message.
- Media gets one line saying only text is read.
- Anything else (edited messages, service messages) is acked and ignored.
- Every reply is sent under the idempotency key ``reply:<update id>``: a turn redone after
  a crash delivers nothing twice.
- A message's reply without buttons is the last thing its update needs (the turn was
  stored before it): its send acks the update, in the same call. A reply with buttons (a
  proposal, a question's choices, /memory) has its message recorded after the send, the
  buttons acting there only, so its update is acked once that is done, by the channel;
  so are taps and updates that get no reply. (An open question has no buttons: the
  message recorded after its send only serves to show the typed answer there, which a
  crash in between leaves undrawn, the answer taken all the same.)
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from types import MappingProxyType

import anyio

from meshkit.wire.telegram_io import InboxUpdate, Kind, Sent
from orchestrator.channels.telegram_io import (
    TelegramIO,
    TelegramIOFailed,
    best_effort,
    without_bot_name,
)
from orchestrator.core.dispatch import Dispatcher, Reply
from orchestrator.core.routes import TapContext
from orchestrator.core.turn import AgentRuntime

logger = logging.getLogger(__name__)

# (agent, chat, update) -> whether the reply's send acked the update
UpdateHandler = Callable[[str, str, InboxUpdate], Awaitable[bool]]
MEDIA_REPLY = (
    "I can only read text for now: photos, voice notes, stickers and files are not "
    "supported. Tell me in words what you need."
)


class UpdateAnswerer:
    def __init__(
        self,
        dispatcher: Dispatcher,
        io: TelegramIO,
        *,
        typing_after_s: float,
        typing_every_s: float,
        sleep: Callable[[float], Awaitable[None]],
    ) -> None:
        self._dispatcher = dispatcher
        self._io = io
        self._typing_after_s = typing_after_s
        self._typing_every_s = typing_every_s
        self._sleep = sleep
        # Update kind → handler (the kinds: meshkit.wire.telegram_io).
        self.routes: Mapping[Kind, UpdateHandler] = MappingProxyType({
            "text": self._text,  # a turn (or a command), its reply delivered
            "callback": self._tap,  # a button tap: the dispatcher's tap routes
            "media": self._media,  # one line: only text is read
            "other": self._ignore,  # acked, nothing said
        })  # fmt: skip

    async def answer(self, runtime: AgentRuntime, update: InboxUpdate) -> bool:
        """Answer ``update`` and deliver what it says back; whether its reply's send acked
        it (else the channel acks it)."""
        return await self.routes[update.kind](runtime.id, str(update.chat_id), update)

    async def send(
        self, agent: str, update: InboxUpdate, reply: Reply, *, ack: bool = False
    ) -> Sent:
        """The reply to ``update``, once however often it is sent (and with ``ack``, the
        update acked once it is)."""
        key, acked = _reply_key(update), [update.id] if ack else []
        return await self._io.send(agent, str(update.chat_id), reply, key, ack=acked)

    async def _text(self, agent: str, chat: str, update: InboxUpdate) -> bool:
        typing = anyio.CancelScope()
        acked = False

        async def keep_typing() -> None:
            with typing:
                await self._keep_typing(agent, chat)

        async def deliver(reply: Reply) -> str | None:
            nonlocal acked
            typing.cancel()  # the answer is here: no more "typing…"
            ack = [] if reply.buttons else [update.id]  # with buttons: once they are recorded
            shown_in = await self._io.deliver(agent, chat, reply, _reply_key(update), ack=ack)
            acked = acked or bool(ack)
            return shown_in

        async def edit_message(message_id: str, reply: Reply) -> None:
            # A question answered by this text shows its answer (clarify).
            if message_id.isdigit():
                await best_effort(self._io.edit(agent, chat, int(message_id), reply))

        failed: TelegramIOFailed | None = None
        async with anyio.create_task_group() as turn:
            turn.start_soon(keep_typing)
            try:
                await self._dispatcher.on_text(
                    agent,
                    chat,
                    without_bot_name(update.text or ""),
                    message_id=update.id,
                    user_id=update.user_id,
                    deliver=deliver,
                    edit_message=edit_message,
                )
            except TelegramIOFailed as error:
                failed = error  # raised below, as itself rather than in an exception group
            finally:
                typing.cancel()
        if failed is not None:
            raise failed
        return acked

    async def _media(self, agent: str, chat: str, update: InboxUpdate) -> bool:
        await self.send(agent, update, Reply(MEDIA_REPLY), ack=True)
        return True

    async def _ignore(self, agent: str, chat: str, update: InboxUpdate) -> bool:
        return False

    async def _tap(self, agent: str, chat: str, update: InboxUpdate) -> bool:
        answered = False

        async def answer(text: str) -> None:
            nonlocal answered
            answered = True
            await best_effort(self._io.answer_callback(agent, update.callback_id or "", text))

        async def edit(reply: Reply) -> None:
            if not reply.text or update.message_id is None:
                return
            try:
                await self._io.edit(agent, chat, update.message_id, reply)
            except TelegramIOFailed as error:  # done is done: the notice told the user
                logger.warning("update %s: the message could not be edited (%s)", update.id, error)

        async def deliver(reply: Reply) -> str | None:
            sent = await self.send(agent, update, reply)
            return str(sent.message_ids[-1]) if sent.message_ids else None

        shown_in = None if update.message_id is None else str(update.message_id)
        tap = TapContext(
            agent=agent,
            chat=chat,
            user=str(update.user_id),
            message=shown_in,
            data=update.callback_data or "",
            answer=answer,
            edit=edit,
            deliver=deliver,
            tap_id=update.id,
        )
        await self._dispatcher.on_callback(tap)
        if not answered:
            await answer("")
        return False

    async def _keep_typing(self, agent: str, chat: str) -> None:
        """ "typing…" from a moment into the turn until it ends (Telegram shows it ~5 s).

        Not at once: an answer within ``typing_after_s`` (commands, a fast model) needs
        no indicator, and each chat action is a Bot API call competing with the turn.
        """
        await self._sleep(self._typing_after_s)
        while True:
            await best_effort(self._io.typing(agent, chat))
            await self._sleep(self._typing_every_s)


def _reply_key(update: InboxUpdate) -> str:
    """The idempotency key of the reply to ``update``: the same on every redelivery."""
    return f"reply:{update.id}"
