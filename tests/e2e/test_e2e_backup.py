"""``clawmesh backup``, end to end: ``make run``'s process (every server in it) holds a
conversation, a remembered note, a calendar event, a reminder and a proposal waiting for
its tap; ``clawmesh backup create`` (a real process) archives it while it runs; the archive
verifies; the stack stops; ``clawmesh backup restore`` fills a fresh data directory; the
same orchestrator starts on it, with the fake Telegram that saw it all, and the scheduler on
a clock a few seconds before the reminder: everything is there, and the reminder fires once.
"""

from __future__ import annotations

import sqlite3
import sys
import tarfile
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import anyio
import pytest

from fakes.checkout import shipped
from fakes.mesh import API_KEY, ROOT, TOKENS, USER, Mesh, eventually, running_embedded
from fakes.responses_api import call, calls, text
from fakes.telegram_api import Sent

pytestmark = pytest.mark.anyio

CLAWDIA = TOKENS["clawdia"]
PARIS = ZoneInfo("Europe/Paris")
SERVERS = ("weather", "memory", "shopping", "calendar", "scheduler")
CLAWMESH = [str(Path(sys.executable).parent / "clawmesh")]  # the console script


async def clawmesh(*args: str, env: dict[str, str]) -> Ran:
    """The command run to its end, the fakes serving meanwhile."""
    with anyio.fail_after(120):
        done = await anyio.run_process(
            [*CLAWMESH, *args], env=env, cwd=env["CLAWMESH_ROOT"], check=False
        )
    return Ran(done.returncode, done.stdout.decode(), done.stderr.decode())


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


def button(message: Sent, label: str) -> str:
    for row in (message.reply_markup or {}).get("inline_keyboard", []):
        for found in row:
            if label in found["text"]:
                return str(found["callback_data"])
    raise AssertionError(f"no button {label!r} on {message.reply_markup}")


async def proposed(mesh: Mesh, message: str, *made: object) -> Sent:
    """The user's ``message`` answered by the model's proposal (``made``): the message
    showing it, once its turn is acked."""
    before = len(mesh.telegram.sent(CLAWDIA, USER))
    mesh.llm.script(calls(*made), text("Shall I?"))  # type: ignore[arg-type]
    mesh.telegram.user_message(CLAWDIA, USER, message)
    await mesh.telegram.wait_for(lambda: len(mesh.telegram.sent(CLAWDIA, USER)) > before, 60)
    await mesh.all_acked()
    return mesh.telegram.sent(CLAWDIA, USER)[before]


async def tapped(mesh: Mesh, message: Sent, label: str) -> str:
    edits = len(message.edits)
    mesh.telegram.tap(CLAWDIA, USER, message.message_id, button(message, label))
    await mesh.telegram.wait_for(lambda: len(message.edits) > edits, 60)
    return message.edits[-1].text


def reminders_sent(mesh: Mesh, text: str) -> list[Sent]:
    return [s for s in mesh.telegram.sent(CLAWDIA, USER) if s.text == f"⏰ {text}"]


async def test_a_backup_of_a_running_stack_restores_everything_and_the_reminder_fires_once(
    tmp_path: Path,
) -> None:
    # The reminder is hours away on the real clock: the first run never fires it.
    due = (datetime.now(PARIS) + timedelta(hours=3)).replace(second=0, microsecond=0)
    local = due.replace(tzinfo=None)
    archive = tmp_path / "backup.tar.gz"
    restored = tmp_path / "restored"
    env = {"CALENDAR_TIMEZONE": "Europe/Paris"}
    async with running_embedded(tmp_path, servers=SERVERS, env=env) as mesh:
        event = await proposed(
            mesh,
            "add the dentist tomorrow at 3pm",
            call(
                "calendar__propose_event_add",
                title="Dentist",
                start=(local + timedelta(days=1)).replace(hour=15, minute=0).isoformat(),
            ),
        )
        assert "Added" in await tapped(mesh, event, "Add")
        note = await proposed(
            mesh, "remember my dog is Rex", call("memory__propose_remember", text="Has a dog, Rex")
        )
        assert "Rex" in await tapped(mesh, note, "Remember")
        reminder = await proposed(
            mesh,
            "remind me to call mum",
            call("scheduler__propose_reminder", text="call mum", when=local.isoformat()),
        )
        assert "Reminder set for" in await tapped(mesh, reminder, "Set reminder")
        waiting = await proposed(
            mesh,
            "and to water the plants",
            call(
                "scheduler__propose_reminder",
                text="water the plants",
                when=(local + timedelta(hours=1)).isoformat(),
            ),
        )  # not tapped: a pending action

        project = shipped(tmp_path / "project")  # the personas and jobs it backs up
        command_env = {
            **mesh.orchestrator.env,
            "CLAWMESH_REGISTRY": str(project / "config" / "mcp_servers.local.yaml"),
            "CLAWMESH_ROOT": str(project),
        }
        created = await clawmesh("backup", "create", str(archive), env=command_env)
        assert created.returncode == 0, created.stderr
        assert "Secrets are not in this archive" in created.stdout

        checked = await clawmesh("backup", "verify", str(archive), env=command_env)
        assert checked.returncode == 0, checked.stderr
        assert f"{archive}: ok" in checked.stdout

        await mesh.orchestrator.stop()

        done = await clawmesh(
            "backup",
            "restore",
            str(archive),
            "--data-dir",
            str(restored / "data"),
            "--root",
            str(restored),
            env=command_env,
        )
        assert done.returncode == 0, done.stderr
        with tarfile.open(archive) as tar:
            names = set(tar.getnames())
            everything = b"".join(
                tar.extractfile(m).read()  # type: ignore[union-attr]
                for m in tar
                if m.isfile()
            )
        # No secret of the running stack: the bot's token, the LLM key, the signing key.
        assert CLAWDIA.encode() not in everything
        assert API_KEY.encode() not in everything
        assert b"PRIVATE KEY" not in everything
        for database in (
            "memory",
            "memories",
            "questions",
            "pending_actions",
            "scheduler",
            "calendar",
            "shopping",
            "telegram-io",
        ):
            assert f"data/{database}.sqlite3" in names
        assert {"config/agents.yaml", "config/schedule.yaml", "config/mcp_servers.yaml"} <= names
        assert "agents/clawdia/IDENTITY.md" in names
        fleet = anyio.Path(mesh.orchestrator.env["CLAWMESH_AGENTS"])
        restored_fleet = anyio.Path(restored / "config" / "agents.yaml")
        assert await restored_fleet.read_text() == await fleet.read_text()

        # The same orchestrator on the restored directory, its scheduler 5 s before the
        # reminder is due (fakes.clocked:scheduler_ahead).
        registry = (ROOT / "config" / "mcp_servers.local.yaml").read_text(encoding="utf-8")
        clocked = registry.replace(
            "mcp_scheduler.server:build_server", "fakes.clocked:scheduler_ahead"
        )
        await anyio.Path(tmp_path / "registry.yaml").write_text(clocked, encoding="utf-8")
        mesh.orchestrator.env.update(
            {
                "DATA_DIR": str(restored / "data"),
                "CLAWMESH_REGISTRY": str(tmp_path / "registry.yaml"),
                "PYTHONPATH": str(ROOT / "tests"),
                "FAKE_CLOCK_AT": str(due.timestamp() - 5),
            }
        )
        await mesh.orchestrator.start()

        # The reminder: sent once, handled once.
        await mesh.telegram.wait_for(lambda: len(reminders_sent(mesh, "call mum")) == 1, 60)

        async def handled() -> bool:
            log = mesh.orchestrator.log.read_text(errors="replace")
            return log.count("(reminder) handled") == 1

        await eventually(handled, 60)

        # The conversation and the note: the next turn's request carries them.
        mesh.llm.requests.clear()
        mesh.llm.script(
            calls(call("calendar__search_events", query="Dentist")), text("You have the dentist.")
        )
        mesh.telegram.user_message(CLAWDIA, USER, "what is coming up?")
        await mesh.telegram.wait_for(
            lambda: mesh.telegram.sent(CLAWDIA, USER)[-1].text == "You have the dentist.", 60
        )
        first, second = mesh.llm.requests[:2]
        said = [
            item.get("content")
            for item in first["input"]
            if isinstance(item, dict) and item.get("role") == "user"
        ]
        assert any("remind me to call mum" in str(content) for content in said)
        assert "Has a dog, Rex" in first["instructions"]
        # The calendar event: what search_events gave the model.
        outputs = [i for i in second["input"] if i.get("type") == "function_call_output"]
        assert "Dentist" in outputs[-1]["output"]

        # The pending action: its Cancel still acts (an unknown one answers "no longer
        # active" and edits nothing). Not its Set: the scheduler's clock is hours ahead of
        # pending-actions', so the approval would look expired to it.
        answers = len(mesh.telegram.callback_answers(CLAWDIA))
        edited = await tapped(mesh, waiting, "Cancel")
        assert "water the plants" in edited
        assert "no longer active" not in str(mesh.telegram.callback_answers(CLAWDIA)[answers:])
        await mesh.all_acked()

    assert len(reminders_sent(mesh, "call mum")) == 1
    with sqlite3.connect(restored / "data" / "scheduler.sqlite3") as db:
        rows = db.execute(
            "SELECT f.state FROM firings f JOIN reminders r ON f.source = r.id "
            "WHERE r.text = 'call mum'"
        ).fetchall()
    assert len(rows) == 1, rows
