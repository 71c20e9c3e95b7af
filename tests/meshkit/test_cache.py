"""TTLCache: expiry by an injected clock, and a size bound with least-recently-used eviction."""

import pytest

from meshkit.cache import TTLCache


class SteppingClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> SteppingClock:
    return SteppingClock()


def test_a_value_is_served_until_its_ttl_has_passed(clock: SteppingClock) -> None:
    cache: TTLCache[str] = TTLCache(max_entries=4, ttl_s=60, clock=clock)
    cache.put("paris", "sunny")

    clock.now = 59.9
    assert cache.get("paris") == "sunny"
    clock.now = 60
    assert cache.get("paris") is None


def test_an_expired_entry_is_dropped_when_read(clock: SteppingClock) -> None:
    cache: TTLCache[str] = TTLCache(max_entries=4, ttl_s=60, clock=clock)
    cache.put("paris", "sunny")
    clock.now = 61

    cache.get("paris")

    assert len(cache) == 0


def test_putting_again_replaces_the_value_and_restarts_its_ttl(clock: SteppingClock) -> None:
    cache: TTLCache[str] = TTLCache(max_entries=4, ttl_s=60, clock=clock)
    cache.put("paris", "sunny")
    clock.now = 50
    cache.put("paris", "rainy")

    clock.now = 100
    assert cache.get("paris") == "rainy"
    assert len(cache) == 1


def test_the_cache_never_holds_more_than_its_bound(clock: SteppingClock) -> None:
    cache: TTLCache[int] = TTLCache(max_entries=3, ttl_s=60, clock=clock)
    for i in range(10):
        cache.put(i, i)

    assert len(cache) == 3
    assert [cache.get(i) for i in range(10)] == [None] * 7 + [7, 8, 9]


def test_the_least_recently_used_entry_is_evicted_first(clock: SteppingClock) -> None:
    cache: TTLCache[str] = TTLCache(max_entries=2, ttl_s=60, clock=clock)
    cache.put("paris", "sunny")
    cache.put("london", "foggy")
    cache.get("paris")  # paris is now the most recently used

    cache.put("zurich", "snowy")

    assert cache.get("london") is None
    assert cache.get("paris") == "sunny"
    assert cache.get("zurich") == "snowy"


def test_keys_may_be_any_hashable(clock: SteppingClock) -> None:
    cache: TTLCache[str] = TTLCache(max_entries=2, ttl_s=60, clock=clock)
    cache.put(("daily", 3, 48.8534, 2.3488), "three days")

    assert cache.get(("daily", 3, 48.8534, 2.3488)) == "three days"
    assert cache.get(("daily", 5, 48.8534, 2.3488)) is None


@pytest.mark.parametrize(("max_entries", "ttl_s"), [(0, 60), (1, 0), (1, -1)])
def test_a_cache_that_could_hold_nothing_is_refused(max_entries: int, ttl_s: float) -> None:
    with pytest.raises(ValueError, match="max_entries must be >= 1 and ttl_s > 0"):
        TTLCache[str](max_entries=max_entries, ttl_s=ttl_s)
