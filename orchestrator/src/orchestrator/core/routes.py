"""What a route hands its handler: one tap, one command, each as one small object.

The routes themselves are tables built once, at start-up, where a reader finds them:

- callback prefix → tap handler: ``Dispatcher.__init__`` (``pa``, ``pb``, ``cl``, ``mf``;
  ``rm`` given by the app, which builds the dispatcher with the reminders' handler);
- command → handler: ``Dispatcher.__init__`` too (``/jobs`` given by the app);
- update kind → handler: ``UpdateAnswerer.__init__`` (Telegram's text, callback, media).

Nothing is added to them later. A handler gets everything it needs in its context
(:class:`TextContext`, :class:`TapContext`, :class:`CommandContext`); following a
parameter means following one field of it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from orchestrator.core.replies import Reply
from orchestrator.core.runtime import AgentRuntime
from orchestrator.llm.base import FunctionCall, Image, Writing
from orchestrator.mesh.tools import ToolInfo

# Told of each tool call a turn makes (the tool, None when unknown, and the call).
ToolObserver = Callable[[ToolInfo | None, FunctionCall], Awaitable[None]]
# The tapped button's notice: stops its spinner.
Answer = Callable[[str], Coroutine[Any, Any, None]]
# Redraws the tapped message.
Edit = Callable[[Reply], Coroutine[Any, Any, None]]
# The tap's last word: the tapped message redrawn (None: left as it is), with the notice.
Finish = Callable[[Reply | None], Coroutine[Any, Any, None]]


@dataclass(frozen=True)
class Deliver:
    """Sends a reply under the channel's idempotency ``key`` (a redone turn's reply is
    delivered once); calling it answers the id of the message the reply's buttons are in
    (None: not known). The key is known before the send: a batch of proposed changes is
    bound to it when it is staged, so its buttons act in that message only."""

    key: str | None
    send: Callable[[Reply], Coroutine[Any, Any, str | None]]
    # The same way out under another key (None: the channel has no keys to keep apart).
    keyed: Callable[[str], Deliver] | None = None

    async def __call__(self, reply: Reply) -> str | None:
        return await self.send(reply)

    def under(self, key: str) -> Deliver:
        """A new message of the same chat, sent once under ``key`` (several answers to one
        tap: each its own message, each delivered once)."""
        return self.keyed(key) if self.keyed is not None else Deliver(key, self.send)


@dataclass(frozen=True)
class TapContext:
    """A tap on a button: who tapped, where, what the button carries, and the ways back.

    ``message`` is the id of the message the button is on, ``key`` the idempotency key
    that message was sent under (None: not known; such a tap does nothing): every button
    acts only in the message sent under the key it was bound to before the send (proposed
    changes by pending-actions, clarify and /memory by memory, a reminder's by the
    scheduler: ``fire:<firing key>``). ``deliver`` sends a new message
    (the turn a clarify answer starts); ``tap_id`` is the channel's id for the tap, the
    same when it is handed over again after a crash.

    ``answer`` gives the notice, ``edit`` redraws the message, ``finish`` (see
    :meth:`settle`) says the tap's last word: a channel may show a notice given shortly
    before it in the same call (Telegram: one call answers, edits and acks).
    """

    agent: str
    chat: str
    user: str
    message: str | None
    data: str
    answer: Answer
    edit: Edit
    deliver: Deliver | None = None
    tap_id: str | None = None
    key: str | None = None
    finish: Finish | None = None

    async def settle(self, reply: Reply | None = None) -> None:
        """The tap's last word, after its notice: ``reply`` redraws its message (None: left
        as it is); nothing of the tap is shown after it."""
        if self.finish is not None:
            await self.finish(reply)
        elif reply is not None:
            await self.edit(reply)


TapHandler = Callable[[TapContext], Awaitable[None]]
# Redraws message ``message_id`` of the chat (a question, once answered by text).
EditMessage = Callable[[str, Reply], Coroutine[Any, Any, None]]


@dataclass(frozen=True)
class TextContext:
    """A text in a chat: the agent, the chat, the words, who wrote them, and the ways back.

    ``message_id`` names the message across redeliveries (a Telegram update id), so a turn
    redone after a crash is stored once. ``deliver`` sends the reply under its key, which
    the reply's buttons are bound to before the send; ``edit_message`` redraws a question
    the text answers (clarify). A text not typed by the user (``from_user`` False: a
    scheduled prompt) never answers one. ``observe`` sees each tool call (the console, a
    streamed Telegram reply's status), ``writing`` the reply's text as the model writes it
    (None: not streamed); ``images`` are the photos the text came with (its caption).
    """

    agent: str
    chat: str
    text: str
    user: str | None = None
    message_id: str | None = None
    deliver: Deliver | None = None
    edit_message: EditMessage | None = None
    observe: ToolObserver | None = None
    writing: Writing | None = None
    from_user: bool = True
    images: tuple[Image, ...] = ()  # photos sent with the text (its caption): no command


@dataclass(frozen=True)
class FileContext:
    """A calendar file sent in a chat (an .ics, a forwarded invitation): who sent it, its
    name and text, the words sent with it, and where the import's proposal goes."""

    agent: str
    chat: str
    user: str
    name: str
    text: str
    caption: str
    deliver: Deliver | None = None


@dataclass(frozen=True)
class CommandContext:
    """A command typed in a chat: the agent, the chat, who typed it, and how to reply."""

    runtime: AgentRuntime
    chat: str
    user: str
    deliver: Deliver | None = None


@dataclass(frozen=True)
class Command:
    """A command's line in /help and Telegram's "/" menu, and what answers it.

    ``run``'s reply is delivered by the dispatcher (under ``deliver.key``, which its
    buttons are bound to). A ``serial`` command waits for the chat's running turn; /stop
    does not: it must reach it.
    """

    description: str
    run: Callable[[CommandContext], Awaitable[Reply]]
    serial: bool = True


# A component's lines in /status, for the asking agent.
StatusLines = Callable[[str], Awaitable[list[str]]]
