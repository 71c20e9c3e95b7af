"""Reading usage from the memory server: an agent's totals in its current day and month
(``usage_totals``) and a report between two instants (``usage_report``).

One place for both reads, shared by ``/usage``, its line in ``/status`` and the operator's
``python -m orchestrator usage``; periods are the caller's (``core.allowance_limits.periods``).
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

import anyio

from meshkit.exception_groups import as_itself
from meshkit.wire.usage import UsageReport, UsageTotals
from orchestrator.core.allowance_limits import Periods
from orchestrator.mesh.errors import ServerUnavailable
from orchestrator.mesh.registry import Registry

TOP_TURNS = 5  # the most expensive turns a report names


class UsageBook:
    """The memory server's usage, read by the orchestrator's code (a ToolCallError when
    memory does not answer)."""

    def __init__(self, registry: Registry) -> None:
        self._registry = registry
        self.server = registry.server_for("memory")

    def _memory(self, tool: str) -> str:
        if self.server is None:
            raise ServerUnavailable(f"memory__{tool}", "no server with role memory")
        return self.server

    async def totals(self, agent: str, periods: Periods) -> UsageTotals:
        """The agent's spend in the day and month of ``periods``, with the day's grants."""
        arguments = totals_arguments(agent, periods)
        server = self._memory("usage_totals")
        return await self._registry.call_as(server, "usage_totals", arguments, UsageTotals)

    async def report(
        self,
        since: float,
        until: float,
        *,
        agent: str | None = None,
        user: str | None = None,
        top: int = TOP_TURNS,
    ) -> UsageReport:
        """Usage in ``[since, until)``: of ``agent`` (None: every agent), of ``user`` (None:
        every user), with its ``top`` most expensive turns."""
        arguments = {"since": since, "until": until, "agent": agent, "user": user, "top": top}
        server = self._memory("usage_report")
        return await self._registry.call_as(server, "usage_report", arguments, UsageReport)

    async def current(
        self, agent: str, periods: Periods, user: str | None, top: int = TOP_TURNS
    ) -> tuple[UsageTotals, UsageReport, UsageReport]:
        """The agent's totals, and the reports of its day and month (of ``user`` only, when
        given), read side by side."""
        read: dict[str, Any] = {}

        async def keep(name: str, call: Awaitable[Any]) -> None:
            read[name] = await call

        day = self.report(periods.day_start, periods.day_end, agent=agent, user=user, top=top)
        month = self.report(periods.month_start, periods.month_end, agent=agent, user=user, top=top)
        async with as_itself(), anyio.create_task_group() as reads:
            reads.start_soon(keep, "totals", self.totals(agent, periods))
            reads.start_soon(keep, "day", day)
            reads.start_soon(keep, "month", month)
        return read["totals"], read["day"], read["month"]


def totals_arguments(agent: str, periods: Periods) -> dict[str, Any]:
    """``usage_totals``' arguments: the agent's day and month, named and bounded."""
    bounds = ("day_start", "day_end", "month_start", "month_end")
    return {
        "agent": agent,
        "day": periods.day,
        "month": periods.month,
        "bounds": {name: getattr(periods, name) for name in bounds},
    }
