"""``clawmesh audit`` on a ledger a hand edited in the SQLite file: every
edit of any column of any row is named ("entry 3 was changed"), exit 1, never a traceback,
whatever value was put there; a copy of the head kept elsewhere (``--expect``) catches what
the chain alone cannot: its last entries removed together with the head.

The ledger is written by the real server (in process) into a real file, edited with sqlite3,
and read by the real command as a process, as an operator runs it."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastmcp import Client
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from fakes.clock import Clock
from mcp_pending_actions.chain import verify
from mcp_pending_actions.ledger import chain_hash
from mcp_pending_actions.server import build_server
from mcp_pending_actions.settings import PendingSettings
from pending_actions.calls import some_history

pytestmark = pytest.mark.anyio

ENTRIES = 7  # some_history's
COLUMNS = ("seq", "at", "event", "agent", "user_id", "client", "action_id", "server", "kind",
           "summary", "how", "outcome", "prev_hash", "hash")  # fmt: skip
# A NULL where the model wants text needs the table rebuilt without its NOT NULL (a hand
# with the sqlite3 shell can): the copy keeps every row and value.
REBUILT = (
    "CREATE TABLE copied AS SELECT * FROM ledger; DROP TABLE ledger; "
    "ALTER TABLE copied RENAME TO ledger;"
)


@pytest.fixture
async def ledger_file(settings: PendingSettings, clock: Clock) -> Path:
    """Seven entries, written by the server into its database file."""
    async with Client(build_server(settings, clock=clock)) as client:
        await some_history(client, clock)
    return settings.db_path


def audit(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The command, as an operator runs it beside the server (its DATA_DIR, no .env)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PENDING_", "DATA_"))}
    return subprocess.run(
        [Path(sys.executable).with_name("clawmesh"), "audit", *args],
        env={**env, "DATA_DIR": str(data_dir)},
        cwd=data_dir,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def edit(path: Path, script: str) -> None:
    with closing(sqlite3.connect(path)) as db:
        db.executescript(script)


def head(path: Path) -> str:
    """The head as ``audit --verify`` prints it for an operator to keep: 7:<hash>."""
    with closing(sqlite3.connect(path)) as db:
        count, last = db.execute("SELECT count, last_hash FROM ledger_head").fetchone()
    return f"{count}:{last}"


@pytest.mark.parametrize(
    ("script", "named"),
    [
        ("UPDATE ledger SET event = 'hacked' WHERE seq = 3", "entry 3 was changed"),
        ("UPDATE ledger SET at = 'yesterday' WHERE seq = 3", "entry 3 was changed"),
        ("UPDATE ledger SET summary = x'00ff' WHERE seq = 3", "entry 3 was changed"),
        ("UPDATE ledger SET how = 42 WHERE seq = 2", "entry 2 was changed"),
        (f"{REBUILT} UPDATE ledger SET agent = NULL WHERE seq = 3", "entry 3 was changed"),
        (f"{REBUILT} UPDATE ledger SET seq = 'three' WHERE seq = 3", "entry 3 was changed"),
        ("UPDATE ledger SET seq = 100 WHERE seq = 7", "entry 7 was changed"),
        ("UPDATE ledger_head SET count = 'many'", "the ledger's head was changed"),
    ],
    ids=["event", "at", "bytes", "how", "null", "seq-text", "seq-moved", "head"],
)
async def test_verify_names_the_entry_whatever_value_a_hand_left_in_it(
    ledger_file: Path, settings: PendingSettings, script: str, named: str
) -> None:
    edit(ledger_file, script)

    checked = audit(settings.data_dir, "--verify")

    assert checked.returncode == 1
    assert checked.stderr.startswith(f"Error: ledger broken: {named}"), checked.stderr
    assert checked.stderr.count("\n") == 1
    assert checked.stdout == ""


async def test_listing_a_ledger_with_a_changed_row_names_it_in_one_line_and_fails(
    ledger_file: Path, settings: PendingSettings
) -> None:
    edit(ledger_file, "UPDATE ledger SET event = 'hacked', at = 'yesterday' WHERE seq = 3")

    listed = audit(settings.data_dir)
    as_json = audit(settings.data_dir, "--json")

    lines = listed.stdout.splitlines()
    assert (listed.returncode, as_json.returncode) == (1, 1)
    assert len(lines) == ENTRIES
    assert lines[2].startswith("#3 entry 3 was changed (its ")
    assert "is not a value an entry holds" in lines[2]
    assert "#4 " in lines[3]  # the others as ever
    assert "Traceback" not in listed.stderr + as_json.stderr
    assert as_json.stderr.startswith("ledger broken: entry 3 was changed (")
    assert as_json.stdout.count('"seq"') == ENTRIES - 1


async def test_the_last_entries_removed_with_the_head_are_caught_by_the_head_kept(
    ledger_file: Path, settings: PendingSettings
) -> None:
    whole = audit(settings.data_dir, "--verify")
    kept = head(ledger_file)
    with closing(sqlite3.connect(ledger_file)) as db:
        (fifth,) = db.execute("SELECT hash FROM ledger WHERE seq = 5").fetchone()
    edit(
        ledger_file,
        f"DELETE FROM ledger WHERE seq > 5; UPDATE ledger_head SET count = 5, last_hash = "
        f"'{fifth}'",
    )

    alone = audit(settings.data_dir, "--verify")
    expected = audit(settings.data_dir, "--verify", "--expect", kept)

    assert whole.returncode == 0
    assert whole.stdout.strip().endswith(f"head {kept}")  # what the operator keeps
    assert alone.returncode == 0  # the chain alone cannot see it
    assert expected.returncode == 1
    assert expected.stderr.startswith(
        "Error: ledger broken: entry 6 was removed (the head you kept counts 7 entries, 5 remain)"
    )


async def test_a_chain_rewritten_after_an_edit_is_caught_by_the_head_kept(
    ledger_file: Path, settings: PendingSettings
) -> None:
    kept = head(ledger_file)
    edit(ledger_file, "UPDATE ledger SET summary = 'Add caviar' WHERE seq = 4")
    rehash(ledger_file)

    alone = audit(settings.data_dir, "--verify")
    expected = audit(settings.data_dir, "--verify", "--expect", kept)

    assert alone.returncode == 0
    assert expected.returncode == 1
    assert expected.stderr.startswith("Error: ledger broken: entry 7 was changed, or one before it")


async def test_a_head_kept_is_still_held_after_more_entries_and_a_wrong_one_is_one_line(
    ledger_file: Path, settings: PendingSettings, clock: Clock
) -> None:
    kept = head(ledger_file)
    async with Client(build_server(settings, clock=clock)) as client:
        await some_history(client, clock)

    later = audit(settings.data_dir, "--verify", "--expect", kept)
    malformed = audit(settings.data_dir, "--verify", "--expect", "seven")

    assert later.returncode == 0, later.stderr
    assert later.stdout.startswith(f"ledger whole: {2 * ENTRIES} entries, ")
    assert later.stdout.strip().endswith(f"it holds the head you kept ({kept})")
    assert malformed.returncode == 2
    assert "is not a head: give it as audit --verify printed it" in malformed.stderr
    assert "Traceback" not in malformed.stderr


def rehash(path: Path) -> None:
    """Every hash and the head recomputed, as someone covering an edit would."""
    with closing(sqlite3.connect(path)) as db:
        rows = db.execute("SELECT * FROM ledger ORDER BY seq").fetchall()
        prev = "0" * 64
        for row in rows:
            digest = chain_hash(prev, [row[0], *row[1:-2]])
            db.execute(
                "UPDATE ledger SET prev_hash = ?, hash = ? WHERE seq = ?", (prev, digest, row[0])
            )
            prev = str(digest)
        db.execute("UPDATE ledger_head SET count = ?, last_hash = ?", (len(rows), prev))
        db.commit()


# --- any edit of any column of any row ---------------------------------------------------

VALUES = st.one_of(
    st.none(),
    st.text(max_size=20),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False),
    st.binary(max_size=8),
    st.sampled_from(["decided", "tap", "grant", "clawdia", "0" * 64, "1"]),
)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A ledger file of seven entries, as bytes to copy (the server writes it once)."""
    return _written(tmp_path_factory.mktemp("pristine"))


def _written(folder: Path) -> bytes:
    settings = PendingSettings(data_dir=folder, agents=folder / "agents.yaml")
    clock = Clock()

    async def write() -> None:
        async with Client(build_server(settings, clock=clock)) as client:
            await some_history(client, clock)

    anyio.run(write)
    with closing(sqlite3.connect(settings.db_path)) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return settings.db_path.read_bytes()


def stored(db: sqlite3.Connection) -> list[list[tuple[str, Any]]]:
    """Every row, each value with its SQLite type (1 and '1' and 1.0 differ)."""
    rows = db.execute("SELECT * FROM ledger ORDER BY seq").fetchall()
    return [[(type(value).__name__, value) for value in row] for row in rows]


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seq=st.integers(1, ENTRIES), column=st.sampled_from(COLUMNS), value=VALUES)
def test_any_edit_of_any_column_of_any_row_is_named(
    pristine: bytes, tmp_path: Path, seq: int, column: str, value: object
) -> None:
    path = tmp_path / "ledger.sqlite3"
    path.write_bytes(pristine)
    with closing(sqlite3.connect(path)) as db:
        before = stored(db)
        try:
            db.execute(f"UPDATE ledger SET {column} = ? WHERE seq = ?", (value, seq))
        except sqlite3.IntegrityError:  # NOT NULL, a number another entry has: no edit
            assume(False)
        db.commit()
        assume(stored(db) != before)  # SQLite kept the same value: nothing changed

        broken = verify(db)

    assert broken is not None
    assert broken.startswith(f"entry {seq} was changed"), broken


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(column=st.sampled_from(("count", "last_hash")), value=VALUES)
def test_any_edit_of_the_head_is_caught(
    pristine: bytes, tmp_path: Path, column: str, value: object
) -> None:
    path = tmp_path / "ledger.sqlite3"
    path.write_bytes(pristine)
    with closing(sqlite3.connect(path)) as db:
        before = db.execute("SELECT count, last_hash FROM ledger_head").fetchone()
        try:
            db.execute(f"UPDATE ledger_head SET {column} = ?", (value,))
        except sqlite3.IntegrityError:
            assume(False)
        db.commit()
        after = db.execute("SELECT count, last_hash FROM ledger_head").fetchone()
        assume([(type(v), v) for v in after] != [(type(v), v) for v in before])

        broken = verify(db)

    assert broken is not None
