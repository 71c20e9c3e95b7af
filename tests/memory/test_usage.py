"""The memory server's usage records through an in-memory MCP client, real SQLite files:
each call stored once by its id, totals in the agent's day and month, reports."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from fastmcp import Client

from fakes.clock import START, Clock
from fakes.tool_calls import call, call_error
from mcp_memory.server import build_server
from mcp_memory.settings import MemorySettings
from memory.usage_calls import (
    ADA,
    AGENT,
    BOB,
    BOUNDS,
    DAY,
    HOUR,
    MONTH,
    PERIODS,
    UNREPORTED,
    record,
)

pytestmark = pytest.mark.anyio

TURN = [
    {"type": "message", "role": "user", "content": "Weather?"},
    {"type": "message", "role": "assistant", "content": "Sunny."},
]
DAY_START, DAY_END = BOUNDS["day_start"], BOUNDS["day_end"]
MONTH_START, MONTH_END = BOUNDS["month_start"], BOUNDS["month_end"]


@pytest.fixture
async def client(settings: MemorySettings, clock: Clock) -> AsyncIterator[Client[Any]]:
    async with Client(build_server(settings, clock=clock)) as client:
        yield client


async def totals(client: Client[Any], **periods: Any) -> dict[str, Any]:
    return await call(client, "usage_totals", **{**PERIODS, **periods})


async def report(client: Client[Any], **arguments: Any) -> dict[str, Any]:
    return await call(client, "usage_report", **{"since": MONTH_START, "until": MONTH_END,
                                                 **arguments})  # fmt: skip


async def append(client: Client[Any], turn_id: str, **arguments: Any) -> dict[str, Any]:
    return await call(
        client, "append_items", agent=AGENT, chat_id=ADA, items=TURN, turn_id=turn_id, **arguments
    )


async def test_a_record_is_stored_once_by_its_id_whatever_call_brings_it_again(
    client: Client[Any],
) -> None:
    first, second, third, fourth = (record(turn_id="900") for _ in range(4))

    recorded = await call(client, "record_usage", records=[first])
    again = await call(client, "record_usage", records=[first, second])
    appended = await append(client, "900", usage=[third])
    redone = await append(client, "900", usage=[third, fourth])  # the turn, redone

    assert (recorded["stored"], recorded["duplicates"]) == (1, 0)
    assert (again["stored"], again["duplicates"]) == (1, 1)
    assert (appended["duplicate"], appended["stored"], appended["usage"]) == (
        False,
        2,
        {"stored": 1, "duplicates": 0},
    )
    assert (redone["duplicate"], redone["stored"], redone["usage"]) == (
        True,
        0,
        {"stored": 1, "duplicates": 1},
    )
    found = await totals(client)
    assert found["total"]["day"]["calls"] == 4
    assert found["total"]["day"]["tokens"] == 4 * 1200


async def test_append_items_without_usage_records_nothing_and_answers_as_before(
    client: Client[Any],
) -> None:
    appended = await append(client, "901")

    assert appended["usage"] is None
    assert (await totals(client))["total"]["month"]["calls"] == 0


async def test_a_turn_with_a_malformed_item_stores_neither_its_items_nor_its_usage(
    client: Client[Any],
) -> None:
    error = await call_error(
        client, "append_items", agent=AGENT, chat_id=ADA, items=[{"type": "message"}],
        turn_id="903", usage=[record(turn_id="903")], warned=[f"{DAY}:agent:day"],
    )  # fmt: skip

    assert error.startswith("items[0] is malformed")
    found = await totals(client)
    assert (found["total"]["day"]["calls"], found["warned"]) == (0, [])


@pytest.mark.parametrize("key", ["agent:day", "2027-1-15:agent:day", f"{DAY}:agent"])
async def test_a_warning_key_that_names_no_period_is_refused(client: Client[Any], key: str) -> None:
    error = await call_error(client, "record_usage", records=[record()], warned=[key])

    assert "warned" in error
    assert (await totals(client))["total"]["day"]["calls"] == 0


async def test_totals_split_the_agents_day_and_month_and_each_user(client: Client[Any]) -> None:
    records = [
        record(at=DAY_START, cost=0.10),  # the day's first instant
        record(at=START, user=BOB, chat_id=BOB, cost=0.20),
        record(at=DAY_START - 1, cost=0.40),  # yesterday, this month
        record(at=MONTH_START - 1, cost=0.80),  # last month
        record(at=DAY_END, cost=1.60),  # tomorrow: not in this day
        record(at=START, agent="ada", cost=3.20),  # another agent
    ]
    await call(client, "record_usage", records=records)

    found = await totals(client)

    assert (found["agent"], found["day"], found["month"]) == (AGENT, DAY, MONTH)
    assert found["total"]["day"]["cost"] == pytest.approx(0.30)
    assert found["total"]["day"]["calls"] == 2
    assert found["total"]["month"]["cost"] == pytest.approx(2.30)
    assert found["total"]["month"]["calls"] == 4
    assert sorted(found["users"]) == [ADA, BOB]
    assert found["users"][ADA]["day"]["cost"] == pytest.approx(0.10)
    assert found["users"][ADA]["month"]["cost"] == pytest.approx(2.10)
    assert found["users"][BOB]["day"]["cost"] == pytest.approx(0.20)
    assert found["users"][BOB]["month"]["tokens"] == 1200


async def test_a_call_without_usage_counts_as_unknown_and_one_without_a_price_as_unknown_cost(
    client: Client[Any],
) -> None:
    records = [
        record(cost=0.05),
        record(**UNREPORTED),  # the response reported no usage
        record(cost=None, input_tokens=500, output_tokens=100),  # a hosted model unpriced
    ]
    await call(client, "record_usage", records=records)

    day = (await totals(client))["total"]["day"]

    assert day == {
        "cost": pytest.approx(0.05),
        "tokens": 1200 + 600,
        "calls": 3,
        "unknown_usage": 1,
        "unknown_cost": 1,
    }


async def test_warnings_are_kept_once_and_listed_in_their_period(client: Client[Any]) -> None:
    await call(client, "record_usage", records=[record()], warned=[f"{DAY}:agent:day"])
    await append(client, "902", usage=[record(turn_id="902")],
                 warned=[f"{MONTH}:user:month:{ADA}", f"{DAY}:agent:day"])  # fmt: skip
    yesterday = "2027-01-14:agent:day"
    await call(client, "record_usage", records=[], agent=AGENT, warned=[yesterday])
    await call(client, "record_usage", records=[], agent="ada", warned=[f"{DAY}:user:day:1"])

    found = await totals(client)

    assert found["warned"] == [f"{DAY}:agent:day", f"{MONTH}:user:month:{ADA}"]


async def test_warnings_need_to_know_their_agent(client: Client[Any]) -> None:
    two_agents = [record(), record(agent="ada")]

    error = await call_error(
        client, "record_usage", records=two_agents, warned=[f"{DAY}:agent:day"]
    )

    assert "give agent" in error
    assert (await totals(client))["total"]["day"]["calls"] == 0  # nothing of the call


async def test_a_malformed_record_stores_nothing_of_the_call(client: Client[Any]) -> None:
    error = await call_error(client, "record_usage", records=[record(), record(id="use_not-hex")])

    assert "id" in error
    assert (await totals(client))["total"]["day"]["calls"] == 0


async def test_the_report_sums_by_purpose_model_agent_and_user(client: Client[Any]) -> None:
    records = [
        record(cost=0.10, turn_id="900"),
        record(cost=0.20, purpose="summary", model="gpt-5-nano"),
        record(cost=0.40, purpose="briefing", user=BOB, chat_id=BOB),
        record(cost=0.80, agent="ada", purpose="scheduled"),
        record(at=MONTH_END, cost=1.60),  # out of the range
    ]
    await call(client, "record_usage", records=records)

    found = await report(client)

    assert (found["since"], found["until"]) == (MONTH_START, MONTH_END)
    assert found["total"]["cost"] == pytest.approx(1.50)
    assert found["total"]["calls"] == 4
    costs = {
        group: {key: spend["cost"] for key, spend in found[group].items()}
        for group in ("by_purpose", "by_model", "by_agent", "by_user")
    }
    assert costs == {
        "by_purpose": {
            "briefing": pytest.approx(0.40),
            "scheduled": pytest.approx(0.80),
            "summary": pytest.approx(0.20),
            "turn": pytest.approx(0.10),
        },
        "by_model": {"gpt-5-mini": pytest.approx(1.30), "gpt-5-nano": pytest.approx(0.20)},
        "by_agent": {"ada": pytest.approx(0.80), AGENT: pytest.approx(0.70)},
        "by_user": {ADA: pytest.approx(1.10), BOB: pytest.approx(0.40)},
    }


async def test_a_report_of_one_agent_and_user_holds_only_theirs(client: Client[Any]) -> None:
    records = [
        record(cost=0.10),
        record(cost=0.20, user=BOB, chat_id=BOB),
        record(cost=0.40, agent="ada"),
    ]
    await call(client, "record_usage", records=records)

    mine = await report(client, agent=AGENT, user=ADA)
    agents = await report(client, agent=AGENT)

    assert (mine["total"]["cost"], mine["total"]["calls"]) == (pytest.approx(0.10), 1)
    assert list(mine["by_user"]) == [ADA]
    assert agents["total"]["cost"] == pytest.approx(0.30)
    assert list(agents["by_agent"]) == [AGENT]


async def test_the_costliest_turns_come_first_a_turns_calls_together(
    client: Client[Any],
) -> None:
    records = [
        record(turn_id="900", at=START, cost=0.10),
        record(turn_id="900", at=START + 5, cost=0.15, user=ADA),  # its second round
        record(turn_id="901", at=START + HOUR, cost=0.20, user=BOB, chat_id=BOB),
        record(turn_id=None, at=START + 2 * HOUR, cost=0.05, purpose="summary"),
        record(turn_id=None, at=START + 3 * HOUR, cost=0.30, purpose="briefing"),
        record(turn_id="900", agent="ada", cost=0.01),  # another agent's update 900
    ]
    await call(client, "record_usage", records=records)

    top = (await report(client, top=3))["top"]
    everything = (await report(client, top=50))["top"]

    assert [(t["agent"], t["turn_id"], t["purpose"]) for t in top] == [
        (AGENT, None, "briefing"),
        (AGENT, "900", "turn"),
        (AGENT, "901", "turn"),
    ]
    first_turn = top[1]
    assert (first_turn["at"], first_turn["user"], first_turn["chat_id"]) == (START, ADA, ADA)
    assert first_turn["spend"]["calls"] == 2
    assert first_turn["spend"]["cost"] == pytest.approx(0.25)
    assert [(t["agent"], t["turn_id"]) for t in everything[3:]] == [
        (AGENT, None),  # the summary
        ("ada", "900"),
    ]


async def test_a_report_needs_a_range_that_ends_after_it_starts(client: Client[Any]) -> None:
    error = await call_error(client, "usage_report", since=START, until=START)

    assert "since must be before until" in error


async def test_usage_is_kept_across_a_restart(settings: MemorySettings, clock: Clock) -> None:
    async with Client(build_server(settings, clock=clock)) as client:
        await call(client, "record_usage", records=[record(cost=0.25)], warned=[f"{DAY}:agent:day"])

    async with Client(build_server(settings, clock=clock)) as client:
        found = await totals(client)

    assert (found["total"]["day"]["cost"], found["warned"]) == (0.25, [f"{DAY}:agent:day"])
    assert settings.usage_path.exists()


async def test_a_summarys_model_call_is_recorded_with_the_summary_saved_or_not(
    client: Client[Any],
) -> None:
    for n in range(12):  # enough to leave a window of the default size
        await append(client, f"t{n}")
    summary = record(purpose="summary", cost=0.002)
    late = record(purpose="summary", cost=0.003)

    saved = await call(client, "save_summary", agent=AGENT, chat_id=ADA, text="Counted.",
                       up_to_id=2, usage=[summary])  # fmt: skip
    stale = await call(client, "save_summary", agent=AGENT, chat_id=ADA, text="Older.",
                       up_to_id=1, usage=[late, summary])  # fmt: skip

    assert (saved["saved"], saved["usage"]) == (True, {"stored": 1, "duplicates": 0})
    assert (stale["saved"], stale["usage"]) == (False, {"stored": 1, "duplicates": 1})
    day = (await totals(client))["total"]["day"]
    assert (day["calls"], round(day["cost"], 6)) == (2, 0.005)
