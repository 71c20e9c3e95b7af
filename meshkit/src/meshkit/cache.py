"""A small TTL cache with a size bound and an injected clock (no background tasks)."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class TTLCache(Generic[V]):
    """Least-recently-used eviction past ``max_entries``; entries expire after ``ttl_s``."""

    def __init__(
        self, *, max_entries: int, ttl_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if max_entries < 1 or ttl_s <= 0:
            raise ValueError("max_entries must be >= 1 and ttl_s > 0")
        self._entries: OrderedDict[Hashable, tuple[float, V]] = OrderedDict()
        self._max = max_entries
        self._ttl = ttl_s
        self._clock = clock

    def get(self, key: Hashable) -> V | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        expires, value = entry
        if self._clock() >= expires:
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return value

    def put(self, key: Hashable, value: V) -> None:
        self._entries[key] = (self._clock() + self._ttl, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)
