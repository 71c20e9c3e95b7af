"""Conversations, calendars, keys and logs are readable by the server's user alone: after
real processes start and write under a umask of 022 (a login shell's), DATA_DIR and every
directory in it are 0700 and every file 0600, SQLite's -wal and -shm included; a DATA_DIR
and a database an older version left 0755 / 0644 are tightened."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from calendar_server.calls import mint
from fakes.approval_keys import PUBLIC_ENV, write_public_key
from fakes.checkout import shipped
from fakes.clock import Clock
from fakes.serving import ServerProcess, sdk_client

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "private-files-test-token-4c1d9e"


def shell(*command: str) -> list[str]:
    """``command`` run under umask 022, whatever the test's own umask."""
    return ["sh", "-c", 'umask 022 && exec "$@"', "sh", *command]


def modes(directory: Path) -> dict[str, str]:
    """Every path under ``directory`` (itself as "."), with its mode in octal."""
    found = {".": oct(stat.S_IMODE(directory.stat().st_mode))}
    for path in sorted(directory.rglob("*")):
        found[str(path.relative_to(directory))] = oct(stat.S_IMODE(path.stat().st_mode))
    return found


async def test_a_calendar_server_keeps_its_data_dir_and_database_files_private(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir(mode=0o755)
    data_dir.chmod(0o755)  # as an older version left it
    old = data_dir / "calendar.sqlite3"
    sqlite3.connect(old).close()
    old.chmod(0o644)
    command = shell(sys.executable, "-m", "mcp_calendar")
    public_key = str(write_public_key(tmp_path / "keys"))
    server = ServerProcess(
        "mcp_calendar", data_dir, TOKEN, command=command, **{PUBLIC_ENV: public_key}
    )
    try:
        url = server.ready()
        async with sdk_client(f"{url}/mcp", TOKEN) as client:
            proposed = await client.call_tool(
                "propose_event_add",
                {"title": "Dentist", "start": "2030-05-14T15:00", "agent": "clawdia"},
            )
            assert proposed.structured_content is not None
            payload = proposed.structured_content["payload"]
            token = mint(Clock(time.time()), "event_add", payload, "act_00000000beef")
            done = await client.call_tool(
                "confirm_event_add", {"payload": payload, "approval": token}
            )
        while_running = modes(data_dir)
    finally:
        server.stop()
    export = tmp_path / "calendar.ics"
    with anyio.fail_after(60):
        exported = await anyio.run_process(
            shell(sys.executable, "-m", "mcp_calendar", "export", str(export)),
            env={**os.environ, "DATA_DIR": str(data_dir), PUBLIC_ENV: public_key},
            check=False,
        )
        redirected = await anyio.run_process(
            ["sh", "-c", 'umask 022 && "$1" -m mcp_calendar export > "$2"', "sh",
             sys.executable, str(tmp_path / "redirected.ics")],
            env={**os.environ, "DATA_DIR": str(data_dir), PUBLIC_ENV: public_key},
            check=False,
        )  # fmt: skip

    assert not done.is_error
    assert while_running == {
        ".": "0o700",
        "calendar.sqlite3": "0o600",
        "calendar.sqlite3-shm": "0o600",
        "calendar.sqlite3-wal": "0o600",
    }
    assert exported.returncode == 0, exported.stderr
    assert b"SUMMARY:Dentist" in export.read_bytes()
    assert oct(stat.S_IMODE(export.stat().st_mode)) == "0o600"
    assert redirected.returncode == 0, redirected.stderr
    assert b"SUMMARY:Dentist" in (tmp_path / "redirected.ics").read_bytes()
    assert oct(stat.S_IMODE((tmp_path / "redirected.ics").stat().st_mode)) == "0o600"


def test_the_console_leaves_every_file_of_the_fleet_private(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "DATA_DIR": str(data_dir),
        "CLAWMESH_REGISTRY": "config/mcp_servers.local.yaml",
        "OPENAI_API_KEY": "sk-private-files-test",  # no message is sent: no model call
        "FASTMCP_CHECK_FOR_UPDATES": "off",
    }

    # `make chat` with nothing typed: every embedded server opens its database, the
    # approval key is made, the log is written; then end of input.
    chat = subprocess.run(
        shell(sys.executable, "-m", "orchestrator", "chat"),
        env=env,
        cwd=shipped(tmp_path / "project"),  # the shipped config/ and agents/, no .env
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=120,
        check=False,
    )

    assert chat.returncode == 0, chat.stderr
    found = modes(data_dir)
    assert "logs/chat.log" in found
    assert "approval_signing_key" in found
    assert "approval_public_key" in found
    assert [name for name in found if name.endswith(".sqlite3")], found
    assert {
        name: mode
        for name, mode in found.items()
        if mode != ("0o700" if (data_dir / name).is_dir() else "0o600")
    } == {}
