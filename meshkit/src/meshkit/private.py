"""Files only the server's user may read: conversations, calendars, keys and logs are
nobody else's business on a shared machine.

DATA_DIR (and any directory made for such files) is 0700, every database and log file
0600, set here explicitly rather than left to the process umask (a login shell's 022
gives 0755 / 0644, world-readable). SQLite creates a database's ``-wal`` and ``-shm``
files with the database file's own mode, so a 0600 database keeps them 0600 too.

A directory or file an older version left looser is tightened when it is opened again:
the bits for group and others are cleared, the owner's kept. Where the file system
refuses (another user's directory, a read-only mount) it is left as it is: opening or
writing it then fails with its own clear message (``meshkit.storage``).
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import IO, Any

DIR_MODE = 0o700
FILE_MODE = 0o600
_SIDE_FILES = ("-wal", "-shm", "-journal")  # SQLite's, beside a database


def private_dir(path: Path) -> None:
    """Make ``path`` (0700; missing parents as ``mkdir -p`` makes them), or tighten it."""
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    tighten(path, DIR_MODE)


def private_file(path: Path) -> None:
    """Create ``path`` empty (0600) unless it exists, or tighten it; its directory must
    exist. An OSError names what the OS refused (a directory it cannot write)."""
    if not path.exists():  # an existing file is opened by its user (SQLite), as it is
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, FILE_MODE))
    tighten(path, FILE_MODE)


def private_database(path: Path) -> None:
    """A SQLite database file and its directory, and the side files an older version
    may have left with looser modes."""
    private_dir(path.parent)
    private_file(path)
    for suffix in _SIDE_FILES:
        side = path.with_name(path.name + suffix)
        if side.exists():
            tighten(side, FILE_MODE)


def private_output(stream: IO[Any]) -> None:
    """Make the file a shell opened for ``stream`` (``… > memory.md``, created with the
    shell's umask, often 0644) 0600, before anything is written to it: when it is a regular
    file this user owns. A pipe or a terminal is left alone (inside a container stdout is a
    pipe: the host's shell makes the file, and only a umask there keeps it private)."""
    with contextlib.suppress(OSError, ValueError):
        descriptor = stream.fileno()
        found = os.fstat(descriptor)
        mode = stat.S_IMODE(found.st_mode)
        if stat.S_ISREG(found.st_mode) and found.st_uid == os.geteuid() and mode & ~FILE_MODE:
            os.fchmod(descriptor, mode & FILE_MODE)


def tighten(path: Path, mode: int) -> None:
    """Clear the bits of ``path`` that ``mode`` lacks, where the file system allows it."""
    with contextlib.suppress(OSError):
        current = path.stat().st_mode & 0o777
        if current & ~mode:
            path.chmod(current & mode)
