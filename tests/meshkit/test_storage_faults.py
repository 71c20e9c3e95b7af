"""meshkit.sqlite storage faults on real SQLite files: a damaged or unwritable database at
start, a full one at run time (``PRAGMA max_page_count``, through ``max_bytes``, makes the
real engine answer SQLITE_FULL)."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import pytest

from fakes.clock import Clock
from meshkit.health import run_checks
from meshkit.sqlite import SQLiteStore
from meshkit.storage import StorageFailed, StorageUnavailable

pytestmark = pytest.mark.anyio

PAGE = 4096


class Notes(SQLiteStore):
    SCHEMA = "CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL);"

    async def add(self, body: str) -> None:
        await self._run(lambda db: db.execute("INSERT INTO notes (body) VALUES (?)", (body,)))

    async def add_with_id(self, note_id: int) -> None:
        await self._run(lambda db: db.execute("INSERT INTO notes VALUES (?, 'x')", (note_id,)))

    async def forget_all(self) -> None:
        await self._run(lambda db: db.execute("DELETE FROM notes"))

    async def count(self) -> int:
        return int(
            await self._run(lambda db: db.execute("SELECT COUNT(*) FROM notes").fetchone()[0])
        )


def full_store(tmp_path: Path, clock: Clock) -> Notes:
    """A store capped two pages above its empty size: a few notes fill it."""
    path = tmp_path / "notes.sqlite3"
    Notes(path).verify()
    with sqlite3.connect(path) as db:
        (pages,) = db.execute("PRAGMA page_count").fetchone()
    return Notes(path, max_bytes=(pages + 2) * PAGE, clock=clock)


async def fill(store: Notes) -> StorageFailed:
    for _ in range(100):
        try:
            await store.add("n" * 1500)
        except StorageFailed as error:
            return error
    raise AssertionError("the capped store never filled up")


async def storage(store: Notes) -> str:
    return (await run_checks({"storage": store.storage.check}))["storage"]


async def test_a_full_database_refuses_the_write_in_words_and_keeps_what_it_had(
    tmp_path: Path,
) -> None:
    store = full_store(tmp_path, Clock())
    await store.add("first")
    error = await fill(store)
    stored = await store.count()

    assert "storage failed (the disk is full, or the database reached DATA_MAX_MB" in str(error)
    assert "nothing was changed" in str(error)
    assert "try again later" in str(error)
    assert str(tmp_path) not in str(error)  # the model gets words, not the server's paths
    assert stored >= 1
    await store.aclose()


async def test_health_reports_storage_failing_until_a_write_succeeds_again(
    tmp_path: Path,
) -> None:
    store = full_store(tmp_path, Clock())
    before = await storage(store)
    await fill(store)
    during = await storage(store)
    await store.count()  # a read proves nothing about writes
    after_a_read = await storage(store)
    await store.forget_all()  # frees pages: a write that succeeds
    after_a_write = await storage(store)
    await store.add("fits again")

    assert before == "ok"
    assert during.startswith("fail: the disk is full")
    assert "notes.sqlite3" in during
    assert "free space on the disk that holds DATA_DIR" in during
    assert after_a_read == during
    assert after_a_write == "ok"
    await store.aclose()


async def test_a_failing_write_is_logged_once_a_minute_not_once_a_call(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    clock = Clock()
    store = full_store(tmp_path, clock)
    caplog.set_level(logging.INFO, logger="meshkit.storage")
    await fill(store)
    for _ in range(20):
        clock.advance(2)  # 40 s of calls, each refused
        with pytest.raises(StorageFailed):
            await store.add("n" * 1500)
    in_the_first_minute = [r for r in caplog.records if r.name == "meshkit.storage"]
    clock.advance(21)  # a minute after the first report
    with pytest.raises(StorageFailed):
        await store.add("n" * 1500)
    reports = [r for r in caplog.records if r.name == "meshkit.storage"]

    assert len(in_the_first_minute) == 1
    assert len(reports) == 2
    assert reports[0].levelno == logging.ERROR
    assert str(store.path) in reports[0].getMessage()
    assert "20 more since the last report" in reports[1].getMessage()
    assert all(r.exc_info is None for r in reports)  # one line, no traceback
    await store.forget_all()
    recovered = [r.getMessage() for r in caplog.records if r.name == "meshkit.storage"][2:]
    assert recovered == [f"storage of {store.path} works again: a write succeeded"]
    await store.aclose()


async def test_an_error_of_the_request_is_no_storage_fault(tmp_path: Path) -> None:
    store = Notes(tmp_path / "notes.sqlite3")
    await store.add_with_id(1)
    with pytest.raises(sqlite3.IntegrityError):
        await store.add_with_id(1)
    assert await storage(store) == "ok"
    await store.aclose()


def test_a_file_of_garbage_stops_the_start_naming_the_path_and_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "notes.sqlite3"
    path.write_bytes(b"not a database, just garbage " * 200)
    with pytest.raises(StorageUnavailable) as refused:
        Notes(path).verify()
    assert str(refused.value) == (
        f"cannot use the database {path}: the file is not a SQLite database; restore the file "
        "from a backup, or move it aside to start with an empty one"
    )


def test_a_truncated_database_stops_the_start_as_damaged(tmp_path: Path) -> None:
    path = tmp_path / "notes.sqlite3"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
        db.executemany("INSERT INTO notes (body) VALUES (?)", [("x" * 300,)] * 2000)
    size = path.stat().st_size
    with path.open("r+b") as file:
        file.truncate(size // 2)
    with pytest.raises(StorageUnavailable) as refused:
        Notes(path).verify()
    assert str(refused.value).startswith(
        f"cannot use the database {path}: the database file is damaged; restore the file"
    )


def test_a_data_dir_that_cannot_be_created_stops_the_start_in_the_systems_words(
    tmp_path: Path,
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("DATA_DIR points below a file")
    path = blocker / "data" / "notes.sqlite3"
    with pytest.raises(StorageUnavailable) as refused:
        Notes(path).verify()
    assert str(refused.value) == (
        f"cannot use the database {path}: Not a directory; make DATA_DIR writable by the "
        "server's user (in a container: mount a volume on it)"
    )


def test_a_database_of_a_newer_version_stops_the_start_saying_so(tmp_path: Path) -> None:
    path = tmp_path / "notes.sqlite3"
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {Notes.SCHEMA_VERSION + 1}")
    with pytest.raises(StorageUnavailable) as refused:
        Notes(path).verify()
    assert str(refused.value) == (
        f"cannot use the database {path}: it has schema 2, written by a newer version of this "
        "server; run that version, or restore a backup this version wrote"
    )
