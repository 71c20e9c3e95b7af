"""Jobs fire at their local time, once, across DST, restarts and crashes."""

from __future__ import annotations

import logging
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from fakes.clock import Clock
from fakes.tool_calls import call
from scheduler.calls import AGENT, BERLIN, due, fire_through, local, running, settings_for

BRIEFING = """\
agents:
  clawdia:
    briefing:
      at: "07:30"
      parts: [weather, reminders]
"""
pytestmark = pytest.mark.anyio

NIGHT_PROMPT = """\
agents:
  clawdia:
    prompts:
      - name: night
        at: "02:30"
        prompt: Anything for tonight?
"""


def walls(fired: list[dict[str, object]]) -> list[str]:
    return [str(f["scheduled_at"]) for f in fired]


async def test_a_daily_briefing_fires_at_its_local_time_on_each_side_of_both_dst_changes(
    tmp_path: Path,
) -> None:
    settings = settings_for(tmp_path, BRIEFING)
    clock = Clock(local("2026-03-27T12:00"))
    async with running(settings, clock) as client:
        spring = await fire_through(client, clock, local("2026-03-31T12:00"))
        clock.now = local("2026-10-23T12:00")
        autumn = await fire_through(client, clock, local("2026-10-27T12:00"))
    assert walls(spring) == [
        "2026-03-28T07:30+01:00",
        "2026-03-29T07:30+02:00",
        "2026-03-30T07:30+02:00",
        "2026-03-31T07:30+02:00",
    ]
    # The jump from March to October misses 23 October's by 4.5 h: skipped, not sent late.
    assert walls(autumn) == [
        "2026-10-24T07:30+02:00",
        "2026-10-25T07:30+01:00",
        "2026-10-26T07:30+01:00",
        "2026-10-27T07:30+01:00",
    ]
    assert {f["kind"] for f in spring} == {"briefing"}
    assert spring[0]["payload"]["parts"] == ["weather", "reminders"]


async def test_a_job_in_the_hour_the_clocks_skip_or_repeat_fires_once_each_night(
    tmp_path: Path,
) -> None:
    settings = settings_for(tmp_path, NIGHT_PROMPT)
    clock = Clock(local("2026-03-27T12:00"))
    async with running(settings, clock) as client:
        spring = await fire_through(client, clock, local("2026-03-31T00:00"))
        clock.now = local("2026-10-23T12:00")
        await due(client)  # the March-to-October jump, skipped (missed by more than 2 h)
        autumn = await fire_through(client, clock, local("2026-10-27T00:00"))
    # 29 March: 02:30 does not exist; it fires once, at 03:30 CEST.
    assert walls(spring) == [
        "2026-03-28T02:30+01:00",
        "2026-03-29T03:30+02:00",
        "2026-03-30T02:30+02:00",
    ]
    # 25 October: 02:30 happens twice; it fires once, at the first.
    assert walls(autumn) == [
        "2026-10-24T02:30+02:00",
        "2026-10-25T02:30+02:00",
        "2026-10-26T02:30+01:00",
    ]


async def test_a_firing_not_acked_goes_to_the_next_run_at_once_and_never_again_once_acked(
    tmp_path: Path,
) -> None:
    settings = settings_for(tmp_path, BRIEFING)
    clock = Clock(local("2026-05-04T07:00"))
    async with running(settings, clock) as client:
        clock.now = local("2026-05-04T07:30")
        [first] = await due(client, run="run-1")
        assert await due(client, run="run-1") == []  # held by this run
        assert await due(client, run="run-1", consumer="someone-else") == []  # and leased
        [again] = await due(client, run="run-2")  # run-1 crashed: run-2 redoes it now
        assert again["key"] == first["key"] == "clawdia/briefing@2026-05-04T07:30+02:00"
        assert again["id"] == first["id"]
        acked = await call(client, "ack", keys=[again["key"]])
        assert acked["acked"] == 1
        assert await due(client, run="run-3") == []
        assert (await call(client, "ack", keys=[again["key"]]))["acked"] == 0


async def test_a_firing_acked_by_the_next_poll_is_never_handed_out_again(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, BRIEFING)
    clock = Clock(local("2026-05-04T07:00"))
    async with running(settings, clock) as client:
        clock.now = local("2026-05-04T07:30")
        [first] = await due(client, run="run-1")
        # The next day's comes due meanwhile, and the first one's lease runs out: acked
        # after leasing, it would be leased again.
        clock.now = local("2026-05-05T07:30")

        polled = await poll(client, "run-1", ack=[first["key"]])

        assert polled["acked"] == 1  # acked, then the next one leased, in one call
        assert [f["scheduled_at"] for f in polled["firings"]] == ["2026-05-05T07:30+02:00"]
        assert (await poll(client, "run-2", ack=[first["key"]]))["acked"] == 0
        clock.advance(settings.lease_s + 1)
        assert [f["key"] for f in await due(client, consumer="someone-else")] == [
            polled["firings"][0]["key"]  # not acked: handed out again once its lease ran out
        ]


async def poll(client: Client[Any], run: str, ack: list[str]) -> dict[str, Any]:
    return await call(client, "next_due", consumer="orchestrator", run=run, wait_s=0, ack=ack)


async def test_a_lease_that_runs_out_lets_another_consumer_take_the_firing(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, BRIEFING)
    clock = Clock(local("2026-05-04T07:31"))
    async with running(settings, clock) as client:
        clock.now = local("2026-05-05T07:30")
        [first] = await due(client, consumer="a")
        clock.advance(settings.lease_s + 1)
        [taken] = await due(client, consumer="b")
        assert taken["key"] == first["key"]


async def test_a_briefing_missed_by_less_than_catch_up_is_sent_late_after_a_restart(
    tmp_path: Path,
) -> None:
    settings = settings_for(tmp_path, BRIEFING)
    clock = Clock(local("2026-05-04T06:00"))
    async with running(settings, clock) as client:
        assert await due(client) == []
    clock.now = local("2026-05-04T09:00")  # the mesh was off from 06:00 to 09:00
    async with running(settings, clock) as client:
        [late] = await due(client)
    assert late["scheduled_at"] == "2026-05-04T07:30+02:00"
    assert late["late"] is True


async def test_a_briefing_missed_by_more_than_catch_up_is_skipped_with_a_log_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = settings_for(tmp_path, BRIEFING)
    clock = Clock(local("2026-05-04T06:00"))
    async with running(settings, clock) as client:
        assert await due(client) == []
    clock.now = local("2026-05-04T10:00")
    with caplog.at_level(logging.INFO, logger="mcp_scheduler"):
        async with running(settings, clock) as client:
            assert await due(client) == []
            jobs = await call(client, "jobs", agent=AGENT)
    assert any(
        "clawdia/briefing" in r.getMessage() and "skipped" in r.getMessage() for r in caplog.records
    )
    assert jobs["jobs"][0]["next_at"] == "2026-05-05T07:30+02:00"


async def test_of_several_days_missed_only_the_newest_briefing_is_considered(
    tmp_path: Path,
) -> None:
    settings = settings_for(tmp_path, BRIEFING)
    clock = Clock(local("2026-05-04T06:00"))
    async with running(settings, clock) as client:
        assert await due(client) == []
    clock.now = local("2026-05-07T08:00")  # three days off
    async with running(settings, clock) as client:
        fired = await due(client)
    assert walls(fired) == ["2026-05-07T07:30+02:00"]


async def test_a_changed_job_starts_afresh_and_a_removed_job_is_gone(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, BRIEFING)
    clock = Clock(local("2026-05-04T06:00"))
    async with running(settings, clock) as client:
        await due(client)
    settings = settings_for(tmp_path, NIGHT_PROMPT)
    clock.now = local("2026-05-04T09:00")
    async with running(settings, clock) as client:
        assert await due(client) == []  # the briefing left the file: no late briefing
        jobs = await call(client, "jobs", agent=AGENT)
    assert [(j["id"], j["when"], j["next_at"]) for j in jobs["jobs"]] == [
        ("clawdia/prompt/night", "02:30 daily", "2026-05-05T02:30+02:00")
    ]


async def test_a_cron_prompt_fires_by_its_expression_with_its_prompt(tmp_path: Path) -> None:
    schedule = """\
agents:
  clawdia:
    prompts:
      - name: week-ahead
        cron: "0 18 * * sun"
        prompt: Plan my week.
"""
    settings = settings_for(tmp_path, schedule)
    clock = Clock(local("2026-05-04T12:00"))  # a Monday
    async with running(settings, clock) as client:
        fired = await fire_through(client, clock, local("2026-05-18T00:00"), step_s=3600)
    assert walls(fired) == ["2026-05-10T18:00+02:00", "2026-05-17T18:00+02:00"]
    assert fired[0]["payload"]["prompt"] == "Plan my week."
    assert datetime.fromisoformat(str(fired[0]["scheduled_at"])).tzinfo is not None
    assert BERLIN.key == fired[0]["timezone"]
