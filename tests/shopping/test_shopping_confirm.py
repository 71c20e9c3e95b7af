"""Confirm tools: the change happens once, and only with a token for exactly that change."""

from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from fastmcp import Client

from fakes.approval_keys import PUBLIC_ENV, write_signing_key
from fakes.clock import Clock
from fakes.tool_calls import call, call_error
from mcp_pending_actions.server import build_server as build_pending_actions
from mcp_pending_actions.settings import PendingSettings
from mcp_shopping.server import build_server
from mcp_shopping.settings import ShoppingSettings
from shopping.calls import ACTION, TODAY, WATER, add, approve, mint, propose, snapshot

pytestmark = pytest.mark.anyio

APPLES: dict[str, Any] = {"name": "apples", "quantity": 2, "unit": "kg"}


async def groceries(client: Client[Any]) -> list[dict[str, Any]]:
    shown = await call(client, "get_list")
    items: list[dict[str, Any]] = shown["lists"][0]["items"]
    return items


# Performed once


async def test_an_approved_add_is_performed_once(
    client: Client[Any], clock: Clock, settings: ShoppingSettings
) -> None:
    proposal = await propose(client, "propose_add_to_list", **APPLES)

    first = await approve(client, clock, proposal, action=ACTION)
    replay = await approve(client, clock, proposal, action=ACTION)

    [item] = await groceries(client)
    assert first == {
        "message": "Added 2 kg apples to groceries",
        "replayed": False,
        "list_name": "groceries",
        "item": item,
    }
    assert replay == {**first, "replayed": True}
    assert (item["name"], item["quantity"], item["unit"]) == ("apples", 2, "kg")
    assert len(snapshot(settings.db_path)["confirmations"]) == 1


async def test_adding_the_same_item_again_adds_to_its_quantity(
    client: Client[Any], clock: Clock
) -> None:
    await add(client, clock, **APPLES)
    again = await add(client, clock, "Apples", quantity=1.5, unit="KG")
    await add(client, clock, "apples", quantity=3)  # no unit: another line

    assert again["message"] == "Added 1.5 KG Apples to groceries (now 3.5 kg)"
    assert [(item["name"], item["quantity"], item["unit"]) for item in await groceries(client)] == [
        ("apples", 3.5, "kg"),
        ("apples", 3, None),
    ]


async def test_an_approved_remove_is_performed_once(
    client: Client[Any], clock: Clock, settings: ShoppingSettings
) -> None:
    await add(client, clock, "milk")
    await add(client, clock, "bread")
    proposal = await propose(client, "propose_remove_from_list", name="milk")

    first = await approve(client, clock, proposal, action=ACTION)
    replay = await approve(client, clock, proposal, action=ACTION)

    assert first == {
        "message": "Removed milk from groceries",
        "replayed": False,
        "list_name": "groceries",
        "item_id": proposal["payload"]["item_id"],
        "name": "milk",
    }
    assert replay == {**first, "replayed": True}
    assert [item["name"] for item in await groceries(client)] == ["bread"]
    assert len(snapshot(settings.db_path)["confirmations"]) == 3  # two adds, one remove


async def test_removing_an_item_already_removed_fails_and_changes_nothing(
    client: Client[Any], clock: Clock, settings: ShoppingSettings
) -> None:
    await add(client, clock, "milk")
    proposal = await propose(client, "propose_remove_from_list", name="milk")
    twice = await propose(client, "propose_remove_from_list", name="milk")
    await approve(client, clock, proposal)
    before = snapshot(settings.db_path)

    token = mint(clock, "remove_from_list", twice["payload"], action_id="act_00000000beef")
    message = await call_error(
        client, "confirm_remove_from_list", payload=twice["payload"], approval=token
    )

    assert message == "milk is no longer on groceries: nothing was removed."
    assert snapshot(settings.db_path) == before


@pytest.mark.usefixtures("history")
async def test_an_approved_reorder_fills_the_cart_and_records_the_order_once(
    client: Client[Any], clock: Clock, settings: ShoppingSettings
) -> None:
    proposal = await propose(client, "propose_reorder", item="the Kirkland water", quantity=2)
    before = snapshot(settings.db_path)

    first = await approve(client, clock, proposal, action=ACTION)
    replay = await approve(client, clock, proposal, action=ACTION)

    cart = await call(client, "get_list", list_name="cart:costco")
    [item] = cart["lists"][0]["items"]
    [order] = (await call(client, "get_recent_orders", limit=1))["orders"]
    assert first == {
        "message": f"Added 2 × {WATER} to the Costco cart and recorded the order",
        "replayed": False,
        "cart": "cart:costco",
        "item": item,
        "order": order,
    }
    assert replay == {**first, "replayed": True}
    assert (item["name"], item["quantity"], item["store"]) == (WATER, 2, "Costco")
    assert order == {
        "id": order["id"],
        "item": WATER,
        "store": "Costco",
        "date": TODAY.isoformat(),
        "quantity": 2,
        "price": None,
        "source": "reorder",
        "example": False,
    }
    after = snapshot(settings.db_path)
    assert len(after["orders"]) == len(before["orders"]) + 1
    assert len(after["list_items"]) == 1
    found = await call(client, "find_item", query="kirkland water")
    assert found["matches"][0]["times_ordered"] == 4
    assert found["matches"][0]["on_lists"] == ["cart:costco"]


@pytest.mark.usefixtures("history")
async def test_reorders_at_two_stores_go_to_two_carts(client: Client[Any], clock: Clock) -> None:
    for store in (None, "Costco", "trader joe's"):
        proposal = await propose(client, "propose_reorder", item="oat milk", store=store)
        await approve(client, clock, proposal)

    shown = await call(client, "get_list", list_name=None)

    assert shown["available"] == ["cart:costco", "cart:trader joe's"]
    assert [
        [(item["store"], item["quantity"]) for item in cart["items"]] for cart in shown["lists"]
    ] == [[("Costco", 2)], [("Trader Joe's", 4)]]  # 2 as last time; twice at Trader Joe's


# Refused: nothing changes


@pytest.fixture
async def proposal(client: Client[Any], clock: Clock) -> dict[str, Any]:
    await add(client, clock, "bread")
    return await propose(client, "propose_add_to_list", **APPLES)


def refused_token(case: str, clock: Clock, proposal: dict[str, Any]) -> str | None:
    payload = proposal["payload"]
    if case == "missing":
        return None
    if case == "empty":
        return ""
    if case == "garbage":
        return "v3.act_0123456789ab.99999999999.not-a-signature"
    if case == "old format":  # an HMAC token, as every confirm server could make before v3
        return "v2.act_0123456789ab.99999999999.Fj5oUPzPgCEqQYd2zHLmbHhwWQpTDgKqvu1WNqtDkcM"
    if case == "other payload":
        return mint(clock, "add_to_list", {**payload, "quantity": 1})
    if case == "other kind":
        return mint(clock, "remove_from_list", payload)
    if case == "other agent":  # staged by another agent's bot, on this agent's payload
        return mint(clock, "add_to_list", payload, agent="bob")
    if case == "other key":
        return mint(clock, "add_to_list", payload, key=Ed25519PrivateKey.generate())
    assert case == "expired"
    token = mint(clock, "add_to_list", payload)
    clock.advance(301)
    return token


@pytest.mark.parametrize(
    ("case", "why"),
    [
        ("missing", ""),
        ("empty", "none was given"),
        ("garbage", "does not match this change"),
        ("old format", "older format"),
        ("other payload", "does not match this change"),
        ("other kind", "does not match this change"),
        ("other key", "does not match this change"),
        ("other agent", "does not match this change"),
        ("expired", "has expired"),
    ],
)
async def test_a_confirm_without_a_valid_approval_changes_nothing(
    client: Client[Any],
    clock: Clock,
    settings: ShoppingSettings,
    proposal: dict[str, Any],
    case: str,
    why: str,
) -> None:
    before = snapshot(settings.db_path)
    arguments: dict[str, Any] = {"payload": proposal["payload"]}
    token = refused_token(case, clock, proposal)
    if token is not None:
        arguments["approval"] = token

    message = await call_error(client, "confirm_add_to_list", **arguments)

    assert why in message
    assert snapshot(settings.db_path) == before


async def test_a_token_for_an_action_another_agent_staged_is_refused(
    client: Client[Any], clock: Clock, settings: ShoppingSettings, proposal: dict[str, Any]
) -> None:
    # Agent "default"'s proposal, staged by bob's bot (a caller holding the mesh
    # credential could do so) and approved by a tap in bob's chat, where its buttons were.
    before = snapshot(settings.db_path)
    pending_settings = PendingSettings(
        data_dir=settings.data_dir.parent / "pending",
        approval_signing_key_file=write_signing_key(settings.data_dir.parent / "keys"),
    )
    bob = {"agent": "bob", "chat_id": "42"}
    async with Client(build_pending_actions(pending_settings, clock=clock)) as pending:
        staged = await call(
            pending, "stage", server="shopping", proposal=proposal, message_key="k9", **bob
        )
        tap = {"user_id": "42", "message_key": "k9", **bob}
        decision = await call(pending, "approve", action_id=staged["action_id"], **tap)
    assert decision["ok"] is True

    message = await call_error(
        client, "confirm_add_to_list", payload=decision["payload"], approval=decision["approval"]
    )

    assert "does not match this change (another change, another agent" in message
    assert snapshot(settings.db_path) == before


async def test_a_tampered_payload_is_refused(
    client: Client[Any], clock: Clock, settings: ShoppingSettings, proposal: dict[str, Any]
) -> None:
    token = mint(clock, "add_to_list", proposal["payload"])
    before = snapshot(settings.db_path)

    message = await call_error(
        client,
        "confirm_add_to_list",
        payload={**proposal["payload"], "quantity": 200},
        approval=token,
    )

    assert "does not match this change" in message
    assert snapshot(settings.db_path) == before


@pytest.mark.parametrize(
    "payload",
    [{"agent": "default", "name": "apples"}, {"agent": "default", "list_name": "x", "id": 1}],
)
async def test_an_approved_payload_that_is_not_a_change_is_refused(
    client: Client[Any], clock: Clock, settings: ShoppingSettings, payload: dict[str, Any]
) -> None:
    before = snapshot(settings.db_path)

    message = await call_error(
        client,
        "confirm_remove_from_list",
        payload=payload,
        approval=mint(clock, "remove_from_list", payload),
    )

    assert message.startswith("The approved payload is not a remove_from_list payload")
    assert snapshot(settings.db_path) == before


# Startup


async def test_a_public_key_file_that_is_not_there_stops_startup_naming_the_variable(
    settings: ShoppingSettings, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(PUBLIC_ENV, str(settings.data_dir / "no-such-file.pem"))

    with pytest.raises(SystemExit) as stopped:
        build_server(ShoppingSettings(data_dir=settings.data_dir))  # as a start reads it

    err = capsys.readouterr().err
    assert stopped.value.code == 2
    assert err.startswith("configuration error: cannot read MESH_APPROVAL_PUBLIC_KEY_FILE (")
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize(
    ("content", "why"),
    [
        pytest.param(b"", "is not an Ed25519 public key in PEM", id="empty"),
        pytest.param(b"shopping-test-approval-key-9d2f61c0a4b7e8", "is not an Ed25519", id="hmac"),
        pytest.param(None, "holds a private key", id="the-private-key"),
    ],
)
async def test_a_public_key_file_without_a_public_key_stops_startup(
    settings: ShoppingSettings,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    content: bytes | None,
    why: str,
) -> None:
    path = write_signing_key(tmp_path / "wrong")  # a confirm server must not take this one
    if content is not None:
        path.write_bytes(content)
    monkeypatch.setenv(PUBLIC_ENV, str(path))

    with pytest.raises(SystemExit) as stopped:
        build_server(ShoppingSettings(data_dir=settings.data_dir))

    err = capsys.readouterr().err
    assert stopped.value.code == 2
    assert err.startswith(f"configuration error: MESH_APPROVAL_PUBLIC_KEY_FILE ({path}) {why}")
    assert "PRIVATE KEY" not in err


async def test_without_a_public_key_file_approvals_wait_for_the_one_pending_actions_writes(
    tmp_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Embedded mode: one DATA_DIR, and pending-actions built after the confirm server.
    monkeypatch.delenv(PUBLIC_ENV)
    monkeypatch.delenv("MESH_APPROVAL_SIGNING_KEY_FILE", raising=False)
    data_dir = tmp_path / "data"
    shopping = build_server(ShoppingSettings(data_dir=data_dir), clock=clock, today=lambda: TODAY)
    where = {"agent": "default", "chat_id": "42"}
    async with Client(shopping) as client:
        proposal = await propose(client, "propose_add_to_list", **APPLES)
        early = mint(clock, "add_to_list", proposal["payload"])
        refused = await call_error(
            client, "confirm_add_to_list", payload=proposal["payload"], approval=early
        )
        async with Client(build_pending_actions(PendingSettings(data_dir=data_dir))) as pending:
            staged = await call(
                pending, "stage", server="shopping", proposal=proposal, message_key="k9", **where
            )
            tap = {"user_id": "42", "message_key": "k9", **where}
            decision = await call(pending, "approve", action_id=staged["action_id"], **tap)
        done = await call(
            client,
            "confirm_add_to_list",
            payload=decision["payload"],
            approval=decision["approval"],
        )
        items = await groceries(client)

    assert "no key to check approvals with yet" in refused
    assert done["replayed"] is False
    assert [item["name"] for item in items] == ["apples"]
    assert (data_dir / "approval_public_key").is_file()
