"""``clawmesh backup`` on the compose stack, against the real engine: compose.backup.yaml's
one-off service backs up every volume while the stack runs (the archive on stdout), the
archive verifies on the host (and `make backup`, under a umask of 022, writes it 0600),
and a restore from stdin into fresh volumes (made by
``docker compose create``) brings the data back for the servers, owned by their user.

Its own project (``clawmesh-backup-test-<run>``, or CLAWMESH_BACKUP_PROJECT), never the
suite's stack: it takes its volumes down and up again. The images are the suite's
(built once per change of the sources, whichever stack test comes first). Skipped with the
reason where no engine answers."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from containers.stack import (
    PROJECT as SUITE_PROJECT,
)
from containers.stack import (
    ROOT,
    RUN,
    Stack,
    build,
    compose_command,
    down,
    engine_problem,
    stack_environment,
    up,
)

PROJECT = os.environ.get("CLAWMESH_BACKUP_PROJECT", f"clawmesh-backup-test-{RUN}")
BACKUP_FILE = ROOT / "compose.backup.yaml"
CLAWMESH = str(Path(sys.executable).parent / "clawmesh")
EVENT = (
    "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\n"
    "BEGIN:VEVENT\r\nUID:dentist@backup-test\r\nDTSTAMP:20300101T000000Z\r\n"
    "DTSTART:20300301T140000Z\r\nDTEND:20300301T143000Z\r\nSUMMARY:Dentist\r\n"
    "END:VEVENT\r\nEND:VCALENDAR\r\n"
)

pytestmark = pytest.mark.timeout(2400)


@pytest.fixture(scope="module")
def volumes_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    problem = engine_problem() or (None if compose_command() else "no Compose v2 here")
    if problem:
        pytest.skip(f"the compose backup test needs a Docker engine: {problem}")
    if PROJECT == SUITE_PROJECT:
        pytest.fail("the backup test takes its stack's volumes down: give it its own project")
    secrets = tmp_path_factory.mktemp("backup-stack") / "secrets"
    running = Stack(stack_environment(dict(os.environ), secrets), project=PROJECT)
    build(running)
    try:  # a stack that never got healthy is taken down too
        up(running)
        yield running
    finally:
        down(running)


def backup(stack: Stack, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    """``clawmesh backup ARGS`` in compose.backup.yaml's one-off container."""
    return subprocess.run(
        [*stack.command, "-f", str(BACKUP_FILE), "run", "--rm", "-T", "backup", *args],
        input=stdin,
        capture_output=True,
        env=stack.env,
        cwd=ROOT,
        check=False,
        timeout=300,
    )


def in_calendar(stack: Stack, script: str, stdin: str = "") -> str:
    done = subprocess.run(
        [*stack.command, "exec", "-T", "calendar", "sh", "-c", script],
        input=stdin,
        capture_output=True,
        text=True,
        env=stack.env,
        cwd=ROOT,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_running_stack_is_backed_up_and_restored_into_fresh_volumes(
    volumes_stack: Stack, tmp_path: Path
) -> None:
    stack = volumes_stack
    in_calendar(stack, "cat > /tmp/in.ics && python -m mcp_calendar import /tmp/in.ics", EVENT)

    made = backup(stack, "create", "-")
    assert made.returncode == 0, made.stderr.decode()
    assert b"Secrets are not in this archive" in made.stderr
    archive = tmp_path / "stack.tar.gz"
    archive.write_bytes(made.stdout)

    checked = subprocess.run(
        [CLAWMESH, "backup", "verify", str(archive)], capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stderr
    with tarfile.open(archive) as tar:
        names = set(tar.getnames())
        everything = b"".join(
            tar.extractfile(m).read()  # type: ignore[union-attr]
            for m in tar
            if m.isfile()
        )
    for server in ("calendar", "memory", "pending-actions", "scheduler", "shopping"):
        assert any(n.startswith(f"data/{server}/") for n in names), names
    assert "data/calendar/calendar.sqlite3" in names
    assert "config/agents.yaml" in names
    for secret in stack.secrets.iterdir():
        if secret.is_file() and secret.stat().st_size >= 16:
            assert secret.read_bytes().strip() not in everything, secret.name

    # The documented route, `make backup`, typed under a login's umask (022): the host's
    # shell makes the file, and it is 0600 all the same.
    kept = tmp_path / "made.tar.gz"
    run = [*stack.command, "-f", str(BACKUP_FILE), "run", "--rm", "-T", "backup"]
    by_make = subprocess.run(
        ["sh", "-c", 'umask 022 && make --no-print-directory backup FILE="$1" BACKUP_RUN="$2"',
         "sh", str(kept), shlex.join(run)],
        capture_output=True, text=True, env=stack.env, cwd=ROOT, check=False, timeout=300,
    )  # fmt: skip
    assert by_make.returncode == 0, by_make.stderr
    assert oct(kept.stat().st_mode & 0o777) == "0o600"
    assert subprocess.run([CLAWMESH, "backup", "verify", str(kept)], check=False).returncode == 0

    # Fresh volumes, made (and owned by the servers' user) by `docker compose create`.
    stack.compose("down", "--volumes", "--timeout", "30")
    stack.compose("create")
    restored = backup(stack, "restore", "-", stdin=archive.read_bytes())
    assert restored.returncode == 0, restored.stderr.decode()
    again = backup(stack, "restore", "-", stdin=archive.read_bytes())
    assert again.returncode == 1
    assert b"is not empty" in again.stderr

    stack.compose("up", "--detach", "--wait", "--wait-timeout", "240")
    exported = in_calendar(stack, "python -m mcp_calendar export")
    assert "SUMMARY:Dentist" in exported
