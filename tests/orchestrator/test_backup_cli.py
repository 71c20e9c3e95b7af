"""``clawmesh backup`` as the operator runs it (the console script, a real process) on a
DATA_DIR of real SQLite files: what the archive holds and never holds, what verify catches,
what restore refuses. (A running stack backed up and restored: tests/e2e/test_e2e_backup.py.)"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import sqlite3
import subprocess
import sys
import tarfile
import threading
from pathlib import Path

import pytest

from meshkit.approval_keys import load_signing_key

CLAWMESH = str(Path(sys.executable).parent / "clawmesh")
SECRET = "sk-live-9f8e7d6c5b4a-this-must-never-be-archived"


def clawmesh(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CLAWMESH, *args], check=False, env=env, cwd=cwd, capture_output=True, text=True, timeout=60
    )


def database(path: Path, rows: int = 200) -> None:
    """A WAL database like a server's (schema version 2), with an index to damage."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)")
        db.execute("CREATE INDEX notes_text ON notes (text)")
        db.executemany("INSERT INTO notes (text) VALUES (?)", [(f"note {i}",) for i in range(rows)])
        db.execute("PRAGMA user_version = 2")
    db.close()


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A project root with its configuration, a persona, .env and secrets/ holding SECRET,
    and a DATA_DIR with two databases and the approval key pair; the command's environment."""
    root = tmp_path / "project"
    (root / "config").mkdir(parents=True)
    (root / "config" / "agents.yaml").write_text("agents:\n  clawdia: {name: Clawdia}\n")
    (root / "config" / "schedule.yaml").write_text("agents: {}\n")
    (root / "config" / "mcp_servers.yaml").write_text("servers: {}\n")
    (root / "config" / "mcp_servers.local.yaml").write_text("servers: {}\n")
    persona = root / "agents" / "clawdia"
    persona.mkdir(parents=True)
    (persona / "IDENTITY.md").write_text("You are Clawdia.\n")
    (persona / ".env").write_text(f"CLAWDIA_BOT_TOKEN={SECRET}\n")  # a stray one, hidden
    (root / ".env").write_text(f"OPENAI_API_KEY={SECRET}\n")
    (root / "secrets").mkdir()
    (root / "secrets" / "openai_api_key").write_text(SECRET)
    data = root / "data"
    database(data / "memory.sqlite3")
    database(data / "scheduler" / "scheduler.sqlite3")  # a volume's directory, in compose
    load_signing_key(data)  # approval_signing_key.pem: a secret in DATA_DIR
    (data / "logs").mkdir()
    (data / "logs" / "chat.log").write_text("a log line\n")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("CLAWMESH_", "DATA_DIR"))},
        "DATA_DIR": str(data),
    }
    return root, env


def members(archive: Path) -> dict[str, bytes]:
    with tarfile.open(archive) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}  # type: ignore[union-attr]


def rewrite(archive: Path, change: dict[str, bytes], *, manifest_too: bool) -> None:
    """The archive with some members' content replaced (and the manifest's checksums of
    them, when ``manifest_too``): a damaged copy, or a forged one."""
    found = members(archive)
    found.update(change)
    manifest = json.loads(found["manifest.json"])
    if manifest_too:
        for entry in manifest["files"]:
            if entry["name"] in change:
                entry["size"] = len(change[entry["name"]])
                entry["sha256"] = hashlib.sha256(change[entry["name"]]).hexdigest()
    found["manifest.json"] = json.dumps(manifest).encode()
    with tarfile.open(archive, "w:gz") as tar:
        for name, data in found.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def damaged(data: bytes) -> bytes:
    """The database with its last page (the index's) overwritten by garbage."""
    page = int.from_bytes(data[16:18], "big")
    return data[:-page] + bytes([0x0D]) + b"\xff" * (page - 1)


def test_create_archives_databases_configuration_and_personas_and_never_a_secret(
    project: tuple[Path, dict[str, str]],
) -> None:
    root, env = project
    made = clawmesh("backup", "create", "out.tar.gz", env=env, cwd=root)
    assert made.returncode == 0, made.stderr
    assert "Secrets are not in this archive" in made.stdout
    found = members(root / "out.tar.gz")
    assert sorted(found) == [
        "agents/clawdia/IDENTITY.md",
        "config/agents.yaml",
        "config/mcp_servers.local.yaml",
        "config/mcp_servers.yaml",
        "config/schedule.yaml",
        "data/memory.sqlite3",
        "data/scheduler/scheduler.sqlite3",
        "manifest.json",
    ]
    for name, data in found.items():
        assert SECRET.encode() not in data, name
        assert b"PRIVATE KEY" not in data, name
    assert SECRET.encode() not in gzip.decompress((root / "out.tar.gz").read_bytes())
    manifest = json.loads(found["manifest.json"])
    assert "Secrets are not in this archive" in manifest["secrets"]
    assert manifest["source"]["data_dir"] == str(root / "data")
    [memory] = [e for e in manifest["files"] if e["name"] == "data/memory.sqlite3"]
    assert memory["schema_version"] == 2
    assert memory["sha256"] == hashlib.sha256(found["data/memory.sqlite3"]).hexdigest()
    assert (root / "out.tar.gz").stat().st_mode & 0o077 == 0


def test_verify_passes_a_good_archive_and_says_so_in_json(
    project: tuple[Path, dict[str, str]],
) -> None:
    root, env = project
    assert clawmesh("backup", "create", "out.tar.gz", env=env, cwd=root).returncode == 0
    checked = clawmesh("backup", "verify", "out.tar.gz", "--json", env=env, cwd=root)
    assert checked.returncode == 0, checked.stderr
    report = json.loads(checked.stdout)
    assert report["ok"] is True
    assert len(report["files"]) == 7


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        pytest.param("content", "does not match its checksum", id="a-changed-byte"),
        pytest.param("database", "is damaged", id="a-damaged-database-with-its-checksum"),
        pytest.param("truncated", "cannot be read", id="a-truncated-archive"),
        pytest.param("extra", "which its manifest does not list", id="a-file-not-listed"),
    ],
)
def test_verify_catches_a_damaged_archive_in_the_one_error_form(
    project: tuple[Path, dict[str, str]], damage: str, said: str
) -> None:
    root, env = project
    archive = root / "out.tar.gz"
    assert clawmesh("backup", "create", "out.tar.gz", env=env, cwd=root).returncode == 0
    name = "data/memory.sqlite3"
    original = members(archive)[name]
    if damage == "content":
        rewrite(archive, {name: original[:-1] + bytes([original[-1] ^ 1])}, manifest_too=False)
    elif damage == "database":
        rewrite(archive, {name: damaged(original)}, manifest_too=True)
    elif damage == "truncated":
        archive.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    else:
        rewrite(archive, {"agents/clawdia/.env": SECRET.encode()}, manifest_too=False)

    checked = clawmesh("backup", "verify", "out.tar.gz", env=env, cwd=root)
    assert checked.returncode == 1
    assert checked.stderr.startswith("Error: ")
    assert said in checked.stderr
    assert "Traceback" not in checked.stderr
    as_json = clawmesh("backup", "verify", "out.tar.gz", "--json", env=env, cwd=root)
    assert as_json.returncode == 1
    assert said in json.loads(as_json.stdout)["error"]
    # restore checks first: nothing is written
    fresh = root / "fresh"
    refused = clawmesh("backup", "restore", "out.tar.gz", "--data-dir", "fresh", env=env, cwd=root)
    assert refused.returncode == 1
    assert not fresh.exists()


def test_create_refuses_a_damaged_database_rather_than_archive_it(
    project: tuple[Path, dict[str, str]],
) -> None:
    root, env = project
    path = root / "data" / "memory.sqlite3"
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    path.write_bytes(damaged(path.read_bytes()))
    made = clawmesh("backup", "create", "out.tar.gz", env=env, cwd=root)
    assert made.returncode == 1
    assert "memory.sqlite3: the database file is damaged" in made.stderr
    assert "restore the file from a backup" in made.stderr
    assert not (root / "out.tar.gz").exists()


def test_restore_refuses_a_non_empty_data_directory_unless_forced(
    project: tuple[Path, dict[str, str]],
) -> None:
    root, env = project
    assert clawmesh("backup", "create", "out.tar.gz", env=env, cwd=root).returncode == 0
    data = root / "data"
    with sqlite3.connect(data / "memory.sqlite3") as db:
        db.execute("DELETE FROM notes")  # a change since the backup, left in the WAL
    db.close()

    refused = clawmesh("backup", "restore", "out.tar.gz", env=env, cwd=root)
    assert refused.returncode == 1
    assert "is not empty" in refused.stderr
    assert "--force" in refused.stderr

    forced = clawmesh("backup", "restore", "out.tar.gz", "--force", env=env, cwd=root)
    assert forced.returncode == 0, forced.stderr
    assert not (data / "memory.sqlite3-wal").exists()
    with sqlite3.connect(data / "memory.sqlite3") as db:
        assert db.execute("SELECT count(*) FROM notes").fetchone() == (200,)
    db.close()
    assert (data / "logs" / "chat.log").exists()  # what the archive does not hold stays


def test_restore_into_a_fresh_directory_and_root_writes_every_file_privately(
    project: tuple[Path, dict[str, str]],
) -> None:
    root, env = project
    assert clawmesh("backup", "create", "out.tar.gz", env=env, cwd=root).returncode == 0
    done = clawmesh(
        "backup", "restore", "out.tar.gz", "--data-dir", "new/data", "--root", "new", env=env,
        cwd=root,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    new = root / "new"
    assert (new / "data" / "scheduler" / "scheduler.sqlite3").stat().st_mode & 0o777 == 0o600
    assert (new / "data").stat().st_mode & 0o777 == 0o700
    assert (new / "config" / "agents.yaml").read_text() == (
        root / "config" / "agents.yaml"
    ).read_text()
    assert (new / "agents" / "clawdia" / "IDENTITY.md").exists()
    assert not (new / "agents" / "clawdia" / ".env").exists()

    (new / "config" / "agents.yaml").write_text("agents: {}\n")  # changed since
    again = clawmesh(
        "backup", "restore", "out.tar.gz", "--data-dir", "other", "--root", "new", env=env,
        cwd=root,
    )  # fmt: skip
    assert again.returncode == 1
    assert "differ from the archive" in again.stderr
    assert not (root / "other").exists()


def test_a_backup_taken_while_a_writer_commits_holds_whole_transactions(
    project: tuple[Path, dict[str, str]],
) -> None:
    root, env = project
    path = root / "data" / "memory.sqlite3"
    stop = threading.Event()
    committed = 0

    def write() -> None:
        nonlocal committed
        db = sqlite3.connect(path, isolation_level=None)
        db.execute("PRAGMA busy_timeout = 5000")
        while not stop.is_set():
            db.execute("BEGIN IMMEDIATE")
            db.executemany("INSERT INTO notes (text) VALUES (?)", [("pair",), ("pair",)])
            db.execute("COMMIT")
            committed += 1
        db.close()

    writer = threading.Thread(target=write)
    writer.start()
    try:
        made = clawmesh("backup", "create", "out.tar.gz", env=env, cwd=root)
    finally:
        stop.set()
        writer.join()
    assert made.returncode == 0, made.stderr
    copy = root / "copy.sqlite3"
    copy.write_bytes(members(root / "out.tar.gz")["data/memory.sqlite3"])
    with sqlite3.connect(copy) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        (pairs,) = db.execute("SELECT count(*) FROM notes WHERE text = 'pair'").fetchone()
    db.close()
    assert committed > 0
    assert pairs % 2 == 0


def test_create_without_a_database_says_where_it_looked(tmp_path: Path) -> None:
    env = {**os.environ, "DATA_DIR": str(tmp_path / "nothing")}
    made = clawmesh("backup", "create", env=env, cwd=tmp_path)
    assert made.returncode == 1
    assert made.stderr == (
        f"Error: no database under {tmp_path / 'nothing'} - set DATA_DIR to the stack's data "
        "directory (.env or the environment)\n"
    )


# --- private whichever way it is made -----------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]


def shell(
    script: str, *args: str, env: dict[str, str], cwd: Path
) -> subprocess.CompletedProcess[str]:
    """``script`` run by sh under a login shell's umask (022), ``$1``… being ``args``: as a
    person types the documented command."""
    return subprocess.run(
        ["sh", "-c", f"umask 022 && {script}", "sh", *args],
        check=False, env=env, cwd=cwd, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def mode(path: Path) -> str:
    return oct(path.stat().st_mode & 0o777)


def test_create_to_stdout_redirected_by_the_shell_on_the_host_is_private(
    project: tuple[Path, dict[str, str]],
) -> None:
    root, env = project
    (root / "old.tar.gz").write_bytes(b"an older archive")
    (root / "old.tar.gz").chmod(0o644)

    made = shell('"$1" backup create - > new.tar.gz', CLAWMESH, env=env, cwd=root)
    over = shell('"$1" backup create - > old.tar.gz', CLAWMESH, env=env, cwd=root)
    checked = clawmesh("backup", "verify", "new.tar.gz", env=env, cwd=root)

    assert (made.returncode, over.returncode, checked.returncode) == (0, 0, 0), made.stderr
    assert (mode(root / "new.tar.gz"), mode(root / "old.tar.gz")) == ("0o600", "0o600")


def test_make_backup_writes_a_private_archive_from_a_pipe_as_the_container_gives_it(
    project: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    """The compose route: the archive comes on the backup container's stdout, a pipe, and the
    host's shell makes the file. BACKUP_RUN stands for ``docker compose … run -T backup``: the
    same clawmesh, its stdout a pipe (the container route itself: tests/containers)."""
    root, env = project
    run = tmp_path / "compose-run-backup"
    run.write_text(f'#!/bin/sh\n"{CLAWMESH}" backup "$@" | cat\n')
    run.chmod(0o755)
    piped = shell(f'"$1" create - > {root}/piped.tar.gz', str(run), env=env, cwd=root)
    target = root / "stack.tar.gz"

    made = shell(
        'make --no-print-directory backup FILE="$1" BACKUP_RUN="$2"', str(target), str(run),
        env=env, cwd=ROOT,
    )  # fmt: skip
    failed = shell(
        'make --no-print-directory backup FILE="$1" BACKUP_RUN=false', str(root / "none.tar.gz"),
        env=env, cwd=ROOT,
    )  # fmt: skip

    assert piped.returncode == 0, piped.stderr
    assert mode(root / "piped.tar.gz") == "0o644"  # what a bare redirect of a pipe gives
    assert made.returncode == 0, made.stderr
    assert f"make backup: wrote {target} (0600" in made.stdout
    assert mode(target) == "0o600"
    assert clawmesh("backup", "verify", str(target), env=env, cwd=root).returncode == 0
    assert failed.returncode != 0
    assert "make backup: no archive written" in failed.stderr
    assert sorted(p.name for p in root.glob("*.tar.gz*")) == ["piped.tar.gz", "stack.tar.gz"]
