"""Consent, as the user sees it: the policies in force, the grants running, the ledger.

    /status      the agent's rules (``consent:`` in agents.yaml), one line each, and
                 "everything else: ask"
    /grants      each running grant with an End button (``ge:<grant id>``)
    ge tap       pending-actions ends the grant, for this agent and this user only; the
                 message is redrawn with the grants still running
    /audit       the user's last 10 ledger entries, in plain words

pending-actions keeps the grants and the hash-chained ledger, and decides; this module only
asks it and words the answers. Ending a grant takes a permission away, so its button acts
wherever it is tapped, for the tapping user: nobody can end someone else's grant.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from meshkit.consent_policy import Policies, duration_text
from meshkit.text import readable
from meshkit.wire.pending_actions import CHAT_CLIENT, Grant, Grants, How, Ledger, LedgerEntry
from orchestrator.core.batches import labelled
from orchestrator.core.callbacks import decode_grant_end, encode_grant_end
from orchestrator.core.replies import Button, Reply
from orchestrator.core.routes import CommandContext, TapContext
from orchestrator.mesh.registry import Registry
from orchestrator.mesh.roles import RoleClient

logger = logging.getLogger(__name__)

AUDIT_LIMIT = 10
UNAVAILABLE = "I can't reach the confirmations service right now. Try again in a moment."
NO_GRANTS = "No grants are running: every change waits for your tap (or your policy)."
ENDED = "Ended: those changes wait for your tap again."
GONE = "That grant has ended already."
POLICY_ALLOWS = "your policy allows it"


def client_label(client: str) -> str:
    """How the user reads a client's name: ``claude-desktop`` → "Claude Desktop"."""
    return "this chat" if client == CHAT_CLIENT else readable(client)


def policy_lines(policies: Policies) -> list[str]:
    """/status: each rule in force, most general last, then what everything else gets."""
    rules = sorted(policies.rules, key=lambda rule: (rule.pattern == "*", rule.pattern))
    lines = [f"🔐 {rule.pattern}: {rule.describe()}" for rule in rules]
    if not any(rule.pattern == "*" for rule in rules):
        lines.append("🔐 everything else: ask")
    return lines


@dataclass(frozen=True)
class Change:
    """What a grant is for: an agent's change kind, for one user, through one client."""

    agent: str
    user: str
    client: str
    server: str
    kind: str


class ConsentDesk:
    """The grants and the ledger of pending-actions (the registry's ``pending-actions``
    role), for the agent's chat."""

    def __init__(self, registry: Registry, zones: Mapping[str, str] | None = None) -> None:
        """``zones``: each agent's time zone, for the times a redrawn /grants shows."""
        self._pending = RoleClient(registry, "pending-actions")
        self._zones = zones or {}

    async def allowed(
        self, change: Change, how: How | None, zone: str, until: float | None = None
    ) -> str:
        """Why a change ran without a tap, for its line: "your policy allows it", or
        "allowed until 15:30" (the end of the grant that allowed it, ``until`` when known,
        in ``zone``). ``how`` None: not known (a client's change), a running grant for it
        tells."""
        if how == "policy":
            return POLICY_ALLOWS
        if until is not None:
            return f"allowed until {clock(until, zone)}"
        arguments = {"agent": change.agent, "user_id": change.user}
        grants = await self._pending.call("list_grants", arguments, Grants)
        wanted = (change.client, change.server, change.kind)
        for grant in grants.grants if grants is not None else []:
            if (grant.client, grant.server, grant.kind) == wanted:
                return f"allowed until {clock(grant.until, zone)}"
        return "a grant allows it" if how == "grant" else POLICY_ALLOWS

    async def grants(self, asked: CommandContext) -> Reply:
        """/grants: the running grants, soonest to end first, each with its End button."""
        listed = await self._listing(asked.runtime.id, asked.user)
        return Reply(UNAVAILABLE) if listed is None else listed

    async def end(self, tap: TapContext) -> None:
        """A grant's End: ended for the tapping user and agent (else: already gone); the
        message is redrawn as /grants shows the grants now, so neither the ended grant nor
        its button stays on it."""
        grant_id = decode_grant_end(tap.data)
        if grant_id is None:
            await tap.answer(GONE)
            await tap.settle()
            return
        arguments = {"grant_id": grant_id, "agent": tap.agent, "user_id": tap.user}
        ended = await self._pending.call("end_grant", arguments, Grant)
        await tap.answer(ENDED if ended is not None else GONE)
        await tap.settle(await self._listing(tap.agent, tap.user))

    async def _listing(self, agent: str, user: str) -> Reply | None:
        """The user's running grants, soonest to end first, each with its End button;
        None: pending-actions did not answer."""
        found = await self._pending.call("list_grants", {"agent": agent, "user_id": user}, Grants)
        if found is None:
            return None
        if not found.grants:
            return Reply(NO_GRANTS)
        zone = self._zones.get(agent, "UTC")
        lines = ["Running grants (changes made without a tap until they end):"]
        rows = []
        for number, grant in enumerate(found.grants, start=1):
            lines.append(f"{number}. {_grant_line(grant, zone)}")
            rows.append([Button(f"{number}. End", encode_grant_end(grant.grant_id))])
        return Reply("\n".join(lines), rows)

    async def audit(self, asked: CommandContext) -> Reply:
        """/audit: the user's last entries in the ledger, oldest first."""
        arguments = {"agent": asked.runtime.id, "user_id": asked.user, "limit": AUDIT_LIMIT}
        ledger = await self._pending.call("audit", arguments, Ledger)
        if ledger is None:
            return Reply(UNAVAILABLE)
        if not ledger.entries:
            return Reply("Nothing in the ledger yet: no change was proposed for you.")
        zone = asked.runtime.agent.entry.timezone
        lines = [f"Your last {len(ledger.entries)} entries in the ledger:"]
        lines += [f"{clock(e.at, zone, day=True)} {in_words(e, zone)}" for e in ledger.entries]
        return Reply("\n".join(lines))


def in_words(entry: LedgerEntry, zone: str) -> str:  # noqa: PLR0911 (one per event)
    """One ledger entry as the user reads it."""
    what = entry.summary or f"{entry.server}.{entry.kind}"
    if entry.server:  # the server that makes the change, named first (as in the chat)
        what = labelled(entry.server, what)
    source = "" if entry.client == CHAT_CLIENT else f" (from {client_label(entry.client)})"
    if entry.event == "proposed":
        return f"proposed{source}: {what}"
    if entry.event == "denied":
        return f"refused by your policy{source}: {what}"
    if entry.event == "decided":
        return f"{_decided(entry)}: {what}"
    if entry.event == "executed":
        return f"done: {what}" + (f" — {entry.outcome}" if entry.outcome else "")
    if entry.event == "failed":
        return f"failed: {what}" + (f" — {entry.outcome}" if entry.outcome else "")
    if entry.event == "expired":
        return f"expired, nothing done: {what}"
    change = f"{entry.server}.{entry.kind}{source}"
    if entry.event == "granted":
        return f"you allowed {change} until {_until(entry, zone)}"
    return f"grant ended: {change}"


def _decided(entry: LedgerEntry) -> str:
    cancelled = entry.outcome == "cancelled"
    if entry.how == "tap":
        return "you cancelled" if cancelled else "you confirmed"
    if entry.how == "policy":
        return "allowed by your policy"
    if entry.how == "grant":
        return "allowed by your grant"
    return "expired"


def _grant_line(grant: Grant, zone: str) -> str:
    source = "" if grant.client == CHAT_CLIENT else f", from {client_label(grant.client)}"
    length = duration_text(max(0, int(grant.until - grant.started_at)))
    return (
        f"{grant.server}.{grant.kind}{source}: until {clock(grant.until, zone)} "
        f"({length}; given for “{grant.summary}”)"
    )


def _until(entry: LedgerEntry, zone: str) -> str:
    """A granted entry's end in the agent's time zone, as the other times of /audit:
    pending-actions writes it "until 2026-11-28T14:36Z" (UTC); the day is said when it is
    not the entry's own."""
    written = (entry.outcome or "").strip().removeprefix("until").strip()
    try:
        until = datetime.fromisoformat(written).timestamp()
    except ValueError:
        try:
            until = float(written)
        except ValueError:
            return written or "?"
    local = ZoneInfo(zone)
    same_day = datetime.fromtimestamp(until, local).date() == (
        datetime.fromtimestamp(entry.at, local).date()
    )
    return clock(until, zone, day=not same_day)


def clock(at: float, zone: str, *, day: bool = False) -> str:
    """``15:30`` (with ``day``: ``Nov 26 15:30``) in the agent's time zone."""
    local = datetime.fromtimestamp(at, ZoneInfo(zone))
    return local.strftime("%b %d %H:%M" if day else "%H:%M")
