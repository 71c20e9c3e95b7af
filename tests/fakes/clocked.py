"""Servers with a clock tests can move: module factories for the registry's ``module:``.

``fakes.clocked:pending_actions`` is pending-actions in embedded mode on ``CLOCK``, so a
test can let proposals expire without waiting (``CLOCK.advance(5 * 3600)``);
``fakes.clocked:memory`` is memory on it (questions expire the same way).
"""

from __future__ import annotations

import time
from typing import Any

from fastmcp import FastMCP

from mcp_memory.server import build_server as build_memory
from mcp_pending_actions.server import build_server
from mcp_scheduler.server import build_server as build_scheduler


class Clock:
    """Real time plus an offset the test moves forward."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset

    def advance(self, seconds: float) -> None:
        self.offset += seconds


CLOCK = Clock()


def pending_actions() -> FastMCP[Any]:
    return build_server(clock=CLOCK)


def scheduler() -> FastMCP[Any]:
    """The scheduler in embedded mode on ``CLOCK``: a test makes a briefing due at once."""
    return build_scheduler(clock=CLOCK)


def memory() -> FastMCP[Any]:
    return build_memory(clock=CLOCK)
