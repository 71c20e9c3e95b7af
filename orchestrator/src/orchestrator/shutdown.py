"""SIGTERM and SIGINT to ``python -m orchestrator``: finish what runs, then exit 0.

The first signal asks the Telegram channel to stop: it takes no new updates, and the
turns and taps already running get ``SHUTDOWN_GRACE_S`` to send their replies and be
acked. A second signal cuts the grace short. What is cut off stays unacked, so the next
run does it again (its reply's idempotency key keeps that to one message).
"""

from __future__ import annotations

import logging
import signal

import anyio
import anyio.abc

logger = logging.getLogger(__name__)

SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Shutdown:
    def __init__(self) -> None:
        self.requested = anyio.Event()  # stop taking updates, let running work finish
        self.hurried = anyio.Event()  # stop now: cut what still runs

    def request(self) -> None:
        if self.requested.is_set():
            self.hurried.set()
        self.requested.set()


async def on_signals(
    shutdown: Shutdown, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
) -> None:
    """Turn SIGTERM and SIGINT into ``shutdown.request()`` until cancelled (``task_status``:
    the handlers are in place)."""
    with anyio.open_signal_receiver(*SIGNALS) as signals:
        task_status.started()
        async for number in signals:
            name = signal.Signals(number).name
            if shutdown.requested.is_set():
                logger.info("%s again: cutting the running turns short", name)
            else:
                logger.info("%s: stopping (no new updates; running turns may finish)", name)
            shutdown.request()
