"""Connection limits uvicorn lacks, so slow or many clients cannot hold a server.

What uvicorn 0.54 (``http="httptools"``) offers, read in its source: ``timeout_keep_alive``
closes a connection idle *after* a response; ``limit_concurrency`` answers 503 to every
new request once that many connections are open, idle ones included (so idle connections
would lock real clients out, not the other way round); ``h11_max_incomplete_event_size``
bounds the head with h11 only. Nothing bounds the time a client takes to send a request
head: a connection that never sends a byte, or sends its headers a byte at a time
(slowloris), is held for ever.

``LimitedHttpProtocol`` is uvicorn's httptools protocol, given to ``Config(http=...)``
(its extension point for a protocol class) with three limits:

- **head deadline**: from the moment a connection waits for a request (accepted, or its
  last response sent) its request head (request line and headers) must be complete within
  ``header_timeout_s``; else 408 (or a silent close if it sent nothing) and close;
- **head size**: a head over ``max_header_bytes`` gets 431 and close, however it is cut
  into pieces: the bytes of pieces that leave it incomplete are counted as they come, and
  the request line and headers the parser hands over as they complete, so the piece
  that ends the head (which may carry a body too) is counted exactly;
- **connection cap**: over ``max_connections`` open connections, the one that has waited
  longest for a request head is closed to make room (idle and slow clients give way to a
  new one); if every connection is serving a request, the new one gets 503.

The request *body* is bounded by the HTTP guard (``meshkit.http``: 408 when it does not
arrive within ``MESH_BODY_TIMEOUT_S``), where the ASGI app reads it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

logger = logging.getLogger(__name__)

LINGER_S = 2.0  # how long a refused connection's further input is read and dropped
_REASONS = {
    408: b"Request Timeout",
    431: b"Request Header Fields Too Large",
    503: b"Service Unavailable",
}


class Throttled:
    """Log a repeated event at most once per ``every_s``, with how many were not logged."""

    def __init__(self, every_s: float = 60.0) -> None:
        self._every_s = every_s
        self._last: dict[str, float] = {}
        self._unlogged: dict[str, int] = {}

    def note(self, key: str, message: str) -> None:
        now = time.monotonic()
        if now - self._last.get(key, -self._every_s) < self._every_s:
            self._unlogged[key] = self._unlogged.get(key, 0) + 1
            return
        self._last[key] = now
        skipped = self._unlogged.pop(key, 0)
        suffix = f" ({skipped} more since the last such line)" if skipped else ""
        logger.warning("%s%s", message, suffix)


@dataclass(frozen=True)
class Limits:
    header_timeout_s: float = 10.0
    max_connections: int = 200
    max_header_bytes: int = 64 * 1024
    log: Throttled = field(default_factory=Throttled, compare=False)


class LimitedHttpProtocol(HttpToolsProtocol):
    limits: ClassVar[Limits] = Limits()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_deadline: asyncio.TimerHandle | None = None
        self._head_bytes = 0
        self._head_parsed = 0
        self._waiting_since = 0.0
        self._refused = False

    @property
    def waiting_for_head(self) -> bool:
        return self._head_deadline is not None

    @property
    def idle(self) -> bool:
        """Serving no request: waiting for a head, or refused and about to close."""
        return self.waiting_for_head or self._refused

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._await_head()
        self._make_room()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_waiting()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return  # answered already: what still comes is dropped
        super().data_received(data)
        if self.waiting_for_head:  # this data did not complete the head
            self._head_bytes += len(data)
            if self._head_bytes > self.limits.max_header_bytes:
                self._head_too_large()

    def _parsed(self, size: int) -> None:
        """Count a part of the head the parser completed (it may have come in pieces)."""
        self._head_parsed += size
        if self._head_parsed > self.limits.max_header_bytes and not self._refused:
            self._head_too_large()

    def _head_too_large(self) -> None:
        self.limits.log.note(
            "head", f"closed a connection: request head over {self.limits.max_header_bytes} bytes"
        )
        self._refuse(431)

    def on_message_begin(self) -> None:
        self._head_parsed = 0  # a new head (a pipelined one may begin before an answer)
        super().on_message_begin()

    def on_url(self, url: bytes) -> None:
        self._parsed(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._parsed(len(name) + len(value) + 4)  # ": " and CRLF
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._stop_waiting()
        if self._refused:
            return  # no request is made of a refused head
        super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        if not self._refused:
            super().on_body(body)

    def on_message_complete(self) -> None:
        if not self._refused:
            super().on_message_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        # Waiting for the next request (a pipelined one may have started instead).
        if not self.transport.is_closing() and self.cycle.response_complete:
            self._await_head()

    def _await_head(self) -> None:
        self._stop_waiting()
        self._head_bytes = 0
        self._waiting_since = time.monotonic()
        self._head_deadline = self.loop.call_later(self.limits.header_timeout_s, self._too_slow)

    def _stop_waiting(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _too_slow(self) -> None:
        self._head_deadline = None
        if self._head_bytes:
            self.limits.log.note(
                "slow",
                "closed a connection: no complete request head within "
                f"{self.limits.header_timeout_s:g} s (MESH_HEADER_TIMEOUT_S)",
            )
            self._refuse(408)
        elif not self.transport.is_closing():
            self.transport.close()  # it never began a request: nothing to answer

    def _make_room(self) -> None:
        open_ = [
            c
            for c in self.connections
            if isinstance(c, LimitedHttpProtocol) and not c.transport.is_closing()
        ]
        if len(open_) <= self.limits.max_connections:
            return
        waiting = [c for c in open_ if c is not self and c.idle]
        self.limits.log.note(
            "full",
            f"{self.limits.max_connections} connections open (MESH_MAX_CONNECTIONS): "
            + ("closed the one idle longest" if waiting else "all busy, refused a new one"),
        )
        if waiting:
            oldest = min(waiting, key=lambda c: c._waiting_since)
            oldest._stop_waiting()
            oldest.transport.close()
        else:
            self._refuse(503)

    def _refuse(self, status: int) -> None:
        self._stop_waiting()
        if self.transport.is_closing():
            return
        body = _REASONS[status]
        self.transport.write(
            b"HTTP/1.1 %d %s\r\ncontent-type: text/plain\r\ncontent-length: %d\r\n"
            b"connection: close\r\n\r\n%s" % (status, body, len(body), body)
        )
        # A lingering close: closing with the client's input unread would make the kernel
        # reset the connection, and the client could lose the answer. Send it and a FIN,
        # drop what still comes, close when the client does or after LINGER_S.
        self._refused = True
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.loop.call_later(LINGER_S, self.transport.close)


def protocol_with(limits: Limits) -> type[LimitedHttpProtocol]:
    """The protocol class to give ``uvicorn.Config(http=...)`` for these limits."""
    return type("LimitedHttpProtocol", (LimitedHttpProtocol,), {"limits": limits})
