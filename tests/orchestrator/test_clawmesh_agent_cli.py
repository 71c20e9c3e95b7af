"""``clawmesh agent init`` and ``list``, run as the operator runs them: the console script
in a process, on a copy of the shipped fleet file (its comments kept), never the checkout's
(where a person may have run ``agent init bob`` already)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fakes.checkout import shipped
from orchestrator.config.fleet import load_fleet
from orchestrator.config.registry import load_registry

CLAWMESH = str(Path(sys.executable).with_name("clawmesh"))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project folder: the shipped fleet file, registry and clawdia's persona."""
    return shipped(tmp_path)


def clawmesh(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("CLAWMESH_", "DATA_DIR"))},
        "CLAWMESH_REGISTRY": "config/mcp_servers.local.yaml",
        "DATA_DIR": str(project / "data"),
    }
    return subprocess.run(
        [CLAWMESH, *args], cwd=project, env=env, capture_output=True, text=True, check=False
    )


def test_init_adds_the_persona_and_the_entry_keeping_every_line_and_says_the_next_step(
    project: Path,
) -> None:
    fleet_file = project / "config" / "agents.yaml"
    before = fleet_file.read_text().splitlines()

    done = clawmesh(project, "agent", "init", "bob", "--name", "Bob the Builder", "--timezone",
                    "Europe/Paris")  # fmt: skip

    assert done.returncode == 0, done.stderr
    assert "BOB_BOT_TOKEN=" in done.stdout
    # Right for both ways to run: make run reads .env, make up mounts secrets/bot_tokens.
    assert "make run" in done.stdout
    assert "make up" in done.stdout
    assert "secrets/bot_tokens" in done.stdout
    after = fleet_file.read_text().splitlines()
    assert after[: len(before)] == before  # comments, prices, clawdia: as they were
    assert after[len(before) :] == [
        "  bob:",
        "    name: Bob the Builder",
        "    bot_token_env: BOB_BOT_TOKEN",
        '    allowed_user_ids: ["${TELEGRAM_USER_ID:-}"]',
        "    persona: agents/bob",
        "    timezone: Europe/Paris",
    ]
    assert sorted(p.name for p in (project / "agents" / "bob").iterdir()) == [
        "IDENTITY.md",
        "SOUL.md",
        "USAGE.md",
    ]
    registry = load_registry(project / "config" / "mcp_servers.local.yaml", {})
    fleet = load_fleet(fleet_file, registry, {}, root=project)
    assert fleet["bob"].persona.identity.startswith("# Identity\n\nYou are Bob the Builder")
    listed = clawmesh(project, "agent", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [(a["agent"], a["timezone"], a["bot_token_env"]) for a in json.loads(listed.stdout)] == [
        ("clawdia", "Europe/Berlin", ["CLAWDIA_BOT_TOKEN", "TELEGRAM_BOT_TOKEN"]),
        ("bob", "Europe/Paris", ["BOB_BOT_TOKEN"]),
    ]


def test_an_entry_goes_into_the_agents_block_when_another_key_follows_it(project: Path) -> None:
    fleet_file = project / "config" / "agents.yaml"
    fleet_file.write_text(
        "agents:\n    clawdia:  # four spaces\n        name: Clawdia\n"
        "        persona: agents/clawdia\n\n# the prices\nprices:\n  currency: EUR\n"
    )
    done = clawmesh(project, "agent", "init", "bob")
    assert done.returncode == 0, done.stderr
    assert fleet_file.read_text().splitlines()[3:6] == [
        "        persona: agents/clawdia",
        "    bob:",
        "        name: Bob",
    ]
    assert fleet_file.read_text().endswith("\n\n# the prices\nprices:\n  currency: EUR\n")


@pytest.mark.parametrize(
    ("args", "error"),
    [
        pytest.param(
            ["clawdia"],
            "Error: agent 'clawdia' exists already in config/agents.yaml - choose another id, "
            "or edit its entry there",
            id="an-existing-id",
        ),
        pytest.param(
            ["bob", "--timezone", "Mars/Olympus"],
            "Error: 'Mars/Olympus' is not an IANA time zone - use e.g. Europe/Berlin",
            id="an-unknown-time-zone",
        ),
        pytest.param(
            ["Bob!"],
            "Error: 'Bob!' is not an agent id - use 1-32 lowercase letters, digits or '-', "
            "starting with a letter (e.g. bob)",
            id="a-malformed-id",
        ),
    ],
)
def test_a_mistake_is_one_line_exit_1_and_changes_nothing(
    project: Path, args: list[str], error: str
) -> None:
    fleet_file = project / "config" / "agents.yaml"
    before = fleet_file.read_text()
    done = clawmesh(project, "agent", "init", *args)
    as_json = clawmesh(project, "agent", "init", *args, "--json")
    assert (done.returncode, done.stdout, done.stderr) == (1, "", f"{error}\n")
    what, fix = error.removeprefix("Error: ").split(" - ", 1)
    assert as_json.returncode == 1
    assert json.loads(as_json.stdout) == {"error": what, "suggestion": fix}
    assert fleet_file.read_text() == before
    assert sorted(p.name for p in (project / "agents").iterdir()) == ["clawdia"]
