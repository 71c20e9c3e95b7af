"""A database server that cannot use its storage at start exits with one line naming the
path and what to do, never a traceback: each server alone (HTTP and stdio, real processes)
and the orchestrator running them in-process (embedded mode)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from fakes.checkout import shipped
from fakes.disks import unwritable

BOT_TOKEN = "123456:storage-start-test-bot-token-abcdefghijklmn"
SERVERS = {
    "mcp_calendar": "calendar.sqlite3",
    "mcp_shopping": "shopping.sqlite3",
    "mcp_memory": "memory.sqlite3",
    "mcp_pending_actions": "pending_actions.sqlite3",
    "mcp_telegram_io": "telegram-io.sqlite3",
}
GARBAGE = b"this is not a database, only garbage " * 300
TIMEOUT_S = 120  # many interpreters importing fastmcp at once, on a small machine


def environment(data_dir: Path, **extra: str) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "DATA_DIR": str(data_dir),
        "MESH_TOKEN_SHA256": "5" * 64,
        "MCP_PORT": "1",  # never bound: the start fails before
        "CLAWMESH_AGENTS": "config/agents.yaml",  # the shipped one, in its folder (Started)
        "CLAWDIA_BOT_TOKEN": BOT_TOKEN,
        "TELEGRAM_USER_ID": "7001",
        "FASTMCP_CHECK_FOR_UPDATES": "off",
        **extra,
    }


class Started:
    """A process that must exit by itself: started at once, so the slow imports of many
    such processes overlap; ``result`` waits for its exit code and stderr lines. It runs in
    ``cwd``, a project folder with the shipped config/ and agents/ and no .env."""

    def __init__(self, command: list[str], env: dict[str, str], cwd: Path) -> None:
        shipped(cwd)
        self.data_dir = Path(env["DATA_DIR"])
        self.process = subprocess.Popen(
            command,
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )

    def result(self) -> tuple[int, list[str]]:
        try:
            _, stderr = self.process.communicate(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise
        return self.process.returncode, stderr.splitlines()


def damaged(data_dir: Path, db_file: str, how: str) -> Path:
    """A database file of garbage, or a real database cut in half."""
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / db_file
    if how == "garbage":
        path.write_bytes(GARBAGE)
        return path
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE filler (body TEXT)")
        db.executemany("INSERT INTO filler VALUES (?)", [("x" * 300,)] * 2000)
    with path.open("r+b") as file:
        file.truncate(path.stat().st_size // 2)
    return path


def server(module: str, mode: str) -> list[str]:
    return [sys.executable, "-m", module, *(["--stdio"] if mode == "stdio" else [])]


# Each server over HTTP; shopping over stdio too (both modes build the server, and so
# check its database, before serving).
CASES = [(module, "http") for module in SERVERS] + [("mcp_shopping", "stdio")]
COMMANDS = {"chat": ["chat"], "chat-verbose": ["chat", "--verbose"], "telegram": []}


def orchestrator_env(data_dir: Path) -> dict[str, str]:
    return environment(
        data_dir,
        CLAWMESH_REGISTRY="config/mcp_servers.local.yaml",
        OPENAI_API_KEY="sk-storage-start-test",  # the start fails before any model call
    )


def orchestrator(command: str) -> list[str]:
    return [sys.executable, "-m", "orchestrator", *COMMANDS[command]]


@pytest.fixture(scope="module")
def started(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, ...], Started]:
    """Every case's process, all started at once (see Started); keyed by the test's case."""
    cases: dict[tuple[str, ...], Started] = {}
    for module, mode in CASES:
        how = "garbage" if mode == "http" else "truncated"
        cwd = tmp_path_factory.mktemp("damaged")
        path = damaged(cwd / "data", SERVERS[module], how)
        cases["damaged", module, mode] = Started(
            server(module, mode), environment(path.parent), cwd
        )
        cwd = tmp_path_factory.mktemp("unwritable")
        command = unwritable(cwd / "data", server(module, mode))
        cases["unwritable", module, mode] = Started(command, environment(cwd / "data"), cwd)
    for name in ("chat", "telegram"):
        cwd = tmp_path_factory.mktemp("embedded-damaged")
        path = damaged(cwd / "data", "memory.sqlite3", "garbage")
        cases["damaged", "orchestrator", name] = Started(
            orchestrator(name), orchestrator_env(path.parent), cwd
        )
    for name in COMMANDS:
        cwd = tmp_path_factory.mktemp("embedded-unwritable")
        command = unwritable(cwd / "data", orchestrator(name))
        cases["unwritable", "orchestrator", name] = Started(
            command, orchestrator_env(cwd / "data"), cwd
        )
    cwd = tmp_path_factory.mktemp("embedded-damaged-calendar")
    path = damaged(cwd / "data", "calendar.sqlite3", "garbage")
    cases["damaged calendar", "orchestrator", "telegram"] = Started(
        orchestrator("telegram"), orchestrator_env(path.parent), cwd
    )
    for name in ("chat-verbose", "telegram"):  # as `make run` and `make chat` start it
        cwd = tmp_path_factory.mktemp("embedded-unwritable-no-key")
        command = unwritable(cwd / "data", orchestrator(name))
        # no approval key configured: pending-actions would make its pair in DATA_DIR
        env = orchestrator_env(cwd / "data")
        cases["unwritable, no key", "orchestrator", name] = Started(command, env, cwd)
    return cases


@pytest.mark.parametrize(("module", "mode"), CASES)
def test_a_damaged_database_stops_a_server_with_one_line(
    module: str, mode: str, started: dict[tuple[str, ...], Started]
) -> None:
    case = started["damaged", module, mode]
    code, stderr = case.result()

    path = case.data_dir / SERVERS[module]
    reason = (
        "the file is not a SQLite database" if mode == "http" else "the database file is damaged"
    )
    assert stderr == [
        f"configuration error: cannot use the database {path}: {reason}; restore the file "
        "from a backup, or move it aside to start with an empty one"
    ]
    assert code == 2


@pytest.mark.parametrize(("module", "mode"), CASES)
def test_an_unwritable_data_dir_stops_a_server_with_one_line(
    module: str, mode: str, started: dict[tuple[str, ...], Started]
) -> None:
    case = started["unwritable", module, mode]
    code, stderr = case.result()

    path = case.data_dir / SERVERS[module]
    assert len(stderr) == 1, stderr
    assert stderr[0].startswith(f"configuration error: cannot use the database {path}: ")
    assert stderr[0].endswith(
        "; make DATA_DIR writable by the server's user (in a container: mount a volume on it)"
    )
    assert code == 2


@pytest.mark.parametrize("command", ["chat", "telegram"])
def test_an_embedded_server_with_a_damaged_database_stops_the_orchestrator_with_one_line(
    command: str, started: dict[tuple[str, ...], Started]
) -> None:
    case = started["damaged", "orchestrator", command]
    code, stderr = case.result()

    assert stderr == [
        f"configuration error: cannot use the database {case.data_dir / 'memory.sqlite3'}: the "
        "file is not a SQLite database; restore the file from a backup, or move it aside to "
        "start with an empty one"
    ]
    assert code == 2


@pytest.mark.parametrize("command", ["chat-verbose", "telegram"])
def test_an_unwritable_data_dir_stops_the_embedded_orchestrator_with_one_line(
    command: str, started: dict[tuple[str, ...], Started]
) -> None:
    case = started["unwritable", "orchestrator", command]
    code, stderr = case.result()

    assert len(stderr) == 1, stderr
    assert stderr[0].startswith(f"configuration error: cannot use the database {case.data_dir}/")
    assert "make DATA_DIR writable" in stderr[0]
    assert code == 2


def test_an_embedded_calendar_with_a_damaged_database_stops_the_orchestrator_with_one_line(
    started: dict[tuple[str, ...], Started],
) -> None:
    case = started["damaged calendar", "orchestrator", "telegram"]
    code, stderr = case.result()

    assert stderr == [
        f"configuration error: cannot use the database {case.data_dir / 'calendar.sqlite3'}: "
        "the file is not a SQLite database; restore the file from a backup, or move it aside "
        "to start with an empty one"
    ]
    assert code == 2


@pytest.mark.parametrize("command", ["chat-verbose", "telegram"])
def test_an_unwritable_data_dir_without_an_approval_key_stops_the_orchestrator_with_one_line(
    command: str, started: dict[tuple[str, ...], Started]
) -> None:
    case = started["unwritable, no key", "orchestrator", command]
    code, stderr = case.result()

    assert len(stderr) == 1, stderr
    assert stderr[0].startswith("configuration error: cannot ")
    assert str(case.data_dir) in stderr[0]
    assert "make DATA_DIR writable" in stderr[0]
    assert code == 2


def test_the_console_with_an_unwritable_data_dir_names_its_log_file_in_one_line(
    started: dict[tuple[str, ...], Started],
) -> None:
    case = started["unwritable", "orchestrator", "chat"]
    code, stderr = case.result()

    assert len(stderr) == 1, stderr
    assert stderr[0].startswith(
        f"configuration error: cannot write the log file {case.data_dir}/logs/chat.log ("
    )
    assert stderr[0].endswith("make DATA_DIR writable, or add --verbose to log on the terminal")
    assert code == 2
