"""What the user reads of an allowance: the cap reply with its "allow more" offer, the
80 % warning.

    limit reached ─► one message: what was spent, of what, when it renews (the agent's
                     midnight / the 1st, with its zone) ─► a ``memory.allow_more`` proposal
                     (``offer``), staged by the ``Dispatcher`` with ``ask`` (always a tap:
                     an assistant never raises its own allowance), bound to the reply's key
                     ─► "➕ Allow <more> today"
    tap           ─► pending-actions approves, memory's ``confirm_allow_more`` records the
                     Grant ─► the meter counts it (``ActionDesk``) ─► the messages the cap
                     held (memory keeps them) are answered, in order (``Dispatcher``)
    another tap   ─► an offer made before a later grant grants nothing: "no longer needed"
                     (memory counts the day's grants the offer was made after)

The offer goes to the one the allowance counts for: the turn's user (a briefing's or a
scheduled prompt's: the owner).
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from meshkit.wire.proposals import Proposal
from meshkit.wire.usage import ALLOW_MORE, AllowMorePayload
from orchestrator.core.allowance_limits import Period, Periods, Standing, amount_text
from orchestrator.core.usage import Capped, Warning

OFFER_TTL_S = 24 * 3600  # past the day it is for, the grant is worth nothing anyway
CANCEL_LABEL = "Not today"


def renewal(period: Period, bounds: Periods) -> str:
    """'at midnight (Europe/Paris)', 'on 1 December (Europe/Paris)'."""
    if period == "day":
        return f"at midnight ({bounds.timezone})"
    first = datetime.fromtimestamp(bounds.month_end, ZoneInfo(bounds.timezone))
    return f"on {first:%-d %B} ({bounds.timezone})"


def _spent(where: Standing, currency: str) -> str:
    unit = where.limit.amount.unit
    spent, allowed = (amount_text(value, unit, currency) for value in (where.spent, where.allowed))
    return f"{spent} of {allowed}"


def cap_text(capped: Capped, *, midway: bool = False) -> str:
    """The cap reply: what was spent of what, and when it renews; ``midway``: the turn had
    begun (its rounds so far are not kept: nothing was changed)."""
    where = capped.standing
    stopped = (
        "I stopped before finishing that: nothing of it was kept or changed. " if midway else ""
    )
    return (
        f"⏸ {stopped}{_the(where)} is used up ({_spent(where, capped.currency)}). "
        f"It renews {renewal(where.limit.period, capped.periods)}, or you can allow "
        f"{amount_text(capped.more.value, capped.more.unit, capped.currency)} more for today."
    )


def warning_text(warning: Warning) -> str:
    """'⚠️ 85 % of the daily allowance is used (850 tokens of 1,000 tokens); it renews at
    midnight (Europe/Paris).'"""
    where = warning.standing
    used = "All" if where.reached else f"{where.fraction * 100:.0f} %"
    return (
        f"⚠️ {used} of {_the(where).lower()} is used ({_spent(where, warning.currency)}); "
        f"it renews {renewal(where.limit.period, warning.periods)}."
    )


def _the(where: Standing) -> str:
    """'The daily allowance', 'Your monthly allowance'."""
    described = where.limit.describe()
    return (
        described[:1].upper() + described[1:]
        if described.startswith("your")
        else (f"The {described}")
    )


def offer(capped: Capped) -> Proposal:
    """The "allow more" change: for the capped user, today, in the limit's unit."""
    more, who = capped.more, capped.who
    amount = amount_text(more.value, more.unit, capped.currency)
    payload = AllowMorePayload(
        agent=who.agent, user=who.user, day=capped.periods.day, amount=more.value,
        unit=more.unit, seen_grants=capped.granted,
    )  # fmt: skip
    return Proposal(
        kind=ALLOW_MORE,
        summary=f"Allow {amount} more today ({capped.periods.day})",
        payload=payload.model_dump(mode="json"),
        confirm_label=f"➕ Allow {amount} today",
        cancel_label=CANCEL_LABEL,
        ttl_s=OFFER_TTL_S,
        tap_only=True,  # as memory declares the kind: pending-actions asks whatever the policy
    )
