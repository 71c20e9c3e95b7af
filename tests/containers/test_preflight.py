"""``make up`` checks its prerequisites first: one line for each missing thing, saying what
to do (containers/preflight.sh)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from containers.stack import ROOT

PREFLIGHT = ROOT / "containers" / "preflight.sh"
# Shaped as @BotFather's are: the bot's id, a colon, 35 url-safe characters.
TOKEN = "7123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"


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
        f'OPENAI_BASE_URL=http://localhost:11434/v1\nTELEGRAM_BOT_TOKEN="{TOKEN}"  # mine\n'
        "TELEGRAM_USER_ID=42\n"
    )
    assert env_lines(preflight(env_file)) == []


@pytest.mark.parametrize(
    ("values", "named"),
    [
        (
            f"TELEGRAM_USER_ID=@me\nTELEGRAM_BOT_TOKEN={TOKEN}\n",
            "TELEGRAM_USER_ID=@me is not a Telegram user id, which is a positive number",
        ),
        (
            f"TELEGRAM_USER_ID=-42\nTELEGRAM_BOT_TOKEN={TOKEN}\n",
            "TELEGRAM_USER_ID=-42 is not a Telegram user id",
        ),
        (
            "TELEGRAM_USER_ID=42\nTELEGRAM_BOT_TOKEN=AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw\n",
            "TELEGRAM_BOT_TOKEN does not look like a bot token",
        ),
        (
            f"TELEGRAM_USER_ID=42\nCLAWDIA_BOT_TOKEN={TOKEN[:20]}\n",
            "CLAWDIA_BOT_TOKEN does not look like a bot token",
        ),
    ],
    ids=["user-name", "negative-id", "token-without-id", "cut-token"],
)
def test_a_value_of_the_wrong_shape_is_one_line_saying_what_to_fix(
    tmp_path: Path, values: str, named: str
) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("OPENAI_API_KEY=sk-proj-abc123\n" + values)
    done = preflight(env_file)
    assert done.returncode == 1
    lines = env_lines(done)
    assert len(lines) == 1, lines  # that one value, nothing else
    assert named in lines[0]
    assert TOKEN not in done.stderr  # a secret is named, never shown


@pytest.mark.parametrize(
    ("llm", "named"),
    [
        ("OPENAI_API_KEY=TELEGRAM_BOT_TOKEN\n", "OPENAI_API_KEY does not look like"),
        ("OPENAI_BASE_URL=localhost:11434\n", "OPENAI_BASE_URL=localhost:11434 is not an address"),
    ],
    ids=["key", "base-url"],
)
def test_an_llm_value_of_the_wrong_shape_is_named(tmp_path: Path, llm: str, named: str) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text(f"{llm}TELEGRAM_BOT_TOKEN={TOKEN}\nTELEGRAM_USER_ID=42\n")
    lines = env_lines(preflight(env_file))
    assert len(lines) == 1
    assert named in lines[0]


def test_any_key_goes_with_another_openai_compatible_server(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text(
        "OPENAI_BASE_URL='http://192.168.1.5:11434/v1'\nOPENAI_API_KEY=ollama\n"
        f"TELEGRAM_BOT_TOKEN={TOKEN}\nTELEGRAM_USER_ID=42\n"
    )
    assert env_lines(preflight(env_file)) == []
