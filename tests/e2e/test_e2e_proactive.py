"""The agent speaks first, end to end: real processes, the fake Telegram, the fake model and
the fake Open-Meteo (see fakes/mesh.py). The firings they wait for are seconds away: a
reminder on the real clock, a job at a whole minute on a scheduler whose clock starts a few
seconds before that minute (``ahead_of``); the waits are on what Telegram is sent, with
deadlines."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from fakes.mesh import (
    ROOT,
    TOKENS,
    USER,
    Mesh,
    eventually,
    running_embedded,
    running_mesh,
)
from fakes.responses_api import HANG, call, calls, server_error, text
from fakes.telegram_api import Sent

pytestmark = pytest.mark.anyio

CLAWDIA = TOKENS["clawdia"]
PARIS = ZoneInfo("Europe/Paris")
WITH_SCHEDULER = ("weather", "memory", "shopping", "scheduler")


def button(message: Sent, label: str) -> str:
    for row in (message.reply_markup or {}).get("inline_keyboard", []):
        for found in row:
            if label in found["text"]:
                return str(found["callback_data"])
    raise AssertionError(f"no button {label!r} on {message.reply_markup}")


async def tapped_on(mesh: Mesh, message: Sent, data: str) -> str:
    """``data`` tapped on ``message``, whether or not it shows that button now: the answer."""
    answers = len(mesh.telegram.callback_answers(CLAWDIA))
    mesh.telegram.tap(CLAWDIA, USER, message.message_id, data, forged=True)
    await mesh.telegram.wait_for(lambda: len(mesh.telegram.callback_answers(CLAWDIA)) > answers, 30)
    return mesh.telegram.callback_answers(CLAWDIA)[answers].text or ""


def reminders_sent(mesh: Mesh) -> list[Sent]:
    return [s for s in mesh.telegram.sent(CLAWDIA, USER) if s.text.startswith("⏰ ")]


def reminders_handled(mesh: Mesh) -> int:
    """Reminder firings the orchestrator has sent and acked, by its log (every run's)."""
    return mesh.orchestrator.log.read_text(errors="replace").count("(reminder) handled")


async def test_a_reminder_set_by_tap_is_sent_once_across_a_kill_9_then_snoozed(
    tmp_path: Path,
) -> None:
    async with running_mesh(tmp_path, servers=WITH_SCHEDULER) as mesh:
        when = datetime.now(PARIS) + timedelta(seconds=15)
        mesh.llm.script(
            calls(
                call(
                    "scheduler__propose_reminder",
                    text="call mum",
                    when=when.replace(tzinfo=None).isoformat(timespec="seconds"),
                )
            ),
            text("Shall I remind you?"),
        )
        mesh.telegram.user_message(CLAWDIA, USER, "remind me in 15 seconds to call mum")
        await mesh.telegram.wait_for(lambda: len(mesh.telegram.sent(CLAWDIA, USER)) == 1, 60)
        [proposal] = mesh.telegram.sent(CLAWDIA, USER)
        assert "⏰ Remind you “call mum”" in proposal.text
        # Telegram holds every send from now (the tap only edits): however slow this machine,
        # the reminder cannot go out before the test is ready for it.
        sends = len(mesh.telegram.calls("sendMessage"))
        mesh.telegram.hold("sendMessage")
        mesh.telegram.tap(CLAWDIA, USER, proposal.message_id, button(proposal, "Set reminder"))
        await mesh.telegram.wait_for(lambda: bool(proposal.edits), 60)
        assert "Reminder set for" in proposal.edits[-1].text

        # Due: the orchestrator leases the firing and sends it; Telegram holds the send, and
        # the orchestrator is killed before it can ack.
        await mesh.telegram.wait_for(lambda: len(mesh.telegram.calls("sendMessage")) > sends, 60)
        await mesh.orchestrator.kill()
        mesh.telegram.release("sendMessage")
        await mesh.telegram.wait_for(lambda: len(reminders_sent(mesh)) == 1, 30)
        await mesh.orchestrator.start()  # a new run: the unacked firing is its at once

        async def handled() -> bool:
            return reminders_handled(mesh) == 1

        await eventually(handled, 60)
        [reminder] = reminders_sent(mesh)
        assert reminder.text == "⏰ call mum"
        shown = reminder.text
        messages = len(mesh.telegram.sent(CLAWDIA, USER))

        # Its Done, replayed on another message of the chat (the proposal's): nothing.
        done, snooze = button(reminder, "Done"), button(reminder, "10 min")
        edits = len(mesh.telegram.calls("editMessageText"))
        assert await tapped_on(mesh, proposal, done) == "That button is no longer active."

        mesh.telegram.tap(CLAWDIA, USER, reminder.message_id, snooze)
        await mesh.telegram.wait_for(lambda: bool(reminder.edits), 60)
        answers = mesh.telegram.callback_answers(CLAWDIA)
        assert reminder.edits[-1].text.startswith("💤 Snoozed until ")
        assert any(a.text == "Snoozed for 10 minutes" for a in answers)
        assert len(mesh.telegram.sent(CLAWDIA, USER)) == messages  # edited, nothing new
        # A second tap (racing the edit that removed the buttons): answered, no edit.
        assert await tapped_on(mesh, reminder, snooze) == "Already done."
        assert len(mesh.telegram.calls("editMessageText")) == edits + 1
        assert len(proposal.edits) == 1
        print("\n--- reminder round trip as the user saw it ---")
        print(f"bot:  {proposal.text}\n      [{proposal.edits[-1].text}]")
        print(f"bot:  {shown}   (buttons: ✅ Done · 💤 10 min · 💤 1 h)")
        print(f"tap:  10 min  →  {reminder.edits[-1].text}")


def a_minute_ahead() -> datetime:
    """The next whole minute in Paris but one: a job's time that has not passed yet."""
    return datetime.now(PARIS).replace(second=0, microsecond=0) + timedelta(minutes=2)


def ahead_of(tmp: Path, at: datetime, lead_s: float) -> dict[str, str]:
    """``make run``'s environment with the scheduler on a clock that reads ``lead_s`` before
    ``at`` when the orchestrator builds it (fakes.clocked), every other server as it is."""
    registry = (ROOT / "config" / "mcp_servers.local.yaml").read_text(encoding="utf-8")
    clocked = registry.replace("mcp_scheduler.server:build_server", "fakes.clocked:scheduler_ahead")
    assert clocked != registry
    (tmp / "registry.yaml").write_text(clocked, encoding="utf-8")
    return {
        "CLAWMESH_REGISTRY": str(tmp / "registry.yaml"),
        "PYTHONPATH": str(ROOT / "tests"),
        "FAKE_CLOCK_AT": str(at.timestamp() - lead_s),
    }


def import_today(tmp: Path, day: str) -> None:
    d = day.replace("-", "")
    ics = tmp / "today.ics"
    ics.write_text(
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\n"
        f"BEGIN:VEVENT\r\nUID:standup@test\r\nDTSTAMP:{d}T000000Z\r\n"
        f"DTSTART;TZID=Europe/Paris:{d}T093000\r\nDTEND;TZID=Europe/Paris:{d}T094500\r\n"
        "SUMMARY:Team stand-up\r\nEND:VEVENT\r\n"
        f"BEGIN:VEVENT\r\nUID:dentist@test\r\nDTSTAMP:{d}T000000Z\r\n"
        f"DTSTART;TZID=Europe/Paris:{d}T230000\r\nDTEND;TZID=Europe/Paris:{d}T233000\r\n"
        "SUMMARY:Call with Sam\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
    )
    subprocess.run(
        [sys.executable, "-m", "mcp_calendar", "import", str(ics)],
        env={**os.environ, "DATA_DIR": str(tmp / "data"), "CALENDAR_TIMEZONE": "Europe/Paris"},
        cwd=tmp,
        check=True,
        capture_output=True,
    )


async def test_make_run_sends_the_morning_briefing_at_its_time_even_with_the_model_down(
    tmp_path: Path,
) -> None:
    at = a_minute_ahead()
    import_today(tmp_path, at.date().isoformat())
    schedule = f'agents:\n  clawdia:\n    briefing: {{at: "{at:%H:%M}"}}\n'
    env = {"CALENDAR_TIMEZONE": "Europe/Paris", **ahead_of(tmp_path, at, 10)}
    servers = ("weather", "memory", "shopping", "calendar", "scheduler")
    async with running_embedded(tmp_path, env=env, servers=servers, schedule=schedule) as mesh:
        mesh.llm.default = lambda body: server_error()
        # Telegram lets a bot write to a user only once the user has started the chat.
        mesh.telegram.user_message(CLAWDIA, USER, "/start")
        await mesh.telegram.wait_for(lambda: len(mesh.telegram.sent(CLAWDIA, USER)) == 2, 180)
        briefing = mesh.telegram.sent(CLAWDIA, USER)[1]
    print("\n--- the briefing as the user received it (model down: the template) ---")
    print(briefing.text)
    lines = briefing.text.splitlines()
    assert lines[0].startswith("☀️ Good morning! Your briefing for ")
    assert "• 09:30–09:45 Team stand-up" in lines
    assert any(line.startswith("Paris: ") for line in lines)
    assert "⏰ Reminders today" not in lines  # none: the part is left out


async def test_a_reminder_is_sent_while_a_scheduled_prompts_turn_still_thinks(
    tmp_path: Path,
) -> None:
    # A prompt job at a_minute_ahead(), a reminder 10 s after it; the model holds the
    # prompt's turn from then on.
    at = a_minute_ahead()
    schedule = (
        "agents:\n  clawdia:\n    prompts:\n"
        f'      - {{name: ponder, cron: "{at.minute} {at.hour} * * *", prompt: Think it over.}}\n'
    )
    env = ahead_of(tmp_path, at, 30)  # the time to set the reminder before the prompt fires
    async with running_embedded(
        tmp_path, env=env, servers=WITH_SCHEDULER, schedule=schedule
    ) as mesh:
        when = (at + timedelta(seconds=10)).replace(tzinfo=None)
        mesh.llm.script(
            calls(call("scheduler__propose_reminder", text="stretch", when=when.isoformat())),
            text("Shall I remind you?"),
        )
        mesh.llm.default = HANG
        mesh.telegram.user_message(CLAWDIA, USER, "remind me to stretch")
        await mesh.telegram.wait_for(lambda: len(mesh.telegram.sent(CLAWDIA, USER)) == 1, 60)
        [proposal] = mesh.telegram.sent(CLAWDIA, USER)
        mesh.telegram.tap(CLAWDIA, USER, proposal.message_id, button(proposal, "Set reminder"))
        await mesh.telegram.wait_for(lambda: bool(proposal.edits), 60)

        await mesh.telegram.wait_for(lambda: len(reminders_sent(mesh)) == 1, 180)
        thinking = [r for r in mesh.llm.requests if "(Scheduled: ponder)" in str(r["input"])]
        sent = [s.text for s in mesh.telegram.sent(CLAWDIA, USER)]
        mesh.llm.release()
    assert thinking  # the prompt's turn had asked the model, which still held it...
    assert sent == [proposal.text, "⏰ stretch"]  # ...and had said nothing: the reminder went
