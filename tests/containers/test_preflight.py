"""``make up`` checks its prerequisites first: one line for each missing thing, saying what
to do (containers/preflight.sh)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from containers.stack import ROOT

PREFLIGHT = ROOT / "containers" / "preflight.sh"


def preflight(env_file: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ENV_FILE": str(env_file)}
    # "true" stands for a Compose that answers: only the .env lines are under test here.
    return subprocess.run(
        ["bash", str(PREFLIGHT), "true"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def env_lines(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in done.stderr.splitlines() if ".env" in line]


def test_a_missing_env_file_is_one_line_saying_to_copy_the_example(tmp_path: Path) -> None:
    done = preflight(tmp_path / ".env")
    assert done.returncode == 1
    assert env_lines(done) == [
        f"make up: {tmp_path / '.env'} is missing: cp .env.example .env, then fill in the "
        "values make up names"
    ]


def test_each_empty_value_is_named_once_and_comments_are_not_values(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("OPENAI_API_KEY=   # not yet\nTELEGRAM_USER_ID=42\n")
    done = preflight(env_file)
    lines = env_lines(done)
    assert done.returncode == 1
    assert [line.split(":")[2].split()[0] for line in lines] == [
        "no",  # "no LLM: set OPENAI_API_KEY (or OPENAI_BASE_URL ...)"
        "TELEGRAM_BOT_TOKEN",
    ]
    assert "Traceback" not in done.stderr


def test_a_complete_env_file_passes_the_env_checks_without_any_mesh_secret(
    tmp_path: Path,
) -> None:
    # The mesh credentials and the approval keys are made by make up, never asked for.
    env_file = tmp_path / ".env"
    env_file.write_text(
        'OPENAI_BASE_URL=http://localhost:11434/v1\nTELEGRAM_BOT_TOKEN="1:x"\nTELEGRAM_USER_ID=42\n'
    )
    assert env_lines(preflight(env_file)) == []
