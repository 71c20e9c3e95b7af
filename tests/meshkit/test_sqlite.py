"""meshkit.sqlite: a store on a real file; checkpoints happen beside the requests."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import ClassVar

import anyio
import pytest

from meshkit.sqlite import SQLiteStore

pytestmark = pytest.mark.anyio


class Notes(SQLiteStore):
    SCHEMA = "CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL);"
    checkpoint_every_s = 0.05
    checkpoint_quiet_s = 0.05

    async def add(self, count: int) -> None:
        rows = [("x" * 500,)] * count
        await self._run(lambda db: db.executemany("INSERT INTO notes (body) VALUES (?)", rows))

    async def count(self) -> int:
        return int(
            await self._run(lambda db: db.execute("SELECT COUNT(*) FROM notes").fetchone()[0])
        )


async def test_a_serving_store_copies_its_wal_into_the_database_file_in_the_background(
    tmp_path: Path,
) -> None:
    path = tmp_path / "notes.sqlite3"
    store = Notes(path)
    async with store.lifespan():
        before = path.stat().st_size
        await store.add(200)  # ~100 kB: far below the pages at which a commit checkpoints
        with anyio.fail_after(5):
            while path.stat().st_size <= before:  # noqa: ASYNC110 (a file offers no event)
                await anyio.sleep(0.02)
        assert await store.count() == 200
    # Closed: another connection reads everything from the file.
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM notes").fetchone() == (200,)


async def test_commits_alone_leave_the_database_file_to_the_checkpointer(tmp_path: Path) -> None:
    path = tmp_path / "notes.sqlite3"
    store = Notes(path)
    await store.open()
    before = path.stat().st_size
    await store.add(200)  # the commits return after any checkpoint they would run
    assert path.stat().st_size == before  # in the WAL: no commit paid for a checkpoint
    await store.checkpoint()
    assert path.stat().st_size > before
    await store.aclose()


class NotesV2(Notes):
    """Notes, a version later: a column added."""

    SCHEMA = (
        "CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL, tag TEXT);"
    )
    SCHEMA_VERSION = 2
    MIGRATIONS: ClassVar[dict[int, str]] = {2: "ALTER TABLE notes ADD COLUMN tag TEXT;"}


async def test_a_file_of_an_older_schema_is_migrated_in_place_and_keeps_its_rows(
    tmp_path: Path,
) -> None:
    path = tmp_path / "notes.sqlite3"
    old = Notes(path)
    await old.add(3)
    await old.aclose()
    new = NotesV2(path)
    assert await new.count() == 3
    await new._run(lambda db: db.execute("UPDATE notes SET tag = 'kept'"))
    await new.aclose()
    fresh = NotesV2(tmp_path / "fresh.sqlite3")  # a new file: the schema alone, no steps
    assert await fresh.count() == 0
    await fresh.aclose()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (2,)
        assert db.execute("SELECT DISTINCT tag FROM notes").fetchall() == [("kept",)]
    db.close()
