"""Reminders: proposed by the model, set only by a Confirm tap, delivered at their time,
followed up once per firing by Done or Snooze."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from fakes.clock import Clock
from fakes.tool_calls import call, call_error
from meshkit.wire.proposals import Proposal
from meshkit.wire.scheduler import sent_under
from scheduler.calls import AGENT, due, local, mint, running, settings_for

pytestmark = pytest.mark.anyio
NO_JOBS = "agents: {}\n"
BERLIN = "Europe/Berlin"


async def follow_up(
    client: Client[Any], firing: dict[str, Any], outcome: str, **more: Any
) -> dict[str, Any]:
    """A tap on the reminder's message, which was sent under its firing's key."""
    where = {"agent": AGENT, "message_key": sent_under(firing["key"])} | more
    return await call(client, "follow_up", firing_id=firing["id"], outcome=outcome, **where)


async def set_reminder(
    client: Client[Any], clock: Clock, text: str, when: str, **more: Any
) -> dict[str, Any]:
    proposal = await call(
        client, "propose_reminder", text=text, when=when, agent=AGENT, timezone=BERLIN, **more
    )
    Proposal.model_validate(proposal)
    token = mint(clock, proposal["kind"], proposal["payload"])
    return await call(client, "confirm_reminder", payload=proposal["payload"], approval=token)


async def test_a_proposed_reminder_is_set_only_by_the_confirm_tap(tmp_path: Path) -> None:
    clock = Clock(local("2026-05-04T12:00"))
    async with running(settings_for(tmp_path, NO_JOBS), clock) as client:
        proposal = await call(
            client,
            "propose_reminder",
            text="call mum",
            when="2026-05-04T17:00",
            agent=AGENT,
            timezone=BERLIN,
        )
        assert proposal["summary"] == "⏰ Remind you “call mum” on Mon 4 May, 17:00"
        assert (await call(client, "list_reminders", agent=AGENT))["reminders"] == []
        refused = await call_error(
            client, "confirm_reminder", payload=proposal["payload"], approval="v2.nope"
        )
        assert "Nothing was changed" in refused
        other = mint(clock, "reminder", proposal["payload"], agent="other")
        refused = await call_error(
            client, "confirm_reminder", payload=proposal["payload"], approval=other
        )
        assert "another agent" in refused
        token = mint(clock, "reminder", proposal["payload"])
        done = await call(client, "confirm_reminder", payload=proposal["payload"], approval=token)
        replay = await call(client, "confirm_reminder", payload=proposal["payload"], approval=token)
        listed = await call(client, "list_reminders", agent=AGENT)
    assert done["message"] == "Reminder set for Mon 4 May, 17:00"
    assert replay["replayed"] is True
    assert [(r["text"], r["due_at"]) for r in listed["reminders"]] == [
        ("call mum", "2026-05-04T17:00+02:00")
    ]


async def test_a_reminder_in_the_past_or_in_unreadable_words_is_refused_for_the_model(
    tmp_path: Path,
) -> None:
    clock = Clock(local("2026-05-04T12:00"))
    async with running(settings_for(tmp_path, NO_JOBS), clock) as client:
        past = await call_error(
            client,
            "propose_reminder",
            text="x",
            when="2026-05-04T11:00",
            agent=AGENT,
            timezone=BERLIN,
        )
        words = await call_error(
            client,
            "propose_reminder",
            text="x",
            when="tomorrow 9am",
            agent=AGENT,
            timezone=BERLIN,
        )
    assert "is in the past" in past
    assert "YYYY-MM-DDTHH:MM" in words


async def test_a_reminder_is_delivered_at_its_time_then_snoozed_once_and_done(
    tmp_path: Path,
) -> None:
    clock = Clock(local("2026-05-04T12:00"))
    async with running(settings_for(tmp_path, NO_JOBS), clock) as client:
        await set_reminder(client, clock, "call mum", "2026-05-04T17:00")
        clock.now = local("2026-05-04T16:59")
        assert await due(client) == []
        clock.now = local("2026-05-04T17:00")
        [firing] = await due(client)
        assert (firing["kind"], firing["payload"]["text"], firing["late"]) == (
            "reminder",
            "call mum",
            False,
        )
        await call(client, "ack", keys=[firing["key"]])
        snoozed = await follow_up(client, firing, "snooze_10")
        twice = await follow_up(client, firing, "snooze_10")
        assert snoozed["message"] == "💤 Snoozed until 17:10: call mum"
        assert (snoozed["changed"], twice["changed"]) == (True, False)
        clock.now = local("2026-05-04T17:09")
        assert await due(client) == []
        clock.now = local("2026-05-04T17:10")
        [again] = await due(client)
        assert again["key"] != firing["key"]
        await call(client, "ack", keys=[again["key"]])
        done = await follow_up(client, again, "done")
        assert done["message"] == "✅ Done: call mum"
        assert (await call(client, "list_reminders", agent=AGENT))["reminders"] == []
        refused = await call_error(
            client, "follow_up", agent="other", firing_id=again["id"],
            message_key=sent_under(again["key"]), outcome="done",
        )  # fmt: skip
        assert "No such reminder" in refused


async def test_a_reminders_buttons_act_only_in_the_message_it_was_sent_in(
    tmp_path: Path,
) -> None:
    clock = Clock(local("2026-05-04T12:00"))
    async with running(settings_for(tmp_path, NO_JOBS), clock) as client:
        await set_reminder(client, clock, "call mum", "2026-05-04T17:00")
        clock.now = local("2026-05-04T17:00")
        [firing] = await due(client)
        elsewhere = [
            await call_error(
                client,
                "follow_up",
                agent=AGENT,
                firing_id=firing["id"],
                message_key=key,
                outcome="done",
            )
            for key in ("reply:bot:12", sent_under("rem_0123456789ab@2026-05-04T17:00"))
        ]
        done = await follow_up(client, firing, "done")
    assert all("No such reminder" in refused for refused in elsewhere)
    assert done["changed"] is True


async def test_the_tap_that_followed_a_reminder_up_handed_over_again_still_changed_it(
    tmp_path: Path,
) -> None:
    clock = Clock(local("2026-05-04T12:00"))
    async with running(settings_for(tmp_path, NO_JOBS), clock) as client:
        await set_reminder(client, clock, "call mum", "2026-05-04T17:00")
        clock.now = local("2026-05-04T17:00")
        [firing] = await due(client)
        first = await follow_up(client, firing, "done", tap_id="bot:101")
        again = await follow_up(client, firing, "done", tap_id="bot:101")  # after a crash
        other = await follow_up(client, firing, "snooze_10", tap_id="bot:102")
    assert [first["changed"], again["changed"], other["changed"]] == [True, True, False]
    assert again["message"] == other["message"] == "✅ Done: call mum"


async def test_a_firings_file_from_before_messages_were_recorded_keeps_its_due_reminder(
    tmp_path: Path,
) -> None:
    settings = settings_for(tmp_path, NO_JOBS)
    clock = Clock(local("2026-05-04T12:00"))
    async with running(settings, clock) as client:
        await set_reminder(client, clock, "call mum", "2026-05-04T17:00")
        clock.now = local("2026-05-04T17:00")
        [firing] = await due(client, run="run-1")
    with sqlite3.connect(settings.db_path) as db:  # back to the version-1 schema
        db.executescript(
            "ALTER TABLE firings DROP COLUMN chat_id; ALTER TABLE firings DROP COLUMN message_id;"
            " ALTER TABLE firings DROP COLUMN followed_by; DROP TABLE runs; DROP TABLE paused;"
            " PRAGMA user_version = 1;"
        )
    db.close()

    async with running(settings, clock) as client:
        [again] = await due(client, run="run-2")  # the crashed run's firing, handed over
        done = await follow_up(client, again, "done")
    assert again["id"] == firing["id"]
    assert done["changed"] is True
    with sqlite3.connect(settings.db_path) as db:
        (version,) = db.execute("PRAGMA user_version").fetchone()
    db.close()
    assert version == 4  # the paused table added at 3, the runs of each consumer at 4


async def test_a_reminder_that_came_due_while_down_is_delivered_late_at_start(
    tmp_path: Path,
) -> None:
    settings = settings_for(tmp_path, NO_JOBS)
    clock = Clock(local("2026-05-04T12:00"))
    async with running(settings, clock) as client:
        await set_reminder(client, clock, "call mum", "2026-05-04T17:00")
    clock.now = local("2026-05-05T08:00")  # switched off over night
    async with running(settings, clock) as client:
        [late] = await due(client)
    assert (late["late"], late["scheduled_at"]) == (True, "2026-05-04T17:00+02:00")


async def test_a_weekly_reminder_repeats_at_its_wall_time_and_a_snooze_keeps_the_series(
    tmp_path: Path,
) -> None:
    clock = Clock(local("2026-03-20T12:00"))
    async with running(settings_for(tmp_path, NO_JOBS), clock) as client:
        await set_reminder(client, clock, "bins out", "2026-03-23T08:00", repeat="weekly")
        clock.now = local("2026-03-23T08:00")
        [first] = await due(client)
        await call(client, "ack", keys=[first["key"]])
        await follow_up(client, first, "snooze_60")
        clock.now = local("2026-03-23T09:00")
        [snoozed] = await due(client)
        await call(client, "ack", keys=[snoozed["key"]])
        clock.now = local("2026-03-30T08:00")  # after the clocks went forward
        [second] = await due(client)
    assert snoozed["payload"]["text"] == "bins out"
    assert second["scheduled_at"] == "2026-03-30T08:00+02:00"


async def test_a_reminder_is_cancelled_only_by_the_confirm_tap(tmp_path: Path) -> None:
    clock = Clock(local("2026-05-04T12:00"))
    async with running(settings_for(tmp_path, NO_JOBS), clock) as client:
        set_ = await set_reminder(client, clock, "call mum", "2026-05-04T17:00")
        proposal = await call(
            client, "propose_cancel_reminder", reminder_id=set_["reminder_id"], agent=AGENT
        )
        assert len((await call(client, "list_reminders", agent=AGENT))["reminders"]) == 1
        token = mint(clock, proposal["kind"], proposal["payload"])
        await call(client, "confirm_cancel_reminder", payload=proposal["payload"], approval=token)
        assert (await call(client, "list_reminders", agent=AGENT))["reminders"] == []
        clock.now = local("2026-05-04T17:00")
        assert await due(client) == []
        missing = await call_error(
            client, "propose_cancel_reminder", reminder_id=set_["reminder_id"], agent=AGENT
        )
    assert "No active reminder" in missing
