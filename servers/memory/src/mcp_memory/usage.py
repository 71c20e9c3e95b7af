"""The model's usage: what the orchestrator recorded, summed for allowances and reports,
and "allow more" grants (``meshkit.wire.usage`` says who computes what).

    append_items(..., usage, warned) / record_usage(records, warned) ─► usage rows
    usage_totals(agent, day, month, bounds) ─► UsageTotals (the allowance check's start)
    usage_report(since, until, agent?, user?, top) ─► UsageReport (/usage, the CLI)
    tap "➕ Allow more" ─► pending-actions ─► confirm_allow_more ─► a Grant, once

A record is stored once by its own id, whatever call brings it again (a turn appended
twice, a retried record_usage). Periods are the caller's: memory sums between the bounds
it is given and keys grants and warnings by the names it is given.

No producer tool proposes "allow more": the orchestrator makes that proposal itself, at
the cap, and stages it with ``ask`` (an assistant never raises its own allowance).
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Callable, Sequence
from typing import Any

from mcp_memory.errors import InvalidRequest
from mcp_memory.usage_store import Filter, UsageStore, add_grant, added, grants_of
from meshkit.proposals import Approval, Confirmed
from meshkit.wire.usage import (
    AllowedMore,
    AllowMorePayload,
    Bounds,
    Grant,
    PeriodSpend,
    Recorded,
    UsageRecord,
    UsageReport,
    UsageTotals,
)

MAX_RECORDS = 500  # in one call: a turn makes at most a few dozen model calls
MAX_WARNED = 20
MAX_TOP = 50
# <day or month name>:<scope>:<period>, and :<user> for a user's limit
WARNING_KEY = r"^[0-9]{4}-[0-9]{2}(-[0-9]{2})?:[a-z]+:[a-z]+(:.{1,200})?$"
_WARNING_KEY = re.compile(WARNING_KEY)
NOT_NEEDED = "no longer needed: more was allowed after this was offered; nothing more was allowed"


def allow_more_summary(change: AllowMorePayload) -> str:
    """The kind's own summary; the orchestrator gives one in the price table's currency."""
    amount = (
        f"{change.amount:g} more" if change.unit == "money" else f"{change.amount:,.0f} tokens more"
    )
    return f"Allow {amount} on {change.day}"


class UsageService:
    def __init__(self, store: UsageStore, *, clock: Callable[[], float] = time.time) -> None:
        self._store = store
        self._clock = clock

    async def record(
        self,
        records: Sequence[UsageRecord],
        warned: Sequence[str] = (),
        agent: str | None = None,
    ) -> Recorded:
        """Keep the records not kept before, and the warnings given (``agent``'s: by
        default the one agent of the records)."""
        if warned:
            agent = agent or _one_agent(records)
            for key in warned:
                if not _WARNING_KEY.fullmatch(key):
                    raise InvalidRequest(
                        f"warned key {key[:60]!r} is not <day|month>:<scope>:<period>[:<user>] "
                        "(e.g. 2026-11-27:agent:day). Nothing was recorded."
                    )
        marks = [(agent, key) for key in dict.fromkeys(warned)] if agent else []
        stored = await self._store.record(records, marks, self._clock())
        return Recorded(stored=stored, duplicates=len(records) - stored)

    async def totals(self, agent: str, day: str, month: str, bounds: Bounds) -> UsageTotals:
        """``agent``'s spend in the day and month, as a whole and per user, with the day's
        grants and the warnings of these periods."""
        users, grants, warned = await self._store.totals(agent, day, month, bounds)
        per_user = {user: PeriodSpend(day=d, month=m) for user, (d, m) in users.items()}
        total = PeriodSpend()
        for each in per_user.values():
            total = PeriodSpend(
                day=added(total.day, each.day), month=added(total.month, each.month)
            )
        return UsageTotals(
            agent=agent, day=day, month=month, total=total, users=per_user, grants=grants,
            warned=warned,
        )  # fmt: skip

    async def report(
        self, since: float, until: float, agent: str | None, user: str | None, top: int
    ) -> UsageReport:
        """Usage in [since, until), of one agent and one user when given."""
        if not since < until:
            raise InvalidRequest("since must be before until.")
        return await self._store.report(Filter(since, until, agent, user), top)

    # --- the executor of allow_more (meshkit.consent): approval checked, payload read ----

    async def allow_more(self, change: AllowMorePayload, approval: Approval) -> Confirmed:
        """Record the approved grant, once; its id is the action's. An offer made before
        another was granted (two messages held at the cap, two buttons) grants nothing:
        the later grant answered what it was for."""
        now = self._clock()
        grant = Grant(
            id=approval.action_id, agent=change.agent, user=change.user, day=change.day,
            amount=change.amount, unit=change.unit, at=now,
        )  # fmt: skip

        def perform(db: sqlite3.Connection) -> dict[str, Any]:
            made = grants_of(db, change.agent, change.user, change.day, change.unit)
            if change.seen_grants is not None and len(made) > change.seen_grants:
                later = AllowedMore(grant=made[-1], needed=False, message=NOT_NEEDED)
                return later.model_dump(exclude={"replayed"})
            add_grant(db, grant)
            return AllowedMore(grant=grant).model_dump(include={"grant"})

        return await self._store.confirm(approval, perform, at=now)


def _one_agent(records: Sequence[UsageRecord]) -> str:
    agents = {record.agent for record in records}
    if len(agents) != 1:
        raise InvalidRequest(
            "warned keys are an agent's: give agent (the records name "
            f"{len(agents)} agents). Nothing was recorded."
        )
    return agents.pop()
