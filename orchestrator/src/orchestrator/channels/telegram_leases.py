"""Keeping the inbox leases of the updates this run works on, so nobody else takes them.

telegram-io leases each update it hands out for a short time (``lease_s``, 15 s by
default) so that one a crashed run held comes back soon. A turn can take longer (a
model thinking for a minute): every third of the lease time, the leases of everything
accepted and not yet let go are extended. A run that dies stops extending, and its
leases run out, or are released at once when it starts again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection

import anyio

from orchestrator.channels.telegram_io import TelegramIO, TelegramIOFailed

logger = logging.getLogger(__name__)

FIRST_LEASE_S = 15.0  # until telegram-io has said its lease time (next_updates tells it)
SHORTEST_EVERY_S = 0.2  # however short the lease, not more often than this


class LeaseKeeper:
    def __init__(self, io: TelegramIO, held: Callable[[], Collection[str]]) -> None:
        self._io = io
        self._held = held
        self.lease_s = FIRST_LEASE_S
        self._shorter = anyio.Event()  # set when the lease time turns out shorter

    def leased_for(self, lease_s: float) -> None:
        """What next_updates said the lease time is (0: a server that does not say)."""
        if lease_s <= 0 or lease_s == self.lease_s:
            return
        if lease_s < self.lease_s:
            self._shorter.set()  # the round under way would come too late
        self.lease_s = lease_s

    async def run(self) -> None:
        """Extend the leases of what is held, every third of the lease time, until cancelled."""
        while True:
            with anyio.move_on_after(max(SHORTEST_EVERY_S, self.lease_s / 3)):
                await self._shorter.wait()
            self._shorter = anyio.Event()
            held = sorted(self._held())
            if not held:
                continue
            try:
                extended = await self._io.extend(held)
            except TelegramIOFailed as error:  # the next round tries again, in time
                logger.warning("telegram-io: extending %d lease(s) failed (%s)", len(held), error)
                continue
            if extended < len(held):
                # Acked meanwhile (fine), or a lease ran out and another consumer holds it.
                logger.info("extended %d of %d lease(s); the rest are let go", extended, len(held))
