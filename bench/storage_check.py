"""What the start check of a database costs (``SQLiteStore.verify``: open, schema, quick_check).

uv run python -m bench.storage_check [--sizes 1,10,50] [--runs 5]

Every server with a database runs it once when it is built. The databases are filled with
rows of the size of conversation items (with an index, as the memory server has), in a
temporary directory. The page cache is warm after the first run: the median shows the CPU
cost; a cold start on a slow disk adds reading the file once.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from meshkit.sqlite import SQLiteStore

ROW = "a conversation item of a typical length, " * 12  # ~500 bytes


class Items(SQLiteStore):
    SCHEMA = (
        "CREATE TABLE IF NOT EXISTS items (id INTEGER PRIMARY KEY, chat TEXT, body TEXT);"
        "CREATE INDEX IF NOT EXISTS items_chat ON items (chat, id);"
    )


def filled(path: Path, megabytes: int) -> None:
    Items(path).verify()
    rows = megabytes * 1_000_000 // (len(ROW) + 40)
    with sqlite3.connect(path) as db:
        db.executemany(
            "INSERT INTO items (chat, body) VALUES (?, ?)",
            ((str(n % 50), ROW) for n in range(rows)),
        )
        db.commit()
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # all in the file, as after a restart


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.storage_check")
    parser.add_argument("--sizes", default="1,10,50", help="database sizes in MB")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(f"{'database':>10}  {'verify median':>14}  {'min':>8}  {'max':>8}")
    with tempfile.TemporaryDirectory() as directory:
        for megabytes in (int(size) for size in args.sizes.split(",")):
            path = Path(directory) / f"items-{megabytes}.sqlite3"
            filled(path, megabytes)
            store = Items(path)
            times = []
            for _ in range(args.runs):
                start = time.perf_counter()
                store.verify()
                times.append((time.perf_counter() - start) * 1000)
            size = path.stat().st_size / 1e6
            print(
                f"{size:>8.1f}MB  {statistics.median(times):>11.1f} ms  "
                f"{min(times):>5.1f} ms  {max(times):>5.1f} ms"
            )


if __name__ == "__main__":
    main()
