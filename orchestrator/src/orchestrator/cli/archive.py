"""The backup archive: one ``.tar.gz`` with ``manifest.json`` first, then the files it lists.

    manifest.json   {"format": "clawmesh-backup", "version": 1, "created", "source",
                     "secrets", "files": [{"name", "kind", "size", "sha256",
                     "schema_version"}]}

A database is copied with SQLite's online backup API (``Connection.backup``): one read
transaction over the whole file, so the copy is the database as of one moment while the
servers go on writing (WAL mode: they are never blocked). The copy is switched to a
rollback journal (one self-contained file; a server turns WAL on again when it opens it)
and checked whole before it goes in: a damaged database is refused at once rather than
found out at restore time.

:func:`verify` reads an archive back: every file listed, none more, each with its size
and SHA-256, every database opening and passing ``PRAGMA integrity_check``.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import shutil
import socket
import sqlite3
import tarfile
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import BinaryIO, Literal

from pydantic import BaseModel, ValidationError

from meshkit.command import CliError
from meshkit.storage import DAMAGED_FILE, fault
from orchestrator.cli.backup_sources import Source

FORMAT: Literal["clawmesh-backup"] = "clawmesh-backup"
VERSION = 1
MANIFEST = "manifest.json"
KINDS = ("data", "config", "agents")
Kind = Literal["data", "config", "agents"]
CHUNK = 1 << 20


class Entry(BaseModel):
    name: str
    kind: Kind
    size: int
    sha256: str
    schema_version: int | None = None  # a database's PRAGMA user_version


class Manifest(BaseModel):
    format: Literal["clawmesh-backup"] = FORMAT
    version: int = VERSION
    created: str
    source: dict[str, str]
    secrets: str
    files: list[Entry]


def default_name(now: datetime) -> str:
    return f"clawmesh-backup-{now.astimezone(UTC):%Y%m%d-%H%M%S}.tar.gz"


def check_name(name: str) -> None:
    """An archive's member name is relative, inside one of KINDS, with no ``..``."""
    path = PurePosixPath(name)
    if (
        path.is_absolute()
        or ".." in path.parts
        or len(path.parts) < 2
        or path.parts[0] not in KINDS
    ):
        raise CliError(f"the archive names a file outside its place: {name!r}", DAMAGED_FIX)


DAMAGED_FIX = "take another backup with clawmesh backup create, or use an older archive"


def snapshot(database: Path, copy: Path) -> int:
    """``database`` copied to ``copy`` as of one moment (online backup), checked whole;
    its schema version."""
    try:
        source = sqlite3.connect(f"file:{database}?mode=rw", uri=True)
    except sqlite3.Error as error:
        raise CliError(f"cannot open the database {database}: {error}", _READABLE) from None
    try:
        source.execute("PRAGMA busy_timeout = 5000")
        with contextlib.closing(sqlite3.connect(copy)) as target:
            source.backup(target)
            target.execute("PRAGMA journal_mode = DELETE")
            problems = _problems(target)
            (schema,) = target.execute("PRAGMA user_version").fetchone()
    except sqlite3.Error as error:
        found = fault(error)
        why, fix = (str(error), _READABLE) if found is None else (found.reason, found.fix)
        raise CliError(f"cannot back up the database {database}: {why}", fix) from None
    finally:
        source.close()
    if problems:
        raise CliError(
            f"cannot back up the database {database}: {DAMAGED_FILE.reason} ({problems[0]})",
            DAMAGED_FILE.fix,
        )
    return int(schema)


_READABLE = "check that DATA_DIR is readable and writable by this user (SQLite's -shm file)"


def _problems(db: sqlite3.Connection) -> list[str]:
    rows = [str(row[0]) for row in db.execute("PRAGMA integrity_check").fetchall()]
    return [] if rows == ["ok"] else rows


def digest(path: Path) -> str:
    with path.open("rb") as file:
        return hashlib.file_digest(file, "sha256").hexdigest()


def write(
    target: Path,
    databases: list[Source],
    files: list[Source],
    *,
    source: dict[str, str],
    secrets: str,
    now: datetime,
) -> Manifest:
    """The archive at ``target`` (written aside, then renamed into place): the databases
    snapshotted, the other files as they are."""
    with tempfile.TemporaryDirectory(prefix="clawmesh-backup-") as work:
        staged: list[tuple[Path, Entry]] = []
        for number, found in enumerate(databases):
            copy = Path(work) / f"{number}.sqlite3"
            schema = snapshot(found.path, copy)
            staged.append((copy, _entry(found.name, copy, schema)))
        for found in files:
            staged.append((found.path, _entry(found.name, found.path, None)))
        manifest = Manifest(
            created=now.astimezone(UTC).isoformat(timespec="seconds"),
            source={"host": socket.gethostname(), **source},
            secrets=secrets,
            files=[entry for _, entry in staged],
        )
        draft = target.with_name(f".{target.name}.{os.getpid()}.part")
        try:
            with _private_draft(draft) as out, tarfile.open(fileobj=out, mode="w:gz") as tar:
                _add_bytes(tar, MANIFEST, manifest.model_dump_json(indent=2).encode(), now)
                for path, entry in staged:
                    info = tar.gettarinfo(str(path), arcname=entry.name)
                    info.uid = info.gid = 0
                    info.uname = info.gname = ""
                    info.mode = 0o600
                    with path.open("rb") as file:
                        tar.addfile(info, file)
            draft.replace(target)
        except OSError as error:
            draft.unlink(missing_ok=True)
            raise CliError(
                f"cannot write the archive {target}: {error.strerror}",
                "choose a FILE in a directory this user can write, on a disk with room",
            ) from None
    return manifest


def _entry(name: str, path: Path, schema: int | None) -> Entry:
    kind = name.split("/", 1)[0]
    assert kind in KINDS
    return Entry(
        name=name,
        kind=kind,
        size=path.stat().st_size,
        sha256=digest(path),
        schema_version=schema,
    )


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes, now: datetime) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = int(now.timestamp())
    info.mode = 0o600
    tar.addfile(info, io.BytesIO(data))


@contextlib.contextmanager
def opened(archive: Path) -> Iterator[tuple[Manifest, Path]]:
    """The archive's manifest and a private directory holding its files, each checked
    against the manifest (size, SHA-256; none missing, none more); raises CliError."""
    if not archive.is_file():
        raise CliError(f"no archive at {archive}", "give the path of a clawmesh backup (.tar.gz)")
    with tempfile.TemporaryDirectory(prefix="clawmesh-restore-") as work:
        root = Path(work)
        try:
            manifest = _extract(archive, root)
        except (tarfile.TarError, OSError, EOFError) as error:
            raise CliError(f"the archive {archive} cannot be read ({error})", DAMAGED_FIX) from None
        yield manifest, root


def _extract(archive: Path, root: Path) -> Manifest:
    with tarfile.open(archive, "r:gz") as tar:
        first = tar.next()
        if first is None or first.name != MANIFEST or not first.isfile():
            raise CliError(f"{archive} is not a clawmesh backup (no {MANIFEST} first)", DAMAGED_FIX)
        reader = tar.extractfile(first)
        assert reader is not None
        try:
            manifest = Manifest.model_validate_json(reader.read())
        except ValidationError as error:
            raise CliError(
                f"the manifest of {archive} is not valid: {error}", DAMAGED_FIX
            ) from None
        expected = {entry.name: entry for entry in manifest.files}
        seen: set[str] = set()
        for member in tar:
            if member is first:
                continue
            check_name(member.name)
            entry = expected.get(member.name)
            if entry is None or not member.isfile() or member.name in seen:
                raise CliError(
                    f"the archive holds {member.name}, which its manifest does not list",
                    DAMAGED_FIX,
                )
            seen.add(member.name)
            _check_member(tar, member, entry, root)
        missing = sorted(set(expected) - seen)
        if missing:
            raise CliError(
                f"the archive lacks {', '.join(missing)} (listed in its manifest)", DAMAGED_FIX
            )
    return manifest


def _check_member(tar: tarfile.TarFile, member: tarfile.TarInfo, entry: Entry, root: Path) -> None:
    target = root.joinpath(*PurePosixPath(member.name).parts)
    target.parent.mkdir(parents=True, exist_ok=True)
    reader = tar.extractfile(member)
    assert reader is not None
    sha = hashlib.sha256()
    size = 0
    with target.open("wb") as out:
        while chunk := reader.read(CHUNK):
            sha.update(chunk)
            size += len(chunk)
            out.write(chunk)
    if size != entry.size or sha.hexdigest() != entry.sha256:
        raise CliError(
            f"{member.name} in the archive does not match its checksum (the archive is damaged)",
            DAMAGED_FIX,
        )


def check_databases(manifest: Manifest, root: Path) -> None:
    """Every database of the extracted archive opens and passes ``PRAGMA integrity_check``."""
    for entry in manifest.files:
        if entry.kind != "data":
            continue
        path = root.joinpath(*PurePosixPath(entry.name).parts)
        problems: list[str]
        try:
            with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
                problems = _problems(db)
        except sqlite3.Error as error:
            problems = [str(error)]
        if problems:
            raise CliError(
                f"the database {entry.name} in the archive is damaged ({problems[0]})",
                DAMAGED_FIX,
            )


@contextlib.contextmanager
def _private_draft(draft: Path, mode: int = 0o600) -> Iterator[BinaryIO]:
    """``draft`` opened new with ``mode`` from its first byte (never the umask's 0644 while
    it is written), replacing a stale one a killed run left."""
    draft.unlink(missing_ok=True)
    with os.fdopen(os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode), "wb") as out:
        yield out


def copy_file(source: Path, target: Path, mode: int = 0o600) -> None:
    """``source`` to ``target``, written aside (private until it is whole) then renamed into
    place with ``mode``."""
    draft = target.with_name(f".{target.name}.{os.getpid()}.part")
    with source.open("rb") as reader, _private_draft(draft) as writer:
        shutil.copyfileobj(reader, writer, CHUNK)
        writer.flush()
        os.fsync(writer.fileno())
    draft.chmod(mode)
    draft.replace(target)
