"""The console channel: a terminal conversation through the same dispatch as Telegram.

Buttons are shown as numbered choices; typing the number taps the button.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import AsyncIterator, Callable

import anyio
import anyio.from_thread
import anyio.lowlevel

from orchestrator.core.dispatch import Button, Dispatcher, Reply
from orchestrator.core.turn import arguments_preview
from orchestrator.llm.base import FunctionCall
from orchestrator.mesh.tools import ToolInfo

CHAT_ID = "console"
USER_ID = "console"
DIM, RESET = "\033[2m", "\033[0m"


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
        color: bool | None = None,
    ) -> None:
        self._dispatcher = dispatcher
        self._agent_id = agent_id
        self._write = write or (lambda text: print(text, flush=True))
        self._color = sys.stdout.isatty() if color is None else color
        self._choices: list[Button] = []

    async def run(self, lines: AsyncIterator[str]) -> None:
        runtime = self._dispatcher.agents[self._agent_id]
        self._write(
            f"{runtime.agent.entry.name} here (model {runtime.llm.model}). "
            "Type a message; /help for commands; Ctrl-D to leave."
        )
        self._prompt()
        async for raw in lines:
            line = raw.strip()
            if line:
                await self._handle(line)
            self._prompt()
        self._write("")

    async def _handle(self, line: str) -> None:
        if self._choices and line.isdigit() and 1 <= int(line) <= len(self._choices):
            button = self._choices[int(line) - 1]
            await self._dispatcher.on_callback(
                self._agent_id, CHAT_ID, USER_ID, button.data, self._notice, self._edited
            )
            return
        reply = await self._dispatcher.on_text(
            self._agent_id, CHAT_ID, line, observe=self._show_tool, user_id=USER_ID
        )
        self._show(reply)

    async def _edited(self, reply: Reply) -> None:
        self._show(reply)

    async def _notice(self, text: str) -> None:
        self._write(f"{DIM}  ({text}){RESET}" if self._color else f"  ({text})")

    def _show(self, reply: Reply) -> None:
        self._write(reply.text)
        self._choices = [button for row in reply.buttons for button in row]
        for number, button in enumerate(self._choices, start=1):
            self._write(f"  [{number}] {button.label}")

    async def _show_tool(self, tool: ToolInfo | None, call: FunctionCall) -> None:
        label = tool.title if tool else call.name
        text = f"  … {label} ({arguments_preview(call)})"
        self._write(f"{DIM}{text}{RESET}" if self._color else text)

    def _prompt(self) -> None:
        if self._color:
            print("› ", end="", flush=True)
