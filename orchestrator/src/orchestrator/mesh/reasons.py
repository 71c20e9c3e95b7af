"""Why a server is down, in a few words for ``/status`` and the log.

The errors a connection fails with carry URLs, response bodies and the server's own
messages: none of that is shown. The reason is read from the error's type (and an HTTP
status code), following the chain of causes down to the first one it recognises.
"""

from __future__ import annotations

import itertools

import anyio
import httpx2
import mcp_types
from mcp.shared.exceptions import MCPError

# fastmcp's words for an initialize that timed out; its exception-group handler sometimes
# re-raises it without the TimeoutError it came from (pinned: tests/meshkit/test_library_seams.py).
_INIT_TIMED_OUT = "Failed to initialize server session"
_MAX_LOOKS = 24  # errors looked at, at most (a chain is a few links long)


def reason_of(error: BaseException) -> str:
    """``connection refused``, ``no answer in time``, ``HTTP 401 (token refused)``, …"""
    # Breadth first through causes and the members of exception groups (task groups wrap).
    queue: list[BaseException] = [error]
    for seen in itertools.islice(queue, _MAX_LOOKS):  # sees what is appended below
        known = _known(seen)
        if known is not None:
            return known
        if isinstance(seen, BaseExceptionGroup):
            queue.extend(seen.exceptions)
        queue.extend(e for e in (seen.__cause__, seen.__context__) if e is not None)
    return f"connection failed ({type(error).__name__})"


def _known(error: BaseException) -> str | None:  # noqa: PLR0911 (one answer per kind)
    if isinstance(error, httpx2.HTTPStatusError):
        code = error.response.status_code
        return f"HTTP {code} (token refused)" if code in (401, 403) else f"HTTP {code}"
    if isinstance(error, httpx2.ConnectError | ConnectionRefusedError):
        return "connection refused"
    if isinstance(error, httpx2.TimeoutException | TimeoutError):
        return "no answer in time"
    if isinstance(error, httpx2.TransportError):
        return "connection lost"
    if isinstance(error, anyio.ClosedResourceError | anyio.BrokenResourceError | anyio.EndOfStream):
        return "connection closed"
    if isinstance(error, MCPError):
        if error.code == mcp_types.CONNECTION_CLOSED:
            return "connection closed"
        if error.code == mcp_types.INTERNAL_ERROR:  # how the SDK reports a 401 or a 5xx
            return "HTTP error (check the token and the server's log)"
        return f"MCP error {error.code}"
    if isinstance(error, RuntimeError) and str(error) == _INIT_TIMED_OUT:
        return "no answer in time"
    if isinstance(error, FileNotFoundError):
        return "command not found"
    if isinstance(error, OSError) and error.strerror:
        return error.strerror.lower()
    return None
