"""Per-chat pacing on an injected clock: a burst at once, then one message per interval."""

from __future__ import annotations

import pytest

from mcp_telegram_io.pacer import Pacer

pytestmark = pytest.mark.anyio


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


async def test_a_burst_goes_at_once_then_one_message_per_interval() -> None:
    clock = Clock()
    pacer = Pacer(0.5, 2, clock, clock.sleep)
    for _ in range(4):
        await pacer.wait_turn("chat")
    assert clock.slept == [0.5, 0.5]


async def test_chats_are_paced_apart_and_a_quiet_chat_gets_its_burst_back() -> None:
    clock = Clock()
    pacer = Pacer(0.5, 2, clock, clock.sleep)
    for _ in range(2):
        await pacer.wait_turn("one")
    await pacer.wait_turn("two")  # another chat: its own burst
    assert clock.slept == []
    clock.now += 1.0  # two intervals of quiet: two tokens back
    for _ in range(2):
        await pacer.wait_turn("one")
    assert clock.slept == []
    await pacer.wait_turn("one")
    assert clock.slept == [0.5]
