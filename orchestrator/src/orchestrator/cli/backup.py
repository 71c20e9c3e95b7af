"""``clawmesh backup create|verify|restore``: the fleet's state in one archive, and back.

    clawmesh backup create [FILE]          every database (online: the stack may run), the
                                           configuration, the personas; a manifest of checksums
    clawmesh backup verify FILE            checksums, and every database passes integrity_check
    clawmesh backup restore FILE [--data-dir D] [--root R] [--force]
                                           into a fresh data directory (and R's config/ and
                                           agents/ with --root); a non-empty one needs --force

Where things are comes from ``.env`` and the environment, as for every entry point
(``DATA_DIR``, ``CLAWMESH_AGENTS``, ``CLAWMESH_SCHEDULE``, ``CLAWMESH_REGISTRY``,
``CLAWMESH_ROOT``). In compose, ``compose.backup.yaml``'s one-off service mounts every
volume (see the README). Secrets are never archived (backup_sources.SECRETS_NOTE).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

from cyclopts import App, Parameter

from meshkit.command import CliError, Json, guarded, settings_of
from meshkit.private import private_output
from orchestrator.cli import archive
from orchestrator.cli.backup_sources import (
    SECRETS_NOTE,
    BackupSettings,
    configuration,
    databases,
    personas,
)
from orchestrator.cli.restore import restore as restore_archive

backup_app = App(name="backup")  # its description: clawmesh's (cli/main.py)

# "-" is a file name here (stdin, stdout), not an option.
Archive = Annotated[Path, Parameter(allow_leading_hyphen=True)]


@backup_app.command
def create(file: Archive | None = None, *, as_json: Json = False) -> None:
    """Write one archive of every database (consistent while the servers run), the fleet's
    configuration and the personas; secrets are left out.

    Parameters
    ----------
    file
        The archive to write, 0600 (default: clawmesh-backup-<UTC time>.tar.gz here; "-":
        stdout, for docker compose run -T, the messages then on stderr; a file the shell
        opened for it here is made 0600 too, while a pipe's end is the shell's: make backup
        or umask 077 keeps that one private).
    """
    to_stdout = file == STDIO
    say = _printer(to_stderr=to_stdout)

    def run() -> None:
        if to_stdout:  # "create - > file" on the host: the shell made the file, umask-wide
            private_output(sys.stdout)
        settings = settings_of(BackupSettings)
        now = datetime.now(UTC)
        found = databases(settings.data_dir)
        if not found:
            raise CliError(
                f"no database under {settings.data_dir.resolve()}",
                "set DATA_DIR to the stack's data directory (.env or the environment)",
            )
        with _spooled() as spool:
            named = file or Path(archive.default_name(now))
            target = spool / "archive.tar.gz" if to_stdout else named
            manifest = archive.write(
                target,
                found,
                configuration(settings) + personas(settings.root),
                source={
                    "data_dir": str(settings.data_dir.resolve()),
                    "root": str(settings.root.resolve()),
                },
                secrets=SECRETS_NOTE,
                now=now,
            )
            size = target.stat().st_size
            if to_stdout:
                with target.open("rb") as reader:
                    shutil.copyfileobj(reader, sys.stdout.buffer)
                sys.stdout.buffer.flush()
        shown = "stdout" if to_stdout else str(target)
        if as_json:
            say(json.dumps({"archive": shown, **manifest.model_dump()}))
            return
        for entry in manifest.files:
            say(_line(entry))
        say(f"Wrote {shown} ({len(manifest.files)} files, {size} bytes).")
        say(SECRETS_NOTE)

    guarded(run, as_json=as_json)


@backup_app.command
def verify(file: Archive, *, as_json: Json = False) -> None:
    """Check an archive: every file against its checksum, every database whole.

    Parameters
    ----------
    file
        The archive to check ("-": stdin).
    """

    def run() -> None:
        with _readable(file) as path, archive.opened(path) as (manifest, extracted):
            archive.check_databases(manifest, extracted)
        if as_json:
            print(json.dumps({"archive": str(file), "ok": True, **manifest.model_dump()}))
            return
        for entry in manifest.files:
            print(_line(entry))
        print(
            f"{file}: ok ({len(manifest.files)} files match their checksums, every database "
            f"passes integrity_check; taken {manifest.created} on {manifest.source.get('host')})."
        )

    guarded(run, as_json=as_json)


@backup_app.command
def restore(
    file: Archive,
    *,
    data_dir: Path | None = None,
    root: Path | None = None,
    force: bool = False,
    as_json: Json = False,
) -> None:
    """Restore an archive, checked first, into a fresh data directory.

    Parameters
    ----------
    file
        The archive to restore ("-": stdin, for docker compose run -T).
    data_dir
        Where the databases go (default: DATA_DIR). Refused when it holds any file, unless
        --force (stop the stack first).
    root
        Also restore the configuration (ROOT/config/) and the personas (ROOT/agents/);
        files that differ are refused unless --force.
    force
        Replace what is there.
    """

    def run() -> None:
        target = data_dir or settings_of(BackupSettings).data_dir
        with _readable(file) as path:
            done = restore_archive(path, target.absolute(), root and root.absolute(), force=force)
        if as_json:
            print(
                json.dumps(
                    {
                        "archive": str(file),
                        "written": [str(p) for p in done.written],
                        "unchanged": [str(p) for p in done.unchanged],
                        "secrets": done.manifest.secrets,
                    }
                )
            )
            return
        for path in done.written:
            print(f"restored {path}")
        for path in done.unchanged:
            print(f"unchanged {path}")
        if root is None:
            print("Configuration and personas left as they are (--root restores them).")
        print(f"Restored {file} (taken {done.manifest.created}) into {target}.")
        print(done.manifest.secrets)

    guarded(run, as_json=as_json)


STDIO = Path("-")


@contextlib.contextmanager
def _spooled() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="clawmesh-archive-") as work:
        yield Path(work)


@contextlib.contextmanager
def _readable(file: Path) -> Iterator[Path]:
    """``file``, or what stdin holds (``-``) in a private temporary file."""
    if file != STDIO:
        yield file
        return
    with _spooled() as spool:
        path = spool / "archive.tar.gz"
        with path.open("wb") as writer:
            shutil.copyfileobj(sys.stdin.buffer, writer)
        yield path


def _printer(*, to_stderr: bool) -> Callable[[str], None]:
    stream = sys.stderr if to_stderr else sys.stdout
    return lambda line: print(line, file=stream)


def _line(entry: archive.Entry) -> str:
    schema = f", schema {entry.schema_version}" if entry.schema_version is not None else ""
    return f"  {entry.name} ({entry.size} bytes{schema}) sha256:{entry.sha256[:12]}"
