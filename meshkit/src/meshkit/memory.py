"""Give freed memory back to the system, as a long-running server on a small machine should.

glibc's malloc keeps the pages it has handed out: what a server frees (the imports, the
schemas and the docstring parsing of its start, the buffers of a burst of requests)
stays resident unless it happens to sit at the top of the heap. ``malloc_trim(0)``
returns every free page. A served server trims once it has started, then in quiet
moments (no request for a second, checked every 30 s) when requests have come since
the last trim. Elsewhere than glibc (musl, macOS) this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import time
from collections.abc import Callable

import anyio

logger = logging.getLogger(__name__)

EVERY_S = 30.0
QUIET_S = 1.0


def _load_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
        trim = libc.malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


_trim = _load_trim()
_request_at = 0.0  # time.monotonic() of the last request; 0.0: none since the last trim


def available() -> bool:
    return _trim is not None


def request_seen() -> None:
    """Called for every HTTP request (by ``meshkit.http``)."""
    global _request_at  # noqa: PLW0603
    _request_at = time.monotonic()


def trim() -> bool:
    """Return the free heap pages now; True when something was given back."""
    global _request_at  # noqa: PLW0603
    _request_at = 0.0
    return _trim is not None and _trim(0) == 1


async def keep_trimmed(every_s: float = EVERY_S, quiet_s: float = QUIET_S) -> None:
    """Trim now, then after requests, in a quiet moment. Runs until cancelled."""
    if _trim is None:
        return
    trim()
    while True:
        await anyio.sleep(every_s)
        if _request_at and time.monotonic() - _request_at >= quiet_s:
            trim()
