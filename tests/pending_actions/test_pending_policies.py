"""Consent policies and grants on staging: deny, auto, ask, and a tap's "and allow for 1 h"."""

import os
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from fakes.clock import Clock
from fakes.tool_calls import call, call_error
from mcp_pending_actions.server import build_server
from mcp_pending_actions.settings import PendingSettings
from meshkit.proposals import Approvals
from meshkit.yaml_config import ConfigError
from pending_actions.calls import (
    AGENT,
    CHAT,
    CLIENT,
    EGGS,
    MESSAGE,
    MILK,
    USER,
    approve,
    audit,
    stage,
    stage_for_client,
    write_fleet,
)

pytestmark = pytest.mark.anyio

GRANTABLE = {"shopping.*": {"policy": "ask", "grant": "1h"}}


@pytest.fixture
def fleet(settings: PendingSettings) -> Path:
    return settings.agents


async def test_a_denied_kind_is_never_staged_and_the_model_is_told(
    client: Client[Any], fleet: Path
) -> None:
    write_fleet(fleet, {"shopping.add_item": "deny"})

    error = await call_error(
        client,
        "stage",
        agent=AGENT,
        chat_id=CHAT,
        server="shopping",
        proposal=MILK,
        user_id=USER,
        message_key=MESSAGE,
    )
    pending = await call(client, "list_pending", agent=AGENT, chat_id=CHAT)

    assert error.startswith("Not allowed by clawdia's policy: shopping.add_item")
    assert pending["actions"] == []
    [denied] = await audit(client)
    assert (denied["event"], denied["how"], denied["action_id"]) == ("denied", "policy", None)
    assert (denied["client"], denied["summary"]) == ("chat", MILK["summary"])


async def test_an_auto_kind_comes_back_executing_with_an_approval_for_its_payload(
    client: Client[Any], fleet: Path, approvals: Approvals
) -> None:
    write_fleet(fleet, {"shopping.add_item": "auto"})

    staged = await stage(client, user_id=USER)
    again = await approve(client, staged["action_id"])
    done = await call(client, "complete", action_id=staged["action_id"], result={"message": "ok"})

    assert (staged["state"], staged["decided_by"], staged["payload"]) == (
        "executing",
        "policy",
        MILK["payload"],
    )
    approvals.check(staged["approval"], "shopping", "add_item", MILK["payload"], agent=AGENT)
    assert (again["ok"], again["state"]) == (False, "executing")  # no tap decides it again
    assert done["state"] == "done"
    entries = [(e["event"], e["how"], e["outcome"]) for e in await audit(client)]
    assert entries == [
        ("proposed", None, None),
        ("decided", "policy", "confirmed"),
        ("executed", None, "ok"),
    ]


async def test_an_ask_kind_is_pending_and_offers_the_grant_its_rule_gives(
    client: Client[Any], fleet: Path
) -> None:
    write_fleet(fleet, {**GRANTABLE, "shopping.remove_item": "ask"})

    staged = await stage(client, user_id=USER)
    plain = await stage(client, {**EGGS, "kind": "remove_item"}, user_id=USER)
    batch = await call(client, "get_batch", batch_id=staged["batch_id"])

    assert (staged["state"], staged["grant_s"], staged["approval"]) == ("pending", 3600, None)
    assert (plain["state"], plain["grant_s"]) == ("pending", None)  # the exact kind wins
    assert batch["actions"][0]["grant_s"] == 3600


async def test_without_a_fleet_file_every_change_asks(client: Client[Any]) -> None:
    staged = await stage(client, user_id=USER)

    assert (staged["state"], staged["decided_by"], staged["grant_s"]) == ("pending", None, None)


async def test_a_policy_edited_on_disk_holds_from_the_next_proposal(
    client: Client[Any], fleet: Path
) -> None:
    write_fleet(fleet, {"shopping.*": "auto"})
    first = await stage(client, user_id=USER)
    write_fleet(fleet, {"shopping.*": "deny", "memory.*": "auto"})
    os.utime(fleet, ns=(1, 1))  # a different stamp, however fast the two writes were

    error = await call_error(
        client, "stage", agent=AGENT, chat_id=CHAT, server="shopping", proposal=MILK
    )

    assert first["state"] == "executing"
    assert error.startswith("Not allowed")


async def test_a_tap_with_grant_lets_the_same_kind_through_until_it_ends(
    client: Client[Any], fleet: Path, clock: Clock
) -> None:
    write_fleet(fleet, GRANTABLE)
    staged = await stage(client, user_id=USER)

    decision = await approve(client, staged["action_id"], grant=True)
    clock.advance(1800)
    later = await stage(client, EGGS, user_id=USER, shown_in="reply:1:901")
    grants = await call(client, "list_grants", agent=AGENT, user_id=USER)
    clock.advance(1800)
    after = await stage(client, EGGS, user_id=USER, shown_in="reply:1:902")

    assert decision["ok"] is True
    assert decision["granted_until"] == clock.now
    assert (later["state"], later["decided_by"], later["granted_until"]) == (
        "executing",
        "grant",
        clock.now,
    )
    assert later["approval"] is not None
    [grant] = grants["grants"]
    assert (grant["agent"], grant["user_id"], grant["client"]) == (AGENT, USER, "chat")
    assert (grant["server"], grant["kind"], grant["summary"]) == (
        "shopping",
        "add_item",
        MILK["summary"],
    )
    assert (after["state"], after["grant_s"]) == ("pending", 3600)  # it ran out: ask again
    events = [(e["event"], e["how"]) for e in await audit(client)]
    assert ("granted", "tap") in events
    assert ("decided", "grant") in events
    assert (await call(client, "list_grants", agent=AGENT, user_id=USER))["grants"] == []
    assert [e["outcome"] for e in await audit(client) if e["event"] == "grant_ended"] == [
        "its time ran out"
    ]


@pytest.mark.parametrize("other", ["agent", "user", "client"])
async def test_a_grant_never_crosses_agents_users_or_clients(
    client: Client[Any], fleet: Path, other: str
) -> None:
    write_fleet(fleet, GRANTABLE, ada=GRANTABLE)
    staged = await stage(client, user_id=USER)
    assert (await approve(client, staged["action_id"], grant=True))["granted_until"]

    elsewhere = {
        "agent": {"agent": "ada"},
        "user": {"user_id": "7002"},
        "client": {"client": CLIENT},
    }[other]
    if other == "client":
        found = await stage_for_client(client, EGGS)
    else:
        found = await stage(client, EGGS, **{"user_id": USER, **elsewhere})

    assert (found["state"], found["decided_by"]) == ("pending", None)


async def test_asking_for_a_grant_the_rule_does_not_offer_gives_none(
    client: Client[Any], fleet: Path
) -> None:
    write_fleet(fleet, {"shopping.*": "ask"})
    staged = await stage(client, user_id=USER)

    decision = await approve(client, staged["action_id"], grant=True)
    later = await stage(client, EGGS, user_id=USER, shown_in="reply:1:901")

    assert (decision["ok"], decision["granted_until"]) == (True, None)
    assert later["state"] == "pending"


async def test_an_ended_grant_asks_again_and_only_its_user_may_end_it(
    client: Client[Any], fleet: Path
) -> None:
    write_fleet(fleet, GRANTABLE)
    staged = await stage(client, user_id=USER)
    await approve(client, staged["action_id"], grant=True)
    [grant] = (await call(client, "list_grants", agent=AGENT, user_id=USER))["grants"]

    refused = await call_error(
        client, "end_grant", grant_id=grant["grant_id"], agent=AGENT, user_id="7002"
    )
    ended = await call(client, "end_grant", grant_id=grant["grant_id"], agent=AGENT, user_id=USER)
    later = await stage(client, EGGS, user_id=USER, shown_in="reply:1:901")

    assert refused.startswith("There is no running grant")
    assert ended["grant_id"] == grant["grant_id"]
    assert later["state"] == "pending"
    assert [e["outcome"] for e in await audit(client) if e["event"] == "grant_ended"] == [
        "ended by the user"
    ]


async def test_a_fleet_file_broken_later_keeps_the_rules_read_before(
    client: Client[Any], fleet: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_fleet(fleet, {"shopping.*": "auto"})
    first = await stage(client, user_id=USER)
    break_yaml(fleet)

    second = await stage(client, user_id=USER, shown_in="reply:1:901")

    assert first["state"] == second["state"] == "executing"
    assert "kept the rules read before" in caplog.text


def break_yaml(path: Path) -> None:
    path.write_text("agents: [not, a, mapping", encoding="utf-8")


def test_a_fleet_file_that_cannot_be_read_stops_the_start(settings: PendingSettings) -> None:
    write_fleet(settings.agents, {"shopping.*": "sometimes"})

    with pytest.raises(ConfigError, match=r"agents\.clawdia\.consent\.shopping\.\*"):
        build_server(settings)
