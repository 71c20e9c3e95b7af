"""Reminder arguments no person means get a worded refusal, never a masked exception."""

from __future__ import annotations

from pathlib import Path

import pytest

from fakes.clock import Clock
from fakes.tool_calls import call_error
from scheduler.calls import AGENT, local, running, settings_for

pytestmark = pytest.mark.anyio
NO_JOBS = "agents: {}\n"


@pytest.mark.parametrize("blank", [" ", "\n\t ", "\u200b\u200d", "\u202e"])
async def test_a_blank_reminder_text_is_refused_in_words(tmp_path: Path, blank: str) -> None:
    clock = Clock(local("2026-05-04T12:00"))
    async with running(settings_for(tmp_path, NO_JOBS), clock) as client:
        refused = await call_error(
            client,
            "propose_reminder",
            text=blank,
            when="2026-05-04T17:00",
            agent=AGENT,
            timezone="Europe/Berlin",
        )
    assert refused.startswith("There is nothing to remind of")


@pytest.mark.parametrize("when", ["0001-01-01T00:00", "0001-01-01T00:00+14:00"])
async def test_a_reminder_in_year_one_is_refused_in_words(tmp_path: Path, when: str) -> None:
    # Pacific/Kiritimati is UTC+14: year 1 there begins in year 0 in UTC, which has no date.
    clock = Clock(local("2026-05-04T12:00"))
    async with running(settings_for(tmp_path, NO_JOBS), clock) as client:
        refused = await call_error(
            client,
            "propose_reminder",
            text="x",
            when=when,
            agent=AGENT,
            timezone="Pacific/Kiritimati",
        )
    assert refused == f"{when!r} is out of range: give a time to come."


@pytest.mark.parametrize(
    ("when", "words"),
    [("9999-12-31T23:59", "is out of range"), ("2200-01-01T09:00", "more than 100 years ahead")],
)
async def test_a_reminder_no_person_means_that_far_ahead_is_refused_in_words(
    tmp_path: Path, when: str, words: str
) -> None:
    clock = Clock(local("2026-05-04T12:00"))
    async with running(settings_for(tmp_path, NO_JOBS), clock) as client:
        refused = await call_error(
            client,
            "propose_reminder",
            text="x",
            when=when,
            agent=AGENT,
            timezone="Europe/Berlin",
            repeat="monthly",
        )
    assert words in refused
