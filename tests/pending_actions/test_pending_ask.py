"""stage(ask=True): a proposal that must be asked every time ("allow more": an assistant
never raises its own allowance) is pending whatever the policy or a grant says, offers no
grant, and a deny still denies."""

from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from fakes.tool_calls import call, call_error
from mcp_pending_actions.settings import PendingSettings
from pending_actions.calls import AGENT, CHAT, MESSAGE, USER, approve, audit, stage, write_fleet

pytestmark = pytest.mark.anyio

ALLOW_MORE: dict[str, Any] = {
    "kind": "allow_more",
    "summary": "Allow $0.50 more today",
    "payload": {"agent": AGENT, "user": USER, "day": "2027-01-15", "amount": 0.5, "unit": "money"},
    "confirm_label": "➕ Allow $0.50 more today",
}
GRANTABLE = {"memory.*": {"policy": "ask", "grant": "1h"}}


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
