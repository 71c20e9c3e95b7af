"""The SQLite file and the approval key: what is kept, where, and what stops startup."""

import sqlite3
import stat
from collections.abc import AsyncIterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import (
    BestAvailableEncryption,
    Encoding,
    PrivateFormat,
)
from fastmcp import Client

from fakes.approval_keys import SIGNING_ENV, write_public_key
from fakes.clock import START, Clock
from fakes.tool_calls import call
from mcp_pending_actions.rows import ActionRow, BatchRow, Change
from mcp_pending_actions.server import build_server
from mcp_pending_actions.settings import PendingSettings
from mcp_pending_actions.store import SCHEMA, PendingStore
from meshkit.approval_keys import read_public_key
from meshkit.proposals import Approvals
from meshkit.storage import StorageUnavailable
from meshkit.wire.pending_actions import State
from pending_actions.calls import (
    AGENT,
    CHAT,
    CLIENT,
    MILK,
    USER,
    approve,
    cancel,
    notices,
    stage,
    stage_for_client,
    write_fleet,
)
from pending_actions.old_schemas import SCHEMA_2

pytestmark = pytest.mark.anyio


@pytest.fixture
async def store(settings: PendingSettings) -> AsyncIterator[PendingStore]:
    store = PendingStore(settings.db_path)
    yield store
    await store.aclose()


def rows(settings: PendingSettings, query: str) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(settings.db_path)) as db:
        return db.execute(query).fetchall()


def action_row(action_id: str = "act_0123456789ab") -> ActionRow:
    return ActionRow(
        action_id=action_id,
        batch_id="bat_0123456789ab",
        agent=AGENT,
        chat_id=CHAT,
        user_id=None,
        server="shopping",
        kind="add_item",
        summary="Add milk",
        payload={"item": "milk"},
        confirm_label="OK",
        cancel_label="No",
        state=State.PENDING,
        created_at=START,
        expires_at=START + 60,
        updated_at=START,
    )


async def test_every_state_change_is_an_event_and_nothing_is_deleted(
    client: Client[Any], settings: PendingSettings, clock: Clock
) -> None:
    done = (await stage(client, shown_in="reply:1:1"))["action_id"]
    cancelled = (await stage(client, shown_in="reply:1:2"))["action_id"]
    expired = (await stage(client, {**MILK, "ttl_s": 10}))["action_id"]
    await approve(client, done, message_key="reply:1:1")
    await call(client, "complete", action_id=done, result={"added": "milk"})
    await cancel(client, cancelled, message_key="reply:1:2")
    clock.advance(10)
    await call(client, "list_pending", agent=AGENT, chat_id=CHAT)

    states = dict(rows(settings, "SELECT action_id, state FROM actions"))
    events = rows(settings, "SELECT action_id, from_state, to_state FROM events ORDER BY id")

    assert states == {done: "done", cancelled: "cancelled", expired: "expired"}
    assert len(rows(settings, "SELECT * FROM batches")) == 3
    assert events == [
        (done, None, "pending"),
        (cancelled, None, "pending"),
        (expired, None, "pending"),
        (done, "pending", "executing"),
        (done, "executing", "done"),
        (cancelled, "pending", "cancelled"),
        (expired, "pending", "expired"),
    ]
    [(result,)] = rows(settings, f"SELECT result FROM actions WHERE action_id = '{done}'")
    assert result == '{"added":"milk"}'


async def test_a_change_whose_condition_fails_changes_nothing_and_records_no_event(
    store: PendingStore,
) -> None:
    await store.add(
        action_row(),
        new_batch=BatchRow("bat_0123456789ab", AGENT, CHAT, None, START),
        text=None,
    )

    late = await store.change(
        "act_0123456789ab",
        Change(State.PENDING, State.EXECUTING, at=START + 60, live_at=START + 60),
    )
    wrong_state = await store.change(
        "act_0123456789ab", Change(State.EXECUTING, State.DONE, at=START, result={"x": 1})
    )
    missing = await store.change(
        "act_000000000000", Change(State.PENDING, State.CANCELLED, at=START)
    )

    assert late is not None
    assert wrong_state is not None
    assert (late.changed, wrong_state.changed, missing) == (False, False, None)
    assert wrong_state.row == action_row()
    assert [event.to_state for event in await store.events("act_0123456789ab")] == [State.PENDING]


async def test_without_a_signing_key_file_a_key_pair_is_made_in_the_data_dir(
    settings: PendingSettings, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(SIGNING_ENV)
    settings = PendingSettings(data_dir=settings.data_dir)  # as a start reads it

    async with Client(build_server(settings, clock=clock)) as client:
        first = await approve(client, (await stage(client))["action_id"])
    async with Client(build_server(settings, clock=clock)) as client:  # started again
        second = await approve(client, (await stage(client))["action_id"])

    signing = settings.data_dir / "approval_signing_key"
    public = settings.data_dir / "approval_public_key"
    assert stat.S_IMODE(signing.stat().st_mode) == 0o600
    assert signing.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")
    assert stat.S_IMODE(public.stat().st_mode) == 0o600
    assert public.read_bytes().startswith(b"-----BEGIN PUBLIC KEY-----")
    approvals = Approvals(read_public_key(public), clock=clock)
    for decision in (first, second):
        approvals.check(decision["approval"], "shopping", "add_item", MILK["payload"], agent=AGENT)


def _encrypted_key() -> bytes:
    encryption = BestAvailableEncryption(b"a passphrase")
    return Ed25519PrivateKey.generate().private_bytes(Encoding.PEM, PrivateFormat.PKCS8, encryption)


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(None, id="missing"),
        pytest.param(b"", id="empty"),
        pytest.param(b"pending-actions-test-approval-key-4f1c9e2a7b", id="an-hmac-key"),
        pytest.param(_encrypted_key(), id="encrypted"),
        pytest.param("public", id="the-public-key"),
    ],
)
async def test_a_signing_key_file_without_a_usable_key_stops_startup_naming_the_variable(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    content: bytes | str | None,
) -> None:
    path = tmp_path / "signing.pem"
    if content == "public":
        path = write_public_key(tmp_path)
    elif isinstance(content, bytes):
        path.write_bytes(content)
    monkeypatch.setenv(SIGNING_ENV, str(path))

    with pytest.raises(SystemExit) as stopped:
        build_server(PendingSettings(data_dir=tmp_path / "data"))  # as a start reads it

    [line] = capsys.readouterr().err.splitlines()
    assert stopped.value.code == 2
    assert line.startswith("configuration error: ")
    assert f"MESH_APPROVAL_SIGNING_KEY_FILE ({path})" in line
    assert not (tmp_path / "data" / "approval_signing_key").exists(), "no key made instead"


async def test_a_damaged_signing_key_file_in_the_data_dir_stops_startup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(SIGNING_ENV)
    (tmp_path / "approval_signing_key").write_text("short\n")

    with pytest.raises(SystemExit) as stopped:
        build_server(PendingSettings(data_dir=tmp_path))

    [line] = capsys.readouterr().err.splitlines()
    assert stopped.value.code == 2
    assert f"{tmp_path / 'approval_signing_key'} is not an unencrypted Ed25519" in line
    assert line.endswith("(or delete it and start again)")


async def test_a_data_dir_that_cannot_hold_the_key_pair_stops_startup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(SIGNING_ENV)
    (tmp_path / "approval_public_key").mkdir()  # where the public key goes

    with pytest.raises(SystemExit) as stopped:
        build_server(PendingSettings(data_dir=tmp_path))

    [line] = capsys.readouterr().err.splitlines()
    assert stopped.value.code == 2
    assert line.startswith(f"configuration error: cannot write the approval key pair in {tmp_path}")
    assert line.endswith("make DATA_DIR writable, or set MESH_APPROVAL_SIGNING_KEY_FILE")


async def test_an_unwritable_data_dir_is_named_by_the_database_before_the_key_pair(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(SIGNING_ENV)
    (tmp_path / "file").write_text("not a directory")

    with pytest.raises(StorageUnavailable, match="cannot use the database"):
        build_server(PendingSettings(data_dir=tmp_path / "file" / "data"))


async def test_embedded_mode_builds_the_server_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DATA_DIR", str(tmp_path))
    monkeypatch.setenv("PENDING_MAX_TTL_S", "600")

    async with Client(build_server()) as client:
        staged = await stage(client, {**MILK, "ttl_s": 3600})
        listed = await call(client, "list_pending", agent=AGENT, chat_id=CHAT)

    assert [a["expires_at"] for a in listed["actions"]] == [staged["expires_at"]]
    assert listed["actions"][0]["expires_at"] - listed["actions"][0]["created_at"] == 600
    assert (tmp_path / "pending_actions.sqlite3").is_file()


async def test_a_database_from_before_message_keys_opens_and_its_buttons_take_no_tap(
    settings: PendingSettings, clock: Clock
) -> None:
    # Schema 1: batches without message_key, the message recorded in ``shown`` after the
    # send. A batch shown then, with a pending action.
    before_keys = (
        SCHEMA_2.replace(",\n    message_key TEXT\n", "\n").split(
            "CREATE INDEX IF NOT EXISTS batches_by_key"
        )[0]
        + SCHEMA_2.split("WHERE message_key IS NOT NULL;")[1]
        + "CREATE TABLE shown (batch_id TEXT PRIMARY KEY, message_id TEXT NOT NULL,"
        " at REAL NOT NULL);"
    )
    settings.db_path.parent.mkdir(parents=True)
    with closing(sqlite3.connect(settings.db_path)) as db:
        db.executescript(f"{before_keys} PRAGMA user_version = 1;")
        db.execute(
            "INSERT INTO batches VALUES ('bat_0123456789ab', ?, ?, 'Milk?', ?)",
            (AGENT, CHAT, clock.now),
        )
        db.execute("INSERT INTO shown VALUES ('bat_0123456789ab', '1', ?)", (clock.now,))
        db.execute(
            "INSERT INTO actions VALUES ('act_0123456789ab', 'bat_0123456789ab', ?, ?, NULL,"
            " 'shopping', 'add_item', 'Add milk', '{}', 'OK', 'No', 'pending', ?, ?, ?,"
            " NULL, NULL)",
            (AGENT, CHAT, clock.now, clock.now + 60, clock.now),
        )
        db.commit()

    async with Client(build_server(settings, clock=clock)) as client:
        listed = await call(client, "list_pending", agent=AGENT, chat_id=CHAT)
        approved = await approve(client, "act_0123456789ab", message_key="1")
        batch = await call(client, "get_batch", batch_id="bat_0123456789ab")
        staged = await stage(client)  # a new batch, under a key
        taken = await approve(client, staged["action_id"])

    assert [a["action_id"] for a in listed["actions"]] == ["act_0123456789ab"]
    assert (approved["ok"], approved["reason"]) == (False, "not found")
    assert (batch["message_key"], batch["actions"][0]["state"]) == (None, "pending")
    assert taken["ok"] is True


def write_schema_3(settings: PendingSettings, clock: Clock, *, held: bool) -> str:
    """A database of schema 3 (notices without their delivery columns, the ledger without
    payload hashes) holding a client's
    batch with one pending action, its notice queued (``held``: handed to an orchestrator
    run, not acked yet); the notice's key."""
    index = (
        "CREATE INDEX IF NOT EXISTS notices_by_chat ON notices (agent, chat_id, type, handed_at);"
    )
    schema_3 = (
        SCHEMA.replace(
            ",\n    handed_at REAL,\n    not_before REAL,\n    tries INTEGER NOT NULL DEFAULT 0,"
            "\n    last_error TEXT,\n    shown_at REAL\n",
            "\n",
        )
        .replace(index, "")
        .replace("    payload_sha256 TEXT,\n", "")  # the ledger's column of schema 6
    )
    assert schema_3 != SCHEMA
    write_fleet(settings.agents, {})
    settings.db_path.parent.mkdir(parents=True)
    key = "consent:bat_0123456789ab"
    holder = ("orchestrator", "old-run", clock.now + 30) if held else (None, None, None)
    with closing(sqlite3.connect(settings.db_path)) as db:
        db.executescript(f"{schema_3} PRAGMA user_version = 3;")
        db.execute(
            "INSERT INTO batches VALUES ('bat_0123456789ab', ?, ?, 'From Claude Desktop:', ?, ?)",
            (AGENT, USER, clock.now, key),
        )
        db.execute(
            "INSERT INTO actions VALUES ('act_0123456789ab', 'bat_0123456789ab', ?, ?, ?,"
            " 'shopping', 'add_item', 'Add milk', '{}', 'OK', 'No', 'pending', ?, ?, ?,"
            " NULL, NULL, ?, NULL, NULL, NULL)",
            (AGENT, USER, USER, clock.now, clock.now + 600, clock.now, CLIENT),
        )
        db.execute(
            "INSERT INTO notices VALUES (?, 'show', ?, ?, ?, ?, 'bat_0123456789ab',"
            " 'act_0123456789ab', ?, ?, ?, ?, NULL)",
            (key, AGENT, USER, USER, CLIENT, clock.now, *holder),
        )
        db.commit()
    return key


async def test_a_notice_queued_before_delivery_was_tracked_is_shown_and_takes_the_next_one(
    settings: PendingSettings, clock: Clock
) -> None:
    key = write_schema_3(settings, clock, held=False)

    async with Client(build_server(settings, clock=clock)) as client:
        joined = await stage_for_client(client)
        [shown] = await notices(client)

    assert shown["key"] == key
    assert [a["action_id"] for a in shown["batch"]["actions"]] == [
        "act_0123456789ab",
        joined["action_id"],
    ]


async def test_a_notice_handed_out_before_the_upgrade_takes_no_later_proposal(
    settings: PendingSettings, clock: Clock
) -> None:
    key = write_schema_3(settings, clock, held=True)

    async with Client(build_server(settings, clock=clock)) as client:
        later = await stage_for_client(client)
        clock.advance(5)  # the chat's pace
        found = await notices(client, run="new-run")

    by_key = {n["key"]: [a["action_id"] for a in n["batch"]["actions"]] for n in found}
    assert by_key[key] == ["act_0123456789ab"]  # as its message may already show it
    assert [later["action_id"]] in by_key.values()
