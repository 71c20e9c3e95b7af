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

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

from cyclopts import App, Parameter

from meshkit.settings import load_dotenv
from orchestrator.cli import archive
from orchestrator.cli.backup_sources import (
    SECRETS_NOTE,
    BackupSettings,
    configuration,
    databases,
    personas,
)
from orchestrator.cli.errors import CliError, guarded
from orchestrator.cli.restore import restore as restore_archive

backup_app = App(name="backup", help="Back up and restore the databases and configuration.")

Json = Annotated[bool, Parameter(name="--json", negative=(), help="print JSON on stdout")]


def _settings() -> BackupSettings:
    load_dotenv()
    return BackupSettings()


@backup_app.command
def create(file: Path | None = None, *, as_json: Json = False) -> None:
    """Write one archive of every database (consistent while the servers run), the fleet's
    configuration and the personas; secrets are left out.

    Parameters
    ----------
    file
        The archive to write (default: clawmesh-backup-<UTC time>.tar.gz here).
    """

    def run() -> None:
        settings = _settings()
        now = datetime.now(UTC)
        target = file or Path(archive.default_name(now))
        found = databases(settings.data_dir)
        if not found:
            raise CliError(
                f"no database under {settings.data_dir.resolve()}",
                "set DATA_DIR to the stack's data directory (.env or the environment)",
            )
        others = configuration(settings) + personas(settings.root)
        manifest = archive.write(
            target,
            found,
            others,
            source={
                "data_dir": str(settings.data_dir.resolve()),
                "root": str(settings.root.resolve()),
            },
            secrets=SECRETS_NOTE,
            now=now,
        )
        if as_json:
            print(json.dumps({"archive": str(target), **manifest.model_dump()}))
            return
        for entry in manifest.files:
            print(_line(entry))
        print(f"Wrote {target} ({len(manifest.files)} files, {target.stat().st_size} bytes).")
        print(SECRETS_NOTE)

    guarded(run, as_json=as_json)


@backup_app.command
def verify(file: Path, *, as_json: Json = False) -> None:
    """Check an archive: every file against its checksum, every database whole.

    Parameters
    ----------
    file
        The archive to check.
    """

    def run() -> None:
        with archive.opened(file) as (manifest, extracted):
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
    file: Path,
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
        The archive to restore.
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
        target = data_dir or _settings().data_dir
        done = restore_archive(file, target.absolute(), root and root.absolute(), force=force)
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


def _line(entry: archive.Entry) -> str:
    schema = f", schema {entry.schema_version}" if entry.schema_version is not None else ""
    return f"  {entry.name} ({entry.size} bytes{schema}) sha256:{entry.sha256[:12]}"
