"""A reply shown while the model writes it: Telegram's drafts, else a placeholder edited.

    the turn starts   nothing for ``first_after_s``: a reply done by then is simply sent
    text, or a tool   the draft shows the reply so far, or while tools run what they do
                      ("⏳ Daily forecast: location=Paris…"); changed at most every ``every_s``
                      (longer after Telegram's 429: ``StreamPace``)
    the reply         sent as an unstreamed turn's is (the same parts and buttons, under
                      ``reply:<update>``); nothing is shown after it
    /stop             what was written stays: sent under ``reply:<update>``, marked stopped

Where Telegram refuses drafts, the agent's replies get a placeholder from then on: a
message sent once under ``draft:<update>`` (a turn redone after a crash finds the same
one), edited in place at most every ``edit_every_s`` (Telegram's pace for a chat), which
the reply then takes over (telegram-io's ``replace``: its first part is the placeholder,
edited). A change Telegram would not take now (429, no answer) is skipped: the next shows.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import anyio

from orchestrator.channels.telegram_io import (
    TelegramBusy,
    TelegramIO,
    TelegramIOUnavailable,
    TelegramRefused,
)
from orchestrator.core.replies import Reply
from orchestrator.core.turn import arguments_preview
from orchestrator.llm.base import FunctionCall
from orchestrator.mesh.tools import ToolInfo

logger = logging.getLogger(__name__)

STOPPED = "⏹ Stopped."
BUSY_S = 2.0  # the first wait after a change Telegram would not take now
MAX_SHOWN = 3800  # characters of the reply so far a draft shows (its end): within 4096


@dataclass(frozen=True)
class StreamPace:
    """How often a streamed reply changes on screen. Telegram animates the changes of a
    draft, so one a second reads smoothly, and each costs a call (~15 ms of CPU here); an
    edit counts against a chat's messages, about 20 a minute. After a change Telegram
    would not take now (429), the next waits ``BUSY_S``, twice as long after another, up to
    ``busy_max_s``."""

    first_after_s: float = 1.0
    every_s: float = 1.0
    edit_every_s: float = 3.0
    busy_max_s: float = 16.0


STREAMED = StreamPace()  # the default pace


class ReplyStream:
    """One streamed reply: ``writing`` and ``calling`` are the turn's ``writing`` and
    ``observe``; ``run`` shows what they say until ``close``. ``placeholders`` holds the
    agents whose drafts Telegram refused (shared by the channel's streams)."""

    def __init__(
        self,
        io: TelegramIO,
        agent: str,
        chat: str,
        update: str,
        *,
        draft_id: int,
        pace: StreamPace,
        placeholders: set[str],
        sleep: Callable[[float], Awaitable[None]],
    ) -> None:
        self._io = io
        self._agent = agent
        self._chat = chat
        self._update = update
        self._draft_id = draft_id
        self._pace = pace
        self._placeholders = placeholders
        self._sleep = sleep
        self._text = ""  # what the model has written so far
        self._doing: list[str] = []  # the tools running, as status lines
        self._changed = anyio.Event()
        self._lock = anyio.Lock()  # one change on its way at a time; close waits for it
        self._closed = False
        self._busy_s = 0.0  # the wait after a change Telegram would not take (doubling)
        self._scope = anyio.CancelScope()
        self.shown = ""  # what is on screen
        self.placeholder: int | None = None  # the placeholder's message id, once sent

    async def writing(self, text: str) -> None:
        self._text, self._doing = text, []
        self._changed.set()

    async def calling(self, tool: ToolInfo | None, call: FunctionCall) -> None:
        label = tool.title if tool is not None else call.name
        preview = arguments_preview(call)
        self._doing.append(f"⏳ {label}: {preview}…" if preview else f"⏳ {label}…")
        self._changed.set()

    async def run(self) -> None:
        """Show each change, paced, from ``first_after_s`` on, until closed."""
        with self._scope:
            await self._sleep(self._pace.first_after_s)
            while True:
                await self._changed.wait()
                self._changed = anyio.Event()
                async with self._lock:
                    if self._closed:
                        return
                    with anyio.CancelScope(shield=True):  # close waits for it instead
                        await self._show(self._view())
                drafting = self._agent not in self._placeholders
                pace = self._pace.every_s if drafting else self._pace.edit_every_s
                await self._sleep(max(pace, self._busy_s))

    async def close(self) -> int | None:
        """Nothing more is shown (a change on its way arrives first); the placeholder the
        reply takes the place of, if any."""
        self._scope.cancel()
        async with self._lock:
            self._closed = True
        return self.placeholder

    def stopped(self) -> Reply | None:
        """What stays of a turn ``/stop`` ended: the text written so far, marked; None when
        nothing was shown (a draft lapses by itself)."""
        if not self.shown:
            return None
        return Reply(f"{self._text.rstrip()}\n\n{STOPPED}" if self._text.strip() else STOPPED)

    def _view(self) -> str:
        text = self._text if len(self._text) <= MAX_SHOWN else "…" + self._text[-MAX_SHOWN:]
        return "\n\n".join(filter(None, [text.strip(), "\n".join(self._doing)]))

    async def _show(self, view: str) -> None:
        if not view.strip() or view == self.shown:
            return
        try:
            if self._agent in self._placeholders or not await self._drafted(view):
                await self._edit(view)
        except (TelegramBusy, TelegramIOUnavailable) as error:  # a later change shows
            self._busy_s = min(max(2 * self._busy_s, BUSY_S), self._pace.busy_max_s)
            logger.info("agent %s: a streamed change was skipped (%s)", self._agent, error)
            return
        except TelegramRefused as error:
            logger.warning("agent %s: the placeholder was refused (%s)", self._agent, error)
            return
        self.shown, self._busy_s = view, 0.0

    async def _drafted(self, view: str) -> bool:
        """``view`` shown as the draft; False when Telegram refuses drafts here (the agent's
        replies get placeholders from now on)."""
        try:
            await self._io.draft(self._agent, self._chat, self._draft_id, view)
        except TelegramBusy:
            raise
        except TelegramRefused as error:
            logger.info(
                "agent %s: Telegram refused a draft (%s); placeholders from now on",
                self._agent, error,
            )  # fmt: skip
            self._placeholders.add(self._agent)
            return False
        return True

    async def _edit(self, view: str) -> None:
        if self.placeholder is None:
            sent = await self._io.send(
                self._agent, self._chat, Reply(view), f"draft:{self._update}"
            )
            self.placeholder = sent.message_ids[0] if sent.message_ids else None
            if not sent.duplicate:
                return
        if self.placeholder is not None:  # a placeholder of an earlier try: shown anew
            await self._io.edit(self._agent, self._chat, self.placeholder, Reply(view))
