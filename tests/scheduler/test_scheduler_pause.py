"""A paused agent's jobs wait (``set_paused``, the operator's ``clawmesh agent stop``):
nothing of it fires or is handed out, the other agents' do, a restart keeps the pause, and
a resume catches it up as after a downtime."""

from __future__ import annotations

from pathlib import Path

import pytest

from fakes.clock import Clock
from fakes.tool_calls import call
from scheduler.calls import due, local, running, settings_for

pytestmark = pytest.mark.anyio

BRIEFINGS = """\
agents:
  clawdia:
    briefing: {at: "07:30", parts: [weather]}
  other:
    briefing: {at: "07:30", parts: [weather]}
"""


async def test_a_paused_agents_briefing_waits_through_a_restart_and_comes_late_on_resume(
    tmp_path: Path,
) -> None:
    settings = settings_for(tmp_path, BRIEFINGS)
    clock = Clock(local("2026-05-04T07:00"))
    async with running(settings, clock) as client:
        paused = await call(client, "set_paused", agent="clawdia", paused=True)
        again = await call(client, "set_paused", agent="clawdia", paused=True)
        clock.now = local("2026-05-04T07:31")
        held = await due(client)
        jobs = await call(client, "jobs", agent="clawdia")
    assert (paused["changed"], again["changed"]) == (True, False)
    assert held == []
    assert jobs["paused"] is True

    clock.now = local("2026-05-04T09:20")
    async with running(settings, clock) as client:  # a restart
        assert await due(client) == []
        resumed = await call(client, "set_paused", agent="clawdia", paused=False)
        [late] = await due(client)
        await call(client, "ack", keys=[late["key"]])
        clock.now = local("2026-05-04T09:31")  # other's (07:30 UTC) comes as ever
        others = [f["key"] for f in await due(client)]
    assert (resumed["paused"], resumed["changed"], resumed["waiting"]) == (False, True, 1)
    assert late["key"] == "clawdia/briefing@2026-05-04T07:30+02:00"
    assert late["late"] is True
    assert others == ["other/briefing@2026-05-04T07:30+00:00"]


async def test_a_pause_longer_than_catch_up_skips_the_jobs_missed_as_a_downtime_does(
    tmp_path: Path,
) -> None:
    settings = settings_for(tmp_path, BRIEFINGS)
    clock = Clock(local("2026-05-04T07:00"))
    async with running(settings, clock) as client:
        await call(client, "set_paused", agent="clawdia", paused=True)
        clock.now = local("2026-05-06T10:00")  # clawdia's last missed by 2.5 h, other's by 0.5
        await call(client, "set_paused", agent="clawdia", paused=False)
        handed = await due(client)
    assert [f["source"] for f in handed] == ["other/briefing"]
