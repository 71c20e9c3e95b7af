"""The hash-chained ledger: every proposal, decision and outcome, and a check that names the
first entry edited or removed in the database."""

import itertools
import json
import sqlite3
from contextlib import closing
from datetime import UTC, datetime
from typing import Any

import pytest
from fastmcp import Client

from fakes.clock import Clock
from fakes.tool_calls import call
from mcp_pending_actions import commands
from mcp_pending_actions.audit import parse_since
from mcp_pending_actions.ledger import COLUMNS, GENESIS, chain_hash
from mcp_pending_actions.server import build_server
from mcp_pending_actions.settings import PendingSettings
from meshkit.proposals import payload_hash
from pending_actions.calls import (
    AGENT,
    CHAT,
    CLIENT,
    EGGS,
    MILK,
    USER,
    approve,
    audit,
    some_history,
    stage,
    stage_for_client,
    write_fleet,
)
from pending_actions.old_schemas import SCHEMA_2

pytestmark = pytest.mark.anyio


def run_audit(settings: PendingSettings, monkeypatch: pytest.MonkeyPatch, *args: str) -> int:
    """``clawmesh audit ARGS`` (the container's python -m mcp_pending_actions audit), here."""
    monkeypatch.setenv("DATA_DIR", str(settings.data_dir))
    try:
        commands.main(["audit", *args])
    except SystemExit as exited:
        return int(exited.code or 0)
    return 0


def sql(settings: PendingSettings, statement: str, *values: Any) -> None:
    with closing(sqlite3.connect(settings.db_path)) as db:
        db.execute(statement, values)
        db.commit()


async def test_every_proposal_decision_and_outcome_is_an_entry_chained_to_the_one_before(
    client: Client[Any], clock: Clock
) -> None:
    await some_history(client, clock)

    entries = await audit(client)

    assert [(e["event"], e["how"], e["outcome"], e["user_id"]) for e in entries] == [
        ("proposed", None, None, USER),
        ("decided", "tap", "confirmed", USER),
        ("executed", None, "Added milk", USER),
        ("proposed", None, None, USER),
        ("decided", "tap", "cancelled", USER),
        ("proposed", None, None, USER),
        ("expired", "expiry", None, USER),
    ]
    assert [e["seq"] for e in entries] == list(range(1, 8))
    assert entries[0]["prev_hash"] == GENESIS
    assert all(e["prev_hash"] == before["hash"] for before, e in itertools.pairwise(entries))
    assert {e["client"] for e in entries} == {"chat"}


async def test_audit_gives_the_last_entries_of_this_user_with_this_agent_only(
    client: Client[Any], clock: Clock
) -> None:
    await some_history(client, clock)
    await stage(client, user_id="7002", shown_in="reply:2:1")

    last_two = await audit(client, limit=2)
    other = await audit(client, user_id="7002")

    assert [e["event"] for e in last_two] == ["proposed", "expired"]
    assert [(e["seq"], e["user_id"]) for e in other] == [(8, "7002")]


async def test_the_audit_command_prints_each_entry_and_verifies_a_whole_chain(
    client: Client[Any],
    clock: Clock,
    settings: PendingSettings,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_fleet(settings.agents, {})
    await some_history(client, clock)
    await stage_for_client(client)

    printed = run_audit(settings, monkeypatch)
    lines = capsys.readouterr().out.splitlines()
    as_json = run_audit(settings, monkeypatch, "--json", "--user", USER)
    entries = json.loads(capsys.readouterr().out)["entries"]
    verified = run_audit(settings, monkeypatch, "--verify")
    said = capsys.readouterr().out

    assert printed == as_json == verified == 0
    assert len(lines) == len(entries) == 8
    assert "#2 clawdia/7001 via chat shopping.add_item “Add milk to the shopping list”" in lines[1]
    assert lines[1].endswith("confirmed by tap")
    assert lines[7].endswith(
        f"via {CLIENT} shopping.add_item “Add milk to the shopping list”: proposed"
    )
    assert said.startswith("ledger whole: 8 entries, last hash ")


@pytest.mark.parametrize(
    ("tamper", "named"),
    [
        ("UPDATE ledger SET summary = 'Add beer' WHERE seq = 3", "entry 3 was changed"),
        ("UPDATE ledger SET outcome = 'cancelled' WHERE seq = 7", "entry 7 was changed"),
        ("DELETE FROM ledger WHERE seq = 4", "entry 4 was removed"),
        ("DELETE FROM ledger WHERE seq = 7", "entry 7 was removed"),
    ],
    ids=["edit-middle", "edit-last", "delete-middle", "delete-last"],
)
async def test_editing_or_deleting_one_row_is_detected_and_named(
    client: Client[Any],
    clock: Clock,
    settings: PendingSettings,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tamper: str,
    named: str,
) -> None:
    await some_history(client, clock)
    sql(settings, tamper)

    exit_code = run_audit(settings, monkeypatch, "--verify")

    assert exit_code == 1
    assert capsys.readouterr().err.startswith(f"Error: ledger broken: {named}")


async def test_a_rewritten_hash_is_caught_by_the_next_entry(
    client: Client[Any],
    clock: Clock,
    settings: PendingSettings,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    await some_history(client, clock)
    sql(settings, "UPDATE ledger SET hash = ? WHERE seq = 2", "f" * 64)

    assert run_audit(settings, monkeypatch, "--verify") == 1
    assert "entry 2 was changed" in capsys.readouterr().err


def test_audit_since_takes_a_duration_ago_or_a_utc_date() -> None:
    assert parse_since("2h", 10_000.0) == 10_000.0 - 7200
    assert parse_since("2026-11-01", 0.0) == datetime(2026, 11, 1, tzinfo=UTC).timestamp()
    with pytest.raises(ValueError, match=r"write e\.g\."):
        parse_since("yesterday", 0.0)


async def test_a_database_of_schema_2_opens_with_its_actions_kept_as_the_chats(
    settings: PendingSettings, clock: Clock
) -> None:
    settings.db_path.parent.mkdir(parents=True)
    with closing(sqlite3.connect(settings.db_path)) as db:
        db.executescript(f"{SCHEMA_2} PRAGMA user_version = 2;")
        db.execute(
            "INSERT INTO batches VALUES ('bat_0123456789ab', ?, ?, 'Milk?', ?, 'reply:1:1')",
            (AGENT, CHAT, clock.now),
        )
        db.execute(
            "INSERT INTO actions VALUES ('act_0123456789ab', 'bat_0123456789ab', ?, ?, ?,"
            " 'shopping', 'add_item', 'Add milk', '{}', 'OK', 'No', 'pending', ?, ?, ?,"
            " NULL, NULL)",
            (AGENT, CHAT, USER, clock.now, clock.now + 60, clock.now),
        )
        db.commit()

    async with Client(build_server(settings, clock=clock)) as client:
        batch = await call(client, "get_batch", batch_id="bat_0123456789ab")
        decision = await approve(client, "act_0123456789ab", message_key="reply:1:1")
        entries = await audit(client)

    [action] = batch["actions"]
    assert (action["client"], action["state"]) == ("chat", "pending")
    assert decision["ok"] is True
    assert [(e["seq"], e["event"]) for e in entries] == [(1, "decided")]  # the chain starts now


async def test_the_audit_tool_leaves_out_a_row_a_hand_changed_and_says_so_in_the_log(
    client: Client[Any],
    clock: Clock,
    settings: PendingSettings,
    caplog: pytest.LogCaptureFixture,
) -> None:
    await some_history(client, clock)
    sql(settings, "UPDATE ledger SET event = 'hacked' WHERE seq = 3")

    entries = await audit(client)

    assert [e["seq"] for e in entries] == [1, 2, 4, 5, 6, 7]
    assert "ledger broken: entry 3 was changed (its event 'hacked'" in caplog.text


async def test_each_entry_about_an_action_carries_the_hash_of_exactly_what_it_does(
    client: Client[Any], clock: Clock
) -> None:
    await some_history(client, clock)
    entries = await audit(client)
    hashes = [e["payload_sha256"] for e in entries]
    assert hashes[0] == hashes[1] == hashes[2] == payload_hash(MILK["payload"])
    assert hashes[3] == hashes[4] == payload_hash(EGGS["payload"])
    assert hashes[0] != hashes[3]


async def test_a_ledger_written_before_payload_hashes_still_verifies_after_the_upgrade(
    client: Client[Any],
    clock: Clock,
    settings: PendingSettings,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Entries as schema 5 wrote them: no payload_sha256, their hashes made without it.
    await some_history(client, clock)
    with closing(sqlite3.connect(settings.db_path)) as db:
        rows = db.execute(f"SELECT {COLUMNS} FROM ledger ORDER BY seq").fetchall()
        prev = GENESIS
        for row in rows:
            old = chain_hash(prev, [row[0], *row[1:-3]])
            assert old is not None
            db.execute(
                "UPDATE ledger SET payload_sha256 = NULL, prev_hash = ?, hash = ? WHERE seq = ?",
                (prev, old, row[0]),
            )
            prev = old
        db.execute("UPDATE ledger_head SET last_hash = ?", (prev,))
        db.commit()
    await stage(client, user_id=USER, shown_in="reply:9:1")  # a new entry, with its hash

    assert run_audit(settings, monkeypatch, "--verify") == 0
    assert capsys.readouterr().out.startswith("ledger whole: 8 entries")
    entries = await audit(client)
    assert [e["payload_sha256"] is None for e in entries] == [True] * 7 + [False]
