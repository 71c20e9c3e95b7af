"""Retry a model call by the cause of its failure.

    cause                                    tries  wait between         then raise
    no answer (connection error, timeout)    3      backoff with jitter  LLMUnavailable
    408, 409, 5xx (529 overloaded too)       3      backoff with jitter  LLMUnavailable
    429 rate limit                           3      retry-after          LLMRateLimited
    429 insufficient_quota                   1                           LLMQuotaExceeded
    401, 403                                 1                           LLMAuthFailed
    400, 404, 422 and any other status       1                           LLMRejected

A ``retry-after`` / ``retry-after-ms`` header is waited exactly when it asks for at most
30 s; a longer one ends the tries at once (``LLMRateLimited.retry_after_s`` tells the
user how long). Without one, a rate limit backs off like the rest.

The client library's own retries are off (``max_retries=0``) so this policy is the
only one. It does not know that library: the one module that imports it turns the
library's errors into :class:`CallFailed`.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import logging
import math
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

import anyio

from orchestrator.llm.errors import (
    LLMAuthFailed,
    LLMError,
    LLMQuotaExceeded,
    LLMRateLimited,
    LLMRejected,
    LLMUnavailable,
)

logger = logging.getLogger(__name__)

T = TypeVar("T")

QUOTA_CODE = "insufficient_quota"


class CallFailed(Exception):
    """A model call that got no answer (``status`` None) or an HTTP error answer.

    ``code`` is the provider's error code (``error.code`` in the body); ``headers``
    the answer's headers, lower-cased. The text holds only these, never the body.
    """

    def __init__(
        self,
        status: int | None,
        *,
        code: str | None = None,
        headers: Mapping[str, str] | None = None,
        timed_out: bool = False,
    ) -> None:
        self.status = status
        self.code = code
        self.headers = {key.lower(): value for key, value in (headers or {}).items()}
        self.timed_out = timed_out
        if status is None:
            text = "timed out" if timed_out else "connection failed"
        else:
            text = f"HTTP {status}" + (f" {code}" if code else "")
        super().__init__(text)


def retry_after_s(headers: Mapping[str, str], now: float) -> float | None:
    """Seconds to wait as the answer asks: ``retry-after-ms``, ``retry-after`` (seconds or
    an HTTP date, relative to ``now``); None when absent or unreadable."""
    candidates = (("retry-after-ms", 1000.0), ("retry-after", 1.0))
    for name, divisor in candidates:
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / divisor
        except ValueError:
            continue
        return max(0.0, seconds) if math.isfinite(seconds) else None
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # "-0000": HTTP dates are UTC anyway
        when = when.replace(tzinfo=dt.UTC)
    return max(0.0, when.timestamp() - now)


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try. ``sleep``, ``random`` and ``clock`` are injected so tests never wait."""

    attempts: int = 3
    backoff_s: float = 1.0
    max_backoff_s: float = 8.0
    max_retry_after_s: float = 30.0
    sleep: Callable[[float], Awaitable[None]] = field(default=anyio.sleep, repr=False)
    random: Callable[[], float] = field(default=random.random, repr=False)
    clock: Callable[[], float] = field(default=time.time, repr=False)

    async def run(self, call: Callable[[], Awaitable[T]], *, what: str = "LLM call") -> T:
        """Await ``call()`` until it succeeds or the policy gives up with an ``LLMError``."""
        attempt = 1
        while True:
            try:
                return await call()
            except CallFailed as failure:
                error, wait = self.verdict(failure, attempt)
                if wait is None or attempt >= self.attempts:
                    logger.warning("%s failed: %s", what, error)
                    raise error from failure
                logger.info(
                    "%s failed (%s): retry %d of %d in %.1f s",
                    what,
                    failure,
                    attempt,
                    self.attempts - 1,
                    wait,
                )
                await self.sleep(wait)
                attempt += 1

    def verdict(self, failure: CallFailed, attempt: int) -> tuple[LLMError, float | None]:
        """The error to raise if this is the end, and the wait before a retry (None: never)."""
        detail = f"{failure} (attempt {attempt} of at most {self.attempts})"
        status = failure.status
        told = retry_after_s(failure.headers, self.clock())
        error: LLMError
        wait: float | None = None
        if status == 429 and failure.code == QUOTA_CODE:
            error = LLMQuotaExceeded(detail)
        elif status == 429:
            error = LLMRateLimited(detail, retry_after_s=told)
            wait = self._wait(told, attempt)
        elif status in (401, 403):
            error = LLMAuthFailed(detail)
        elif status is None or status in (408, 409) or status >= 500:
            error = LLMUnavailable(detail)
            wait = self._wait(told, attempt)
        else:
            error = LLMRejected(detail)
        return error, wait

    def _wait(self, told: float | None, attempt: int) -> float | None:
        """What the server asked for if that is short enough (None if not), else a backoff."""
        if told is not None:
            return told if told <= self.max_retry_after_s else None
        # Exponential, then up to 25 % shorter at random so clients do not retry in step.
        delay = min(self.max_backoff_s, self.backoff_s * 2.0 ** (attempt - 1))
        return delay * (1 - 0.25 * self.random())
