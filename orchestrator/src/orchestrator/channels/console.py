"""The console channel: a terminal conversation through the same dispatch as Telegram.

Buttons are shown as numbered choices; typing the number taps the button, and the
message's new lines are shown (not the whole answer again). Each answer shown is a
message with a number of its own, sent under a key of its own (``console:<n>``, the
n-th line typed), so a choice taps the buttons of the message they were shown with, as
on Telegram. On a terminal, "thinking…"
stands on the line while the model works, replaced by the tool lines and the answer.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import AsyncIterator, Callable

import anyio
import anyio.from_thread
import anyio.lowlevel

from meshkit.wire.pending_actions import Notice
from orchestrator.core.dispatch import Button, Dispatcher, Reply
from orchestrator.core.routes import Deliver, TapContext, TextContext
from orchestrator.core.turn import arguments_preview
from orchestrator.llm.base import FunctionCall
from orchestrator.mesh.tools import ToolInfo

CHAT_ID = "console"
USER_ID = "console"
DIM, RESET = "\033[2m", "\033[0m"
CLEAR_LINE = "\r\033[K"
THINKING = "thinking…"
GOODBYE = "Goodbye! The conversation is kept: come back with make chat."


async def stdin_lines() -> AsyncIterator[str]:
    """Lines typed on stdin until end of input.

    A daemon thread of its own blocks in ``readline``: a worker thread of the event
    loop would keep the interpreter from exiting on Ctrl-C until a line arrives.
    """
    send, receive = anyio.create_memory_object_stream[str](16)
    token = anyio.lowlevel.current_token()

    def read() -> None:
        try:
            for line in sys.stdin:
                anyio.from_thread.run(send.send, line, token=token)
            anyio.from_thread.run(send.aclose, token=token)
        except (RuntimeError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass  # the loop or the reader is gone: nobody is waiting for input any more

    threading.Thread(target=read, name="stdin", daemon=True).start()
    async with receive:
        async for line in receive:
            yield line


class Console:
    def __init__(
        self,
        dispatcher: Dispatcher,
        agent_id: str,
        *,
        write: Callable[[str], None] | None = None,
        transient: Callable[[str], None] | None = None,
        color: bool | None = None,
        logs: str | None = None,
    ) -> None:
        """``write`` shows a line; ``transient`` shows (or with "" clears) the status that
        stands on the current line (a terminal only); ``logs`` is where the logs go."""
        self._dispatcher = dispatcher
        self._agent_id = agent_id
        self._write = write or (lambda text: print(text, flush=True))
        self._color = sys.stdout.isatty() if color is None else color
        self._transient = transient or (_on_the_line if self._color else (lambda _: None))
        self._logs = logs
        self._choices: list[Button] = []
        self._shown: list[str] = []  # the lines of the message the choices belong to
        self._messages = 0  # answers shown so far: the last one's number is its message id
        self._keys: dict[str, str] = {}  # message id → the key it was sent under
        # message id → (agent, chat, user) of a notice shown here: its buttons tap as them
        self._notices: dict[str, tuple[str, str, str]] = {}
        self._lines = 0  # lines typed: each one's answers are sent under a key of its own
        self._thinking = False

    async def run(self, lines: AsyncIterator[str]) -> None:
        runtime = self._dispatcher.agents[self._agent_id]
        self._write(
            f"{runtime.agent.entry.name} here (model {runtime.llm.model}). "
            "Type a message; /help for commands; Ctrl-D to leave."
        )
        if self._logs:
            self._write(self._dim(f"(logs: {self._logs})"))
        self._prompt()
        async for raw in lines:
            line = raw.strip()
            if line:
                await self._handle(line)
            self._prompt()
        self._write("")
        self._write(GOODBYE)

    async def _handle(self, line: str) -> None:
        self._lines += 1
        deliver = self._deliverer(f"console:{self._lines}")
        if self._choices and line.isdigit() and 1 <= int(line) <= len(self._choices):
            button = self._choices[int(line) - 1]
            message_id = str(self._messages)  # the choices are those of the last answer
            self._set_thinking(True)  # a tap may take a while: a confirmed action, a turn
            agent, chat, user = self._notices.get(message_id, (self._agent_id, CHAT_ID, USER_ID))
            try:
                tap = TapContext(
                    agent=agent,
                    chat=chat,
                    user=user,
                    message=message_id,
                    data=button.data,
                    answer=self._notice,
                    edit=self._edited,
                    deliver=deliver,
                    key=self._keys.get(message_id),
                )
                await self._dispatcher.on_callback(tap)
            finally:
                self._set_thinking(False)
            return
        self._set_thinking(True)
        try:
            reply = await self._dispatcher.on_text(
                TextContext(
                    self._agent_id,
                    CHAT_ID,
                    line,
                    observe=self._show_tool,
                    user=USER_ID,
                    deliver=deliver,
                    edit_message=self._answered,
                ),
            )
        finally:
            self._set_thinking(False)
        if not reply.text:
            self._show(reply)  # nothing was delivered: no choices stand any more

    def _deliverer(self, key: str) -> Deliver:
        async def deliver(reply: Reply) -> str:
            """An answer, shown as a new message; its id."""
            self._show(reply)
            self._messages += 1
            self._keys[str(self._messages)] = key
            return str(self._messages)

        return Deliver(key, deliver, self._deliverer)

    async def notice(self, notice: Notice, reply: Reply) -> str:
        """What another client proposed or had done (the consent channel), as a message of
        its own. This terminal is its user's: its buttons tap as the user it is for."""
        thinking = self._thinking
        self._write("")
        self._show(reply)
        self._messages += 1
        message_id = str(self._messages)
        self._keys[message_id] = notice.key
        self._notices[message_id] = (notice.agent, notice.chat_id, notice.user_id)
        self._set_thinking(thinking)
        if not thinking:
            self._prompt()
        return message_id

    async def _edited(self, reply: Reply) -> None:
        """A tapped message changed: its new lines only, then its choices again."""
        new = [line for line in reply.text.splitlines() if line not in self._shown]
        thinking = self._thinking  # a tap's turn goes on after the edit (clarify)
        self._show(Reply("\n".join(new), reply.buttons), lines=reply.text.splitlines())
        self._set_thinking(thinking)

    async def _answered(self, message_id: str, reply: Reply) -> None:
        """A question answered by the text just typed: its answer line, as a note."""
        answer = reply.text.splitlines()[-1] if reply.text else ""
        self._note(answer)

    async def _notice(self, text: str) -> None:
        self._note(text)

    def _note(self, text: str) -> None:
        """A dim line in parentheses, below "thinking…" if that stands (it stands again after)."""
        thinking = self._thinking
        self._set_thinking(False)
        self._write(self._dim(f"  ({text})"))
        self._set_thinking(thinking)

    def _show(self, reply: Reply, lines: list[str] | None = None) -> None:
        self._set_thinking(False)
        if reply.text:
            self._write(reply.text)
        self._shown = lines if lines is not None else reply.text.splitlines()
        self._choices = [button for row in reply.buttons for button in row]
        for number, button in enumerate(self._choices, start=1):
            self._write(f"  [{number}] {button.label}")

    async def _show_tool(self, tool: ToolInfo | None, call: FunctionCall) -> None:
        self._set_thinking(False)
        label = tool.title if tool else call.name
        self._write(self._dim(f"  … {label} ({arguments_preview(call)})"))
        self._set_thinking(True)

    def _set_thinking(self, on: bool) -> None:
        if on != self._thinking:
            self._thinking = on
            self._transient(self._dim(THINKING) if on else "")

    def _dim(self, text: str) -> str:
        return f"{DIM}{text}{RESET}" if self._color else text

    def _prompt(self) -> None:
        if self._color:
            print("› ", end="", flush=True)


def _on_the_line(text: str) -> None:
    """A status on the terminal's current line (none: the line cleared), no newline."""
    print(f"{CLEAR_LINE}{text}", end="", flush=True)
