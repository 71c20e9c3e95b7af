"""Producer tools: a Proposal the user confirms or cancels, and not one change before that."""

from typing import Any

import pytest
from fastmcp import Client

from fakes.clock import Clock
from fakes.tool_calls import call, call_error
from mcp_shopping.settings import ShoppingSettings
from shopping.calls import WATER, add, propose, snapshot

pytestmark = pytest.mark.anyio


@pytest.fixture
async def listed(client: Client[Any], clock: Clock, history: None) -> None:
    """Order history, and a groceries list with two milks, apples and bread."""
    for name in ("Whole milk", "Oat milk", "apples", "bread"):
        await add(client, clock, name)


@pytest.mark.usefixtures("listed")
@pytest.mark.parametrize(
    ("tool", "arguments", "kind"),
    [
        ("propose_add_to_list", {"name": "eggs", "quantity": 12}, "add_to_list"),
        ("propose_remove_from_list", {"name": "bread"}, "remove_from_list"),
        ("propose_reorder", {"item": "the Kirkland water"}, "reorder"),
    ],
)
async def test_a_proposal_changes_nothing(
    client: Client[Any],
    settings: ShoppingSettings,
    tool: str,
    arguments: dict[str, Any],
    kind: str,
) -> None:
    before = snapshot(settings.db_path)

    proposal = await propose(client, tool, **arguments)

    assert proposal["kind"] == kind
    assert proposal["payload"]["agent"] == "default"
    assert proposal["note"].startswith("Nothing has changed yet")
    assert snapshot(settings.db_path) == before


# Add


async def test_an_add_proposal_reads_like_the_change(client: Client[Any]) -> None:
    proposal = await propose(
        client, "propose_add_to_list", name=" apples ", quantity=2, unit="kg", agent="clawdia"
    )

    assert proposal["summary"] == "Add 2 kg apples to groceries"
    assert (proposal["confirm_label"], proposal["cancel_label"]) == ("➕ Add", "Skip")
    assert proposal["payload"] == {
        "agent": "clawdia",
        "list_name": "groceries",
        "name": "apples",
        "quantity": 2,
        "unit": "kg",
        "store": None,
        "note": None,
    }


@pytest.mark.parametrize(
    ("arguments", "summary"),
    [
        ({"name": "milk"}, "Add milk to groceries"),
        ({"name": "lemons", "quantity": 3}, "Add 3 lemons to groceries"),
        ({"name": "rice", "quantity": 0.5, "unit": "kg"}, "Add 0.5 kg rice to groceries"),
        ({"name": "tape", "list_name": "Hardware Store"}, "Add tape to hardware store"),
        ({"name": "water", "store": "Costco"}, "Add water to groceries (at Costco)"),
    ],
)
async def test_add_summaries(client: Client[Any], arguments: dict[str, Any], summary: str) -> None:
    assert (await propose(client, "propose_add_to_list", **arguments))["summary"] == summary


@pytest.mark.parametrize(
    "arguments", [{"name": "  "}, {"name": "milk", "quantity": 0}, {"name": "x", "list_name": " "}]
)
async def test_a_bad_add_is_refused(client: Client[Any], arguments: dict[str, Any]) -> None:
    await call_error(client, "propose_add_to_list", **arguments)


# Remove


@pytest.mark.usefixtures("listed")
@pytest.mark.parametrize("name", ["bread", "BREAD", "bred", "the bread"])
async def test_remove_finds_the_item_on_the_list(client: Client[Any], name: str) -> None:
    shown = await call(client, "get_list")
    [bread] = [item for item in shown["lists"][0]["items"] if item["name"] == "bread"]

    proposal = await propose(client, "propose_remove_from_list", name=name)

    assert proposal["summary"] == "Remove bread from groceries"
    assert (proposal["confirm_label"], proposal["cancel_label"]) == ("🗑 Remove", "Keep")
    assert proposal["payload"] == {
        "agent": "default",
        "list_name": "groceries",
        "item_id": bread["id"],
        "name": "bread",
    }


@pytest.mark.usefixtures("listed")
async def test_remove_by_exact_name_or_id_settles_a_shared_word(client: Client[Any]) -> None:
    shown = await call(client, "get_list")
    oat = next(item for item in shown["lists"][0]["items"] if item["name"] == "Oat milk")

    by_name = await propose(client, "propose_remove_from_list", name="oat milk")
    by_id = await propose(client, "propose_remove_from_list", name=str(oat["id"]))

    assert by_name["payload"]["item_id"] == by_id["payload"]["item_id"] == oat["id"]


@pytest.mark.usefixtures("listed")
async def test_remove_with_several_matches_lists_them_for_the_user(client: Client[Any]) -> None:
    message = await call_error(client, "propose_remove_from_list", name="milk")

    assert message.startswith("Several items on groceries match 'milk': 'Whole milk' (id ")
    assert "'Oat milk' (id " in message
    assert "Ask the user which one they mean" in message


@pytest.mark.usefixtures("listed")
async def test_remove_without_a_match_says_what_the_list_holds(client: Client[Any]) -> None:
    message = await call_error(client, "propose_remove_from_list", name="caviar")

    assert message == (
        "Nothing on groceries matches 'caviar'. It holds: Whole milk, Oat milk, apples, bread."
    )


@pytest.mark.usefixtures("listed")
async def test_remove_from_an_empty_or_other_list_finds_nothing(client: Client[Any]) -> None:
    assert await call_error(
        client, "propose_remove_from_list", name="bread", list_name="party"
    ) == ("party is empty: there is nothing to remove.")
    assert "is empty" in await call_error(
        client, "propose_remove_from_list", name="bread", agent="clawdia"
    )


# Reorder


@pytest.mark.usefixtures("history")
async def test_a_reorder_defaults_to_the_last_order(client: Client[Any]) -> None:
    proposal = await propose(client, "propose_reorder", item="the Kirkland water")

    assert proposal["summary"] == (f"Reorder 1 × {WATER} at Costco (last: $4.99 on 2026-10-02)")
    assert (proposal["confirm_label"], proposal["cancel_label"]) == ("🛒 Add to cart", "Skip")
    assert proposal["payload"] == {
        "agent": "default",
        "item": WATER,
        "store": "Costco",
        "quantity": 1,
    }


@pytest.mark.usefixtures("history")
async def test_a_reorder_takes_another_quantity_and_store(client: Client[Any]) -> None:
    same_store = await propose(
        client, "propose_reorder", item="kirkland water", quantity=2, store="costco"
    )
    other_store = await propose(client, "propose_reorder", item="kirkland water", store="BJ's")
    unpriced = await propose(client, "propose_reorder", item="avocados")
    unpriced_elsewhere = await propose(client, "propose_reorder", item="avocados", store="Aldi")

    assert same_store["summary"] == f"Reorder 2 × {WATER} at Costco (last: $4.99 on 2026-10-02)"
    assert (same_store["payload"]["quantity"], same_store["payload"]["store"]) == (2, "Costco")
    assert other_store["summary"] == (
        f"Reorder 1 × {WATER} at BJ's (last: $4.99 at Costco on 2026-10-02)"
    )
    assert unpriced["summary"] == "Reorder 1 × Avocados 5ct bag at Costco (last: 2026-10-02)"
    assert unpriced_elsewhere["summary"] == (
        "Reorder 1 × Avocados 5ct bag at Aldi (last: at Costco on 2026-10-02)"
    )


@pytest.mark.usefixtures("history")
async def test_a_reorder_of_an_unclear_item_lists_the_candidates(client: Client[Any]) -> None:
    message = await call_error(client, "propose_reorder", item="milk")

    assert message == (
        "Several ordered items match 'milk': 'Whole Milk 1 gal' (last at Safeway on "
        "2026-09-11), 'Oat Milk Barista Edition' (last at Trader Joe's on 2026-08-21). "
        "Ask the user which one they mean, then call again with its full name."
    )


@pytest.mark.usefixtures("history")
async def test_a_reorder_of_an_unknown_item_is_refused(client: Client[Any]) -> None:
    message = await call_error(client, "propose_reorder", item="dragon fruit")

    assert message.startswith("No ordered item matches 'dragon fruit'.")


async def test_a_reorder_without_history_is_refused(client: Client[Any]) -> None:
    message = await call_error(client, "propose_reorder", item="water")

    assert message.startswith("There is no order history yet")
