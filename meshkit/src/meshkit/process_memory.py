"""Give freed memory back to the system, as a long-running server on a small machine should.

glibc's malloc keeps the pages it has handed out: what a server frees (the imports, the
schemas and the docstring parsing of its start, the buffers of a burst of requests)
stays resident unless it happens to sit at the top of the heap. ``malloc_trim(0)``
(glibc's documented malloc_trim(3)) returns every free page. A served server trims once
it has started, then in quiet moments (no request for a second, checked every 30 s)
when requests have come since the last trim. Elsewhere than glibc (musl, macOS) this
does nothing.

Unnecessary once CPython's allocator returns freed arenas to the system by itself (the
mimalloc-based allocator of free-threaded builds does), or glibc trims below the top of
the heap on free.
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


class Trimmer:
    """Trims the heap after requests, in quiet moments; one per served process."""

    def __init__(self, every_s: float = EVERY_S, quiet_s: float = QUIET_S) -> None:
        self._trim = _load_trim()
        self._every_s = every_s
        self._quiet_s = quiet_s
        self._request_at = 0.0  # time.monotonic() of the last request; 0.0: none since a trim
        self.trims = 0  # how many times it has trimmed

    @property
    def available(self) -> bool:
        return self._trim is not None

    def request_seen(self) -> None:
        """Called for every HTTP request (by ``meshkit.http``)."""
        self._request_at = time.monotonic()

    def trim(self) -> bool:
        """Return the free heap pages now; True when something was given back."""
        self._request_at = 0.0
        if self._trim is None:
            return False
        self.trims += 1
        return self._trim(0) == 1

    async def keep_trimmed(self) -> None:
        """Trim now, then after requests, in a quiet moment. Runs until cancelled."""
        if self._trim is None:
            return
        self.trim()
        while True:
            await anyio.sleep(self._every_s)
            if self._request_at and time.monotonic() - self._request_at >= self._quiet_s:
                self.trim()
