"""A bound client's proposal: staged for its user, handed to the orchestrator as a notice,
decided by a tap in the user's chat, followed by the client with action_status."""

from pathlib import Path
from typing import Any

import anyio
import pytest
from fastmcp import Client

from fakes.clock import Clock
from fakes.tool_calls import call, call_error
from mcp_pending_actions.server import build_server
from mcp_pending_actions.settings import PendingSettings
from meshkit.proposals import APPROVAL_TTL_S, Approvals
from meshkit.stopping import Stopping
from pending_actions.calls import (
    AGENT,
    CLIENT,
    MILK,
    USER,
    approve,
    audit,
    notices,
    stage_for_client,
    write_fleet,
)

pytestmark = pytest.mark.anyio


@pytest.fixture
def fleet(settings: PendingSettings) -> Path:
    write_fleet(settings.agents, {})
    return settings.agents


async def test_a_client_proposal_is_shown_to_its_user_and_decided_by_their_tap(
    client: Client[Any], fleet: Path
) -> None:
    staged = await stage_for_client(client)
    [notice] = await notices(client)
    key = notice["key"]
    batch = notice["batch"]
    decision = await approve(client, staged["action_id"], chat_id=USER, message_key=key)
    status = await call(
        client,
        "action_status",
        action_id=staged["action_id"],
        agent=AGENT,
        user_id=USER,
        server="shopping",
    )

    assert (staged["state"], staged["decided_by"], staged["summary"]) == (
        "pending",
        None,
        MILK["summary"],
    )
    assert (notice["type"], notice["agent"], notice["chat_id"], notice["user_id"]) == (
        "show",
        AGENT,
        USER,
        USER,
    )
    assert (notice["client"], notice["client_label"]) == (CLIENT, "Claude Desktop")
    assert key == f"consent:{batch['batch_id']}" == batch["message_key"]
    assert batch["text"] == "From Claude Desktop:"
    assert [(a["action_id"], a["client"]) for a in batch["actions"]] == [
        (staged["action_id"], CLIENT)
    ]
    assert decision["ok"] is True
    assert (status["state"], status["client"], status["decided_by"]) == (
        "executing",
        CLIENT,
        "tap",
    )
    assert [(e["event"], e["client"]) for e in await audit(client)] == [
        ("proposed", CLIENT),
        ("decided", CLIENT),
    ]


async def test_a_tap_anywhere_but_the_notice_message_is_not_taken(
    client: Client[Any], fleet: Path
) -> None:
    staged = await stage_for_client(client)

    elsewhere = await approve(client, staged["action_id"], chat_id=USER, message_key="reply:1:1")
    other_user = await approve(
        client, staged["action_id"], chat_id="7002", user_id="7002", message_key="x"
    )

    assert (elsewhere["ok"], elsewhere["reason"]) == (False, "not found")
    assert (other_user["ok"], other_user["reason"]) == (False, "not found")


async def test_a_waiting_next_notices_answers_as_soon_as_a_client_proposes(
    client: Client[Any], fleet: Path
) -> None:
    found: list[dict[str, Any]] = []
    answered = anyio.Event()
    async with anyio.create_task_group() as tasks:

        async def poll() -> None:
            found.extend(await notices(client, wait_s=20))
            answered.set()

        tasks.start_soon(poll)
        # A head start, so the poll is waiting when the proposal comes (no event says so).
        with anyio.move_on_after(0.3):
            await answered.wait()
        with anyio.fail_after(5):  # far below the 20 s it would otherwise wait
            staged = await stage_for_client(client)
            await answered.wait()

    assert [n["batch"]["actions"][0]["action_id"] for n in found] == [staged["action_id"]]


async def test_an_allowed_client_proposal_is_an_execute_notice_with_a_fresh_approval(
    client: Client[Any], settings: PendingSettings, clock: Clock, approvals: Approvals
) -> None:
    write_fleet(settings.agents, {"shopping.add_item": "auto"})
    staged = await stage_for_client(client)
    clock.advance(APPROVAL_TTL_S * 2)  # the orchestrator was down a while

    [notice] = await notices(client)
    decision = notice["decision"]

    assert (staged["state"], staged["decided_by"]) == ("executing", "policy")
    assert (notice["type"], notice["key"]) == ("execute", f"done:{staged['action_id']}")
    assert (decision["ok"], decision["payload"]) == (True, MILK["payload"])
    approval = approvals.check(
        decision["approval"], "shopping", "add_item", MILK["payload"], agent=AGENT
    )
    assert approval.action_id == staged["action_id"]


async def test_an_unacked_notice_comes_again_after_its_lease_and_an_acked_one_never(
    client: Client[Any], fleet: Path, clock: Clock
) -> None:
    await stage_for_client(client)
    [first] = await notices(client)
    during_lease = await notices(client)
    clock.advance(31)
    [again] = await notices(client)
    after_ack = await notices(client, ack=[again["key"]])
    clock.advance(31)
    later = await notices(client)

    assert during_lease == []
    assert again["key"] == first["key"]
    assert after_ack == later == []


async def test_a_new_run_of_the_consumer_takes_over_what_its_last_run_held(
    client: Client[Any], fleet: Path
) -> None:
    await stage_for_client(client)
    [first] = await notices(client)

    [taken] = await notices(client, run="r2")

    assert taken["key"] == first["key"]


async def test_a_notice_with_nothing_left_to_do_is_not_handed_out(
    client: Client[Any], fleet: Path, clock: Clock
) -> None:
    await stage_for_client(client, {**MILK, "ttl_s": 10})
    clock.advance(11)

    assert await notices(client) == []


async def test_action_status_shows_only_its_agent_users_and_servers_actions(
    client: Client[Any], fleet: Path
) -> None:
    staged = await stage_for_client(client)
    where = {"action_id": staged["action_id"], "agent": AGENT, "user_id": USER}

    errors = [
        await call_error(client, "action_status", **{**where, "server": "calendar"}),
        await call_error(
            client, "action_status", **{**where, "user_id": "7002", "server": "shopping"}
        ),
        await call_error(
            client, "action_status", **{**where, "agent": "ada", "server": "shopping"}
        ),
    ]

    assert all(error.startswith("There is no action") for error in errors)


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ({"client": "chat"}, "is not a client's name"),
        ({"agent": "nobody"}, "There is no agent 'nobody'"),
    ],
)
async def test_a_client_proposal_for_no_real_client_or_agent_is_refused(
    client: Client[Any], fleet: Path, arguments: dict[str, Any], says: str
) -> None:
    result = await client.call_tool(
        "stage_for_client",
        {
            "server": "shopping",
            "agent": AGENT,
            "user_id": USER,
            "client": CLIENT,
            "proposal": MILK,
            **arguments,
        },
        raise_on_error=False,
    )

    assert result.is_error
    assert says in str(result.content[0])


async def test_a_denied_client_proposal_is_refused_and_recorded(
    client: Client[Any], settings: PendingSettings
) -> None:
    write_fleet(settings.agents, {"shopping.*": "deny"})

    result = await client.call_tool(
        "stage_for_client",
        {"server": "shopping", "agent": AGENT, "user_id": USER, "client": CLIENT, "proposal": MILK},
        raise_on_error=False,
    )

    assert result.is_error
    assert "Not allowed by clawdia's policy" in str(result.content[0])
    assert await notices(client) == []
    assert [(e["event"], e["client"]) for e in await audit(client)] == [("denied", CLIENT)]


async def test_a_grant_from_a_tap_on_a_client_proposal_covers_that_clients_next_ones(
    client: Client[Any], settings: PendingSettings
) -> None:
    write_fleet(settings.agents, {"shopping.*": {"policy": "ask", "grant": "1h"}})
    first = await stage_for_client(client)
    [shown] = await notices(client)
    decision = await approve(
        client, first["action_id"], chat_id=USER, message_key=shown["key"], grant=True
    )

    later = await stage_for_client(client)
    [execute] = await notices(client, ack=[shown["key"]])
    [grant] = (await call(client, "list_grants", agent=AGENT, user_id=USER))["grants"]

    assert decision["granted_until"] is not None
    assert (later["state"], later["decided_by"]) == ("executing", "grant")
    assert (execute["type"], execute["decision"]["action_id"]) == ("execute", later["action_id"])
    assert (grant["client"], grant["kind"]) == (CLIENT, "add_item")


async def test_a_waiting_next_notices_answers_at_once_when_the_server_stops(
    settings: PendingSettings, clock: Clock
) -> None:
    write_fleet(settings.agents, {})
    stopping = Stopping()
    async with Client(build_server(settings, clock=clock, stopping=stopping)) as client:
        found: list[list[dict[str, Any]]] = []
        answered = anyio.Event()

        async def poll() -> None:
            found.append(await notices(client, wait_s=20))
            answered.set()

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(poll)
            with anyio.move_on_after(0.3):  # a head start, so the poll is waiting
                await answered.wait()
            with anyio.fail_after(5):
                stopping.stop()
                await answered.wait()

    assert found == [[]]
