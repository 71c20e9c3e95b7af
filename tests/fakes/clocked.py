"""Servers with a clock tests can move: module factories for the registry's ``module:``.

``fakes.clocked:pending_actions`` is pending-actions in embedded mode on ``CLOCK``, so a
test can let proposals expire without waiting (``CLOCK.advance(5 * 3600)``);
``fakes.clocked:memory`` is memory on it (questions expire the same way).
``fakes.clocked:scheduler_ahead`` is the scheduler in another process (``make run``'s), on a
clock set by the test through ``FAKE_CLOCK_AT``: a job a minute away fires seconds after
the start instead of at the next real minute.

``python -m fakes.clocked`` is ``python -m mcp_scheduler`` (the mesh's process) on a clock
the test moves by writing a file (``FAKE_CLOCK_FILE``: seconds ahead of real time, read
at every look at the clock): jobs come due when the test says. The scheduler notices at
its next look, at the latest when the long poll waiting then ends (``next_due``'s wait_s).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from fastmcp import FastMCP

from mcp_memory.server import build_server as build_memory
from mcp_pending_actions.server import build_server
from mcp_scheduler.server import build_server as build_scheduler
from mcp_scheduler.settings import SchedulerSettings
from meshkit.serve import run_server


class Clock:
    """Real time plus an offset the test moves forward."""

    def __init__(self, offset: float = 0.0) -> None:
        self.offset = offset

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


def scheduler_ahead() -> FastMCP[Any]:
    """The scheduler on a clock that reads ``FAKE_CLOCK_AT`` (Unix seconds) now, when the
    server is built, and runs on from there at the real pace."""
    return build_scheduler(clock=Clock(float(os.environ["FAKE_CLOCK_AT"]) - time.time()))


def memory() -> FastMCP[Any]:
    return build_memory(clock=CLOCK)


class FileClock:
    """Real time plus the seconds written in ``path`` (none written: real time)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __call__(self) -> float:
        try:
            offset = float(self.path.read_text() or 0)
        except FileNotFoundError:
            offset = 0.0
        return time.time() + offset


def main() -> None:
    """The scheduler's process on a ``FileClock``. No ``Stopping``: the mesh stops the
    orchestrator, whose long poll it is, first."""
    clock = FileClock(Path(os.environ["FAKE_CLOCK_FILE"]))
    run_server(
        SchedulerSettings,
        lambda settings: build_scheduler(settings, clock=clock),
        name="scheduler",
        default_port=8107,
    )


if __name__ == "__main__":
    main()
