"""Restoring an archive: checked whole first, then the databases into a data directory and,
when asked (``--root``), the configuration and the personas into a project root.

Nothing is written before the whole archive has passed :func:`archive.opened` (checksums)
and :func:`archive.check_databases`. A data directory holding any file is live data: it is
refused unless ``--force``, which replaces each database the archive holds (its stale
``-wal`` and ``-shm`` removed first: SQLite would replay an old WAL into the new file) and
leaves every other file alone. A configuration file or persona that differs from the
archive's is refused the same way; one that is the same is left as it is.
"""

from __future__ import annotations

import filecmp
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from meshkit.command import CliError
from meshkit.private import private_dir
from orchestrator.cli.archive import Manifest, check_databases, copy_file, opened

SIDE_FILES = ("-wal", "-shm", "-journal")
STOP_FIRST = "stop the stack before a restore (make down, or stop make run)"


@dataclass
class Restored:
    manifest: Manifest
    written: list[Path] = field(default_factory=list)
    unchanged: list[Path] = field(default_factory=list)


def restore(archive: Path, data_dir: Path, root: Path | None, *, force: bool) -> Restored:
    with opened(archive) as (manifest, extracted):
        check_databases(manifest, extracted)
        plan = [
            (extracted / e.name, target)
            for e in manifest.files
            if (target := _target(e.name, data_dir, root)) is not None
        ]
        _refuse_live_data(data_dir, force=force)
        done = Restored(manifest)
        conflicts = []
        for source, target in plan:
            if target.is_relative_to(data_dir) or not target.exists():
                continue
            if filecmp.cmp(source, target, shallow=False):
                done.unchanged.append(target)
            else:
                conflicts.append(target)
        if conflicts and not force:
            raise CliError(
                f"{len(conflicts)} file(s) differ from the archive's, e.g. {conflicts[0]}",
                "restore into another --root, or add --force to replace them",
            )
        for source, target in plan:
            if target in done.unchanged:
                continue
            try:
                _place(source, target, database=target.is_relative_to(data_dir))
            except OSError as error:
                raise CliError(
                    f"cannot write {target}: {error.strerror}",
                    "make the directory writable by this user, on a disk with room (compose: "
                    "`docker compose create` first makes the volumes, owned by the servers' "
                    "user)",
                ) from None
            done.written.append(target)
        return done


def _target(name: str, data_dir: Path, root: Path | None) -> Path | None:
    kind, *rest = PurePosixPath(name).parts
    if kind == "data":
        return data_dir.joinpath(*rest)
    return None if root is None else root.joinpath(kind, *rest)


def _refuse_live_data(data_dir: Path, *, force: bool) -> None:
    if not data_dir.exists():
        return
    if not data_dir.is_dir():
        raise CliError(f"{data_dir} is not a directory", "give --data-dir a directory")
    live = sorted(p for p in data_dir.rglob("*") if p.is_file())
    if live and not force:
        raise CliError(
            f"the data directory {data_dir} is not empty ({len(live)} files, e.g. "
            f"{live[0].relative_to(data_dir)})",
            f"restore into a fresh --data-dir, or {STOP_FIRST} and add --force to replace "
            "its databases",
        )


def _place(source: Path, target: Path, *, database: bool) -> None:
    if database:
        private_dir(target.parent)
        for suffix in SIDE_FILES:
            target.with_name(target.name + suffix).unlink(missing_ok=True)
        copy_file(source, target, 0o600)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        copy_file(source, target, 0o644)
