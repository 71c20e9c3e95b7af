"""A proposal that must be asked every time ("allow more": an assistant never raises its own
allowance), because its kind is tap-only (``Proposal.tap_only``, from the kind's server) or
the orchestrator stages it with ask=True: pending whatever the policy or a grant says, from
the chat or from a bound client, with no grant offered and none a tap can give; a deny
still denies; the ledger says it was always asked."""

from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from fakes.tool_calls import call, call_error
from mcp_pending_actions.settings import PendingSettings
from pending_actions.calls import (
    AGENT,
    CHAT,
    CLIENT,
    MESSAGE,
    USER,
    approve,
    audit,
    notices,
    stage,
    stage_for_client,
    write_fleet,
)

pytestmark = pytest.mark.anyio

ALLOW_MORE: dict[str, Any] = {
    "kind": "allow_more",
    "summary": "Allow $0.50 more today",
    "payload": {"agent": AGENT, "user": USER, "day": "2027-01-15", "amount": 0.5, "unit": "money"},
    "confirm_label": "➕ Allow $0.50 more today",
}
TAP_ONLY = {**ALLOW_MORE, "tap_only": True}  # as memory's consent kernel sends it
GRANTABLE = {"memory.*": {"policy": "ask", "grant": "1h"}}
ALWAYS_ASKED = "always asked: this kind needs a tap each time, whatever a policy or grant says"


@pytest.fixture
def fleet(settings: PendingSettings) -> Path:
    return settings.agents


async def staged_asking(client: Client[Any], **arguments: Any) -> dict[str, Any]:
    return await stage(client, ALLOW_MORE, server="memory", user_id=USER, ask=True, **arguments)


async def test_an_asked_proposal_is_pending_under_an_auto_policy(
    client: Client[Any], fleet: Path
) -> None:
    write_fleet(fleet, {"memory.*": "auto"})

    staged = await staged_asking(client)
    pending = await call(client, "list_pending", agent=AGENT, chat_id=CHAT)

    assert (staged["state"], staged["decided_by"], staged["approval"]) == (
        "pending",
        None,
        None,
    )
    assert staged["grant_s"] is None
    assert [a["action_id"] for a in pending["actions"]] == [staged["action_id"]]
    assert [e["event"] for e in await audit(client)] == ["proposed"]


async def test_an_asked_proposal_is_pending_under_a_running_grant_and_its_tap_grants_nothing(
    client: Client[Any], fleet: Path
) -> None:
    write_fleet(fleet, GRANTABLE)
    first = await stage(client, ALLOW_MORE, server="memory", user_id=USER)
    granted = await approve(client, first["action_id"], grant=True)
    assert granted["granted_until"] is not None  # a grant for memory.allow_more runs now

    asked = await staged_asking(client, shown_in="reply:1:901")
    tapped = await approve(client, asked["action_id"], grant=True, message_key="reply:1:901")
    grants = await call(client, "list_grants", agent=AGENT, user_id=USER)

    assert (asked["state"], asked["decided_by"], asked["grant_s"]) == ("pending", None, None)
    assert (tapped["ok"], tapped["granted_until"]) == (True, None)
    assert len(grants["grants"]) == 1  # the first tap's, and no other


async def test_without_ask_the_same_proposal_goes_by_the_policy(
    client: Client[Any], fleet: Path
) -> None:
    write_fleet(fleet, {"memory.*": "auto"})

    staged = await stage(client, ALLOW_MORE, server="memory", user_id=USER)

    assert (staged["state"], staged["decided_by"]) == ("executing", "policy")


async def test_an_asked_proposal_of_a_denied_kind_is_still_denied(
    client: Client[Any], fleet: Path
) -> None:
    write_fleet(fleet, {"memory.allow_more": "deny"})

    error = await call_error(
        client,
        "stage",
        agent=AGENT,
        chat_id=CHAT,
        server="memory",
        proposal=ALLOW_MORE,
        user_id=USER,
        message_key=MESSAGE,
        ask=True,
    )

    assert error.startswith("Not allowed by clawdia's policy: memory.allow_more")
    assert (await call(client, "list_pending", agent=AGENT, chat_id=CHAT))["actions"] == []


async def client_staged(client: Client[Any], proposal: dict[str, Any]) -> dict[str, Any]:
    """``proposal`` staged by memory's relay for CLIENT, bound to AGENT and USER."""
    return await stage_for_client(client, proposal, server="memory")


@pytest.mark.parametrize("rule", ["auto", {"policy": "ask", "grant": "1h"}], ids=["auto", "grant"])
async def test_a_clients_tap_only_proposal_waits_for_the_tap_whatever_the_policy(
    client: Client[Any], fleet: Path, rule: Any
) -> None:
    write_fleet(fleet, {"memory.allow_more": rule})

    staged = await client_staged(client, TAP_ONLY)
    [shown] = await notices(client)
    tapped = await approve(
        client, staged["action_id"], chat_id=USER, message_key=shown["key"], grant=True
    )
    grants = await call(client, "list_grants", agent=AGENT, user_id=USER)
    entries = await audit(client)

    assert (staged["state"], staged["decided_by"]) == ("pending", None)
    assert shown["type"] == "show"
    assert [a["grant_s"] for a in shown["batch"]["actions"]] == [None]  # no grant offered
    assert (tapped["ok"], tapped["state"], tapped["granted_until"]) == (True, "executing", None)
    assert grants["grants"] == []  # the tap gave no grant
    assert [(e["event"], e["how"], e["outcome"], e["client"]) for e in entries] == [
        ("proposed", None, ALWAYS_ASKED, CLIENT),
        ("decided", "tap", "confirmed", CLIENT),
    ]


async def test_a_clients_tap_only_proposal_is_asked_under_a_running_grant(
    client: Client[Any], fleet: Path
) -> None:
    write_fleet(fleet, GRANTABLE)
    first = await client_staged(client, ALLOW_MORE)  # a kind not declared tap-only
    [shown] = await notices(client)
    await approve(client, first["action_id"], chat_id=USER, message_key=shown["key"], grant=True)
    assert len((await call(client, "list_grants", agent=AGENT, user_id=USER))["grants"]) == 1

    staged = await client_staged(client, TAP_ONLY)

    assert (staged["state"], staged["decided_by"]) == ("pending", None)


async def test_a_tap_only_proposal_from_the_chat_is_asked_without_ask(
    client: Client[Any], fleet: Path
) -> None:
    write_fleet(fleet, {"memory.*": "auto"})

    staged = await stage(client, TAP_ONLY, server="memory", user_id=USER)

    assert (staged["state"], staged["decided_by"], staged["approval"]) == ("pending", None, None)
    assert staged["grant_s"] is None
    assert [(e["event"], e["outcome"]) for e in await audit(client)] == [("proposed", ALWAYS_ASKED)]


async def test_a_clients_tap_only_proposal_of_a_denied_kind_is_still_denied(
    client: Client[Any], fleet: Path
) -> None:
    write_fleet(fleet, {"memory.allow_more": "deny"})

    result = await client.call_tool(
        "stage_for_client",
        {"server": "memory", "agent": AGENT, "user_id": USER, "client": CLIENT,
         "proposal": TAP_ONLY},
        raise_on_error=False,
    )  # fmt: skip

    assert result.is_error
    assert await notices(client) == []
