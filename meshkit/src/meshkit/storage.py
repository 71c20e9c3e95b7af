"""Storage faults: what a refused write or a damaged file means, said once to each audience.

    StorageUnavailable (ConfigError)   at start: the database cannot be opened or is damaged;
                                       one line for the operator naming the path and the fix
    StorageFailed (ModelError)         at run time: the disk refused a read or a write; a
                                       tool error the model can pass on, in words

:func:`fault` tells a storage fault (disk full, I/O error, read-only, damaged file, cannot
open) from every other SQLite error (a constraint, a busy lock, a bug), which stays what
it is. :class:`StorageState` remembers the fault until a write succeeds again, for the
``storage`` health check, and logs it at most once a minute: a full disk fails every call,
and a traceback per call would bury the one line the operator needs.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from meshkit.errors import ModelError
from meshkit.health import CheckFailed
from meshkit.yaml_config import ConfigError

logger = logging.getLogger(__name__)

LOG_EVERY_S = 60.0
WRITABLE = "make DATA_DIR writable by the server's user (in a container: mount a volume on it)"
DAMAGED = "restore the file from a backup, or move it aside to start with an empty one"
FULL = "free space on the disk that holds DATA_DIR"


@dataclass(frozen=True)
class Fault:
    """A storage fault: ``reason`` in a few words, ``fix`` for the operator."""

    reason: str
    fix: str


DAMAGED_FILE = Fault("the database file is damaged", DAMAGED)
DISK_FULL = Fault("the disk is full", FULL)

# SQLite's primary result codes that mean the storage, not the request, is at fault.
_FAULTS = {
    "SQLITE_FULL": DISK_FULL,
    "SQLITE_IOERR": Fault("the disk failed a read or a write (I/O error)", "check the disk"),
    "SQLITE_READONLY": Fault("the database is read-only", WRITABLE),
    "SQLITE_CANTOPEN": Fault("the database file cannot be opened or created", WRITABLE),
    "SQLITE_PERM": Fault("permission denied", WRITABLE),
    "SQLITE_CORRUPT": DAMAGED_FILE,
    "SQLITE_NOTADB": Fault("the file is not a SQLite database", DAMAGED),
}


def fault(error: BaseException) -> Fault | None:
    """The storage fault ``error`` reports, or None when it is no storage fault. An error
    raised while handling a storage fault (a ROLLBACK after SQLITE_FULL) reports that fault."""
    found = _fault(error)
    if found is None and error.__context__ is not None:
        return fault(error.__context__)
    return found


def _fault(error: BaseException) -> Fault | None:
    if isinstance(error, sqlite3.Error):
        # Extended codes (SQLITE_IOERR_WRITE, SQLITE_READONLY_DBMOVED...) share their prefix.
        name = getattr(error, "sqlite_errorname", "") or ""
        return next((f for code, f in _FAULTS.items() if name.startswith(code)), None)
    if isinstance(error, OSError):  # creating DATA_DIR
        return Fault(error.strerror or type(error).__name__, WRITABLE)
    return None


def capped(found: Fault, max_bytes: int | None) -> Fault:
    """``found`` as said for a database capped at ``max_bytes``: SQLite reports both a full
    disk and the cap as SQLITE_FULL."""
    if found is not DISK_FULL or max_bytes is None:
        return found
    return Fault(
        f"the disk is full, or the database reached DATA_MAX_MB ({max_bytes / 1e6:g} MB)",
        f"{FULL}, or raise DATA_MAX_MB",
    )


class StorageUnavailable(ConfigError):
    """The database cannot be used at start: the message names the path and the fix."""

    def __init__(self, path: Path, found: Fault) -> None:
        super().__init__(f"cannot use the database {path}: {found.reason}; {found.fix}")


class StorageFailed(ModelError):
    """The disk refused this request's read or write: nothing was changed."""

    def __init__(self, found: Fault) -> None:
        super().__init__(
            f"The server's storage failed ({found.reason}), so this request was not completed "
            "and nothing was changed. Tell the user it did not work and to try again later; "
            "the operator has been told."
        )


class StorageState:
    """The storage fault in force (until a write succeeds), logged at most once a minute."""

    def __init__(
        self,
        path: Path,
        *,
        clock: Callable[[], float] = time.monotonic,
        log_every_s: float = LOG_EVERY_S,
    ) -> None:
        self._path = path
        self._clock = clock
        self._every = log_every_s
        self.failing: Fault | None = None
        self._logged_at: float | None = None
        self._told = False  # this episode's failure was logged: so is its end
        self._unlogged = 0  # failures since the last line

    def failed(self, found: Fault) -> None:
        self.failing = found
        now = self._clock()
        if self._logged_at is not None and now - self._logged_at < self._every:
            self._unlogged += 1
            return
        more = f" ({self._unlogged} more since the last report)" if self._unlogged else ""
        logger.error("storage of %s failed: %s; %s%s", self._path, found.reason, found.fix, more)
        self._logged_at, self._told, self._unlogged = now, True, 0

    def succeeded(self) -> None:
        """A write went through: the fault, if any, is over."""
        if self.failing is None:
            return
        if self._told:
            logger.warning("storage of %s works again: a write succeeded", self._path)
        self.failing, self._told = None, False

    async def check(self) -> None:
        """Health (``storage``): fails while the last fault stands."""
        if self.failing is not None:
            raise CheckFailed(f"{self.failing.reason} ({self._path.name}); {self.failing.fix}")
