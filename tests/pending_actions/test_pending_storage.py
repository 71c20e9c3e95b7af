"""The SQLite file and the approval key: what is kept, where, and what stops startup."""

import sqlite3
import stat
from collections.abc import AsyncIterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from fakes.clock import START, Clock
from fakes.tool_calls import call
from mcp_pending_actions.models import State
from mcp_pending_actions.rows import ActionRow, BatchRow, Change
from mcp_pending_actions.server import build_server
from mcp_pending_actions.settings import PendingSettings
from mcp_pending_actions.store import PendingStore
from meshkit.proposals import KEY_ENV, KEY_FILE, Approvals, load_approval_key
from pending_actions.calls import AGENT, CHAT, MILK, approve, cancel, stage

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
    done = (await stage(client))["action_id"]
    cancelled = (await stage(client))["action_id"]
    expired = (await stage(client, {**MILK, "ttl_s": 10}))["action_id"]
    await approve(client, done)
    await call(client, "complete", action_id=done, result={"added": "milk"})
    await cancel(client, cancelled)
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


async def test_without_an_approval_key_in_the_environment_one_is_made_in_the_data_dir(
    settings: PendingSettings, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_ENV)
    settings = PendingSettings(data_dir=settings.data_dir)  # as a start reads it

    async with Client(build_server(settings, clock=clock)) as client:
        decision = await approve(client, (await stage(client))["action_id"])

    key_file = settings.data_dir / KEY_FILE
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    approvals = Approvals(load_approval_key(settings.data_dir), clock=clock)
    approvals.check(decision["approval"], "shopping", "add_item", MILK["payload"], agent=AGENT)


async def test_a_short_approval_key_stops_startup_naming_the_variable(
    settings: PendingSettings, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(KEY_ENV, "short-secret-value")

    with pytest.raises(SystemExit) as stopped:
        build_server(PendingSettings(data_dir=settings.data_dir))  # as a start reads it

    err = capsys.readouterr().err
    assert stopped.value.code == 2
    assert err.startswith("configuration error: MESH_APPROVAL_KEY is too short")
    assert "short-secret-value" not in err


async def test_a_data_dir_that_cannot_hold_the_key_stops_startup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(KEY_ENV)
    (tmp_path / "file").write_text("not a directory")

    with pytest.raises(SystemExit):
        build_server(PendingSettings(data_dir=tmp_path / "file" / "data"))

    err = capsys.readouterr().err
    assert "cannot read or create the approval key" in err
    assert "set MESH_APPROVAL_KEY" in err


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


async def test_a_database_from_before_messages_were_recorded_opens_and_its_buttons_take_no_tap(
    settings: PendingSettings, clock: Clock
) -> None:
    # The schema as it was before the ``shown`` table, with a batch staged then.
    before_shown = PendingStore.SCHEMA.split("CREATE TABLE IF NOT EXISTS shown")[0]
    settings.db_path.parent.mkdir(parents=True)
    with closing(sqlite3.connect(settings.db_path)) as db:
        db.executescript(f"{before_shown} PRAGMA user_version = 1;")
        db.execute(
            "INSERT INTO batches VALUES ('bat_0123456789ab', ?, ?, 'Milk?', ?)",
            (AGENT, CHAT, clock.now),
        )
        db.execute(
            "INSERT INTO actions VALUES ('act_0123456789ab', 'bat_0123456789ab', ?, ?, NULL,"
            " 'shopping', 'add_item', 'Add milk', '{}', 'OK', 'No', 'pending', ?, ?, ?,"
            " NULL, NULL)",
            (AGENT, CHAT, clock.now, clock.now + 60, clock.now),
        )
        db.commit()

    async with Client(build_server(settings, clock=clock)) as client:
        listed = await call(client, "list_pending", agent=AGENT, chat_id=CHAT)
        approved = await approve(client, "act_0123456789ab", message_id="1")
        batch = await call(client, "get_batch", batch_id="bat_0123456789ab")

    assert [a["action_id"] for a in listed["actions"]] == ["act_0123456789ab"]
    assert (approved["ok"], approved["reason"]) == (False, "not found")
    assert (batch["message_id"], batch["actions"][0]["state"]) == (None, "pending")
