"""Per-chat pacing: Telegram allows about one message a second to a chat, with short bursts."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio


class Pacer:
    """A token bucket per chat: ``burst`` messages at once, then one every ``interval_s``."""

    def __init__(
        self,
        interval_s: float,
        burst: int,
        clock: Callable[[], float],
        sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
    ) -> None:
        self._interval_s = interval_s
        self._burst = burst
        self._clock = clock
        self._sleep = sleep
        self._buckets: dict[str, tuple[float, float]] = {}  # chat → (tokens, at)

    async def wait_turn(self, chat: str) -> None:
        if self._interval_s <= 0:
            return
        now = self._clock()
        tokens, at = self._buckets.get(chat, (float(self._burst), now))
        tokens = min(float(self._burst), tokens + (now - at) / self._interval_s)
        if tokens < 1:
            wait = (1 - tokens) * self._interval_s
            await self._sleep(wait)
            now, tokens = now + wait, 1.0
        self._buckets[chat] = (tokens - 1, now)
