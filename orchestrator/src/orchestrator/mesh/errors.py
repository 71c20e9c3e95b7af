"""Why a tool call gave no result, by type, for the code that made it.

    ToolCallError                 a call to ``server__tool`` gave no result
     ├── ServerUnavailable        the server is not connected (down, restarting, not found)
     ├── CallTimedOut             no answer within the timeout; it may still complete
     ├── CallLost                 lost in transport and not sent again (it may change things)
     ├── CallRefused              the server refused the request (protocol error, bad arguments)
     ├── ToolFailed               the tool ran and failed: ``message`` is the server's own words
     └── BrokenContract           an internal tool answered outside its wire shape (a bug)

Internal callers branch on these types (``answered`` tells whether the server saw and
settled the call); only :mod:`orchestrator.mesh.bridge` turns them into text for the model.
"""

from __future__ import annotations


class ToolCallError(Exception):
    """A call that gave no result. ``tool`` is the qualified name (``server__tool``)."""

    answered = False  # True: the server settled the call; sending it again changes nothing

    def __init__(self, tool: str, detail: str = "") -> None:
        super().__init__(f"{tool}: {detail}" if detail else tool)
        self.tool = tool
        self.detail = detail

    @property
    def server(self) -> str:
        return self.tool.split("__", 1)[0]


class ServerUnavailable(ToolCallError):
    """The server is not connected, or has no such tool right now."""


class CallTimedOut(ToolCallError):
    """No answer within ``timeout_s``: the call may still complete."""

    def __init__(self, tool: str, timeout_s: float) -> None:
        super().__init__(tool, f"no answer within {timeout_s:g} s")
        self.timeout_s = timeout_s


class CallLost(ToolCallError):
    """The call or its answer was lost in transport and, as it may change things, not resent."""


class CallRefused(ToolCallError):
    """The server refused the request (unknown tool, invalid arguments, denied)."""

    answered = True


class ToolFailed(ToolCallError):
    """The tool ran and reported a failure; ``message`` is written for the model."""

    answered = True

    def __init__(self, tool: str, message: str) -> None:
        super().__init__(tool, message)
        self.message = message


class BrokenContract(ToolCallError):
    """An internal tool's result does not have the shape both sides agreed on."""

    answered = True
