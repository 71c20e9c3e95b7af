"""The shopping tool list and the read tools, through an in-memory MCP client and real SQLite."""

from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from fakes.clock import Clock
from fakes.tool_calls import call
from mcp_shopping.server import build_server
from mcp_shopping.settings import ShoppingSettings
from shopping.calls import WATER, add

pytestmark = pytest.mark.anyio

READ = {"get_list", "find_item", "get_recent_orders", "get_action"}
PRODUCER = {"propose_add_to_list", "propose_remove_from_list", "propose_reorder"}
CONFIRM = {"confirm_add_to_list", "confirm_remove_from_list", "confirm_reorder"}


async def names(client: Client[Any], query: str, **arguments: Any) -> list[str]:
    found = await call(client, "find_item", query=query, **arguments)
    return [match["name"] for match in found["matches"]]


# The tool list


async def test_each_tool_has_its_class_and_only_confirm_tools_change_state(
    client: Client[Any],
) -> None:
    tools = {tool.name: tool for tool in await client.list_tools()}

    assert set(tools) == READ | PRODUCER | CONFIRM
    for name, tool in tools.items():
        assert tool.meta is not None
        assert tool.annotations is not None
        assert tool.description
        expected = "read" if name in READ else "producer" if name in PRODUCER else "confirm"
        assert tool.meta["fastmcp"]["tags"] == [expected]
        assert tool.annotations.read_only_hint is (name not in CONFIRM)
        assert tool.annotations.idempotent_hint is True
    assert tools["confirm_remove_from_list"].annotations is not None
    assert tools["confirm_remove_from_list"].annotations.destructive_hint is True


async def test_read_and_producer_tools_take_the_agent_from_the_assistant(
    client: Client[Any],
) -> None:
    tools = {tool.name: tool for tool in await client.list_tools()}

    for name in (READ - {"get_action"}) | PRODUCER:
        tool = tools[name]
        assert tool.meta is not None
        assert tool.meta["clawmesh"] == {"context": ["agent"]}
        agent = tool.input_schema["properties"]["agent"]
        assert (agent["default"], agent["description"]) == ("default", "filled in by the assistant")
        assert list(tool.input_schema["properties"])[-1] == "agent"
    for name in CONFIRM:
        assert set(tools[name].input_schema["properties"]) == {"payload", "approval"}
        assert "clawmesh" not in (tools[name].meta or {})
    # A client's own follow-up of what it proposed: not offered to the orchestrator's model.
    follow = tools["get_action"].meta or {}
    assert follow["clawmesh"] == {"context": ["agent", "user"], "clients_only": True}


# Lists


async def test_a_new_list_is_empty(client: Client[Any]) -> None:
    assert await call(client, "get_list") == {
        "lists": [{"name": "groceries", "items": []}],
        "available": [],
    }


async def test_a_list_shows_its_items_with_ids_and_every_list_is_named(
    client: Client[Any], clock: Clock
) -> None:
    await add(client, clock, "apples", quantity=2, unit="kg")
    await add(client, clock, "milk", store="Safeway", note="lactose free")
    await add(client, clock, "tape", list_name="Hardware")

    groceries = await call(client, "get_list")
    everything = await call(client, "get_list", list_name=None)

    [shown] = groceries["lists"]
    assert [(item["name"], item["quantity"], item["unit"]) for item in shown["items"]] == [
        ("apples", 2, "kg"),
        ("milk", 1, None),
    ]
    assert shown["items"][1] == {
        "id": shown["items"][1]["id"],
        "name": "milk",
        "quantity": 1,
        "unit": None,
        "store": "Safeway",
        "note": "lactose free",
        "added_at": clock.now,
    }
    assert len({item["id"] for item in shown["items"]}) == 2
    assert groceries["available"] == ["groceries", "hardware"]
    assert [(found["name"], len(found["items"])) for found in everything["lists"]] == [
        ("groceries", 2),
        ("hardware", 1),
    ]


async def test_lists_are_kept_apart_by_agent(client: Client[Any], clock: Clock) -> None:
    await add(client, clock, "apples", agent="clawdia")

    theirs = await call(client, "get_list", agent="clawdia")
    mine = await call(client, "get_list")

    assert [item["name"] for item in theirs["lists"][0]["items"]] == ["apples"]
    assert mine["lists"][0]["items"] == []
    assert await call(client, "find_item", query="apples") == {
        "query": "apples",
        "matches": [],
        "message": "No match for 'apples': this user has no order history or list items yet.",
    }


async def test_the_default_list_comes_from_the_settings(
    settings: ShoppingSettings, clock: Clock
) -> None:
    settings = settings.model_copy(update={"default_list": "Weekly Shop"})

    async with Client(build_server(settings, clock=clock)) as client:
        await add(client, clock, "bread")
        shown = await call(client, "get_list")

    assert shown["lists"][0]["name"] == "weekly shop"
    assert shown["lists"][0]["items"][0]["name"] == "bread"


# Finding items


@pytest.mark.usefixtures("history")
@pytest.mark.parametrize(
    "query",
    [
        "the Kirkland water",  # stop word, two of the name's words
        "my kirkland water please",
        "KIRKLAND WATER",
        "kirk wat",  # prefixes
        "kirkand watr",  # typos
        "Kirkland Signature Purified Water 40pk",
    ],
)
async def test_loose_words_find_the_item_with_its_last_order(
    client: Client[Any], query: str
) -> None:
    found = await call(client, "find_item", query=query)

    best = found["matches"][0]
    assert best == {
        "name": WATER,
        "score": best["score"],
        "times_ordered": 3,
        "last_store": "Costco",
        "last_date": "2026-10-02",
        "last_quantity": 1,
        "last_price": 4.99,
        "on_lists": [],
    }
    assert 0.6 <= best["score"] <= 1
    assert all(other["score"] < best["score"] for other in found["matches"][1:])
    assert found["message"] is None


@pytest.mark.usefixtures("history")
async def test_an_exact_name_scores_one(client: Client[Any]) -> None:
    found = await call(client, "find_item", query=WATER.upper())

    assert (found["matches"][0]["name"], found["matches"][0]["score"]) == (WATER, 1)


@pytest.mark.usefixtures("history")
async def test_a_word_shared_by_two_items_finds_both(client: Client[Any]) -> None:
    assert set(await names(client, "milk")) == {"Whole Milk 1 gal", "Oat Milk Barista Edition"}
    assert set(await names(client, "water")) == {WATER, "Sparkling Water Lemon 12pk"}


@pytest.mark.usefixtures("history")
async def test_the_limit_caps_the_matches(client: Client[Any]) -> None:
    assert len(await names(client, "kirkland")) == 2
    assert len(await names(client, "kirkland", limit=1)) == 1


@pytest.mark.usefixtures("history")
async def test_no_match_says_so_plainly(client: Client[Any]) -> None:
    found = await call(client, "find_item", query="the dragon fruit")

    assert found == {
        "query": "the dragon fruit",
        "matches": [],
        "message": "Nothing in the order history or on the lists matches 'the dragon fruit'.",
    }


@pytest.mark.usefixtures("history")
async def test_items_on_a_list_are_found_too(client: Client[Any], clock: Clock) -> None:
    await add(client, clock, "Granny Smith apples", quantity=6)
    await add(client, clock, "avocados 5ct bag", list_name="party")

    apples = await call(client, "find_item", query="aples")
    avocados = await call(client, "find_item", query="avocado")

    assert apples["matches"][0]["name"] == "Granny Smith apples"
    assert apples["matches"][0]["times_ordered"] == 0
    assert apples["matches"][0]["last_store"] is None
    assert apples["matches"][0]["on_lists"] == ["groceries"]
    # Ordered and listed: one item, with its history and its list.
    [avocado] = avocados["matches"]
    assert (avocado["name"], avocado["times_ordered"], avocado["last_price"]) == (
        "Avocados 5ct bag",
        1,
        None,
    )
    assert avocado["on_lists"] == ["party"]


# Orders


@pytest.mark.usefixtures("history")
async def test_recent_orders_come_newest_first_and_by_store(client: Client[Any]) -> None:
    recent = await call(client, "get_recent_orders", limit=3)
    safeway = await call(client, "get_recent_orders", store="safeway")

    assert [(order["date"], order["item"]) for order in recent["orders"]] == [
        ("2026-10-02", "Avocados 5ct bag"),
        ("2026-10-02", WATER),
        ("2026-09-11", "Whole Milk 1 gal"),
    ]
    assert recent["orders"][1] == {
        "id": recent["orders"][1]["id"],
        "item": WATER,
        "store": "Costco",
        "date": "2026-10-02",
        "quantity": 1,
        "price": 4.99,
        "source": "import",
        "example": False,
    }
    assert {order["store"] for order in safeway["orders"]} == {"Safeway"}
    assert len(safeway["orders"]) == 2


async def test_no_orders_says_so(client: Client[Any]) -> None:
    assert await call(client, "get_recent_orders") == {
        "orders": [],
        "message": "No orders in the history.",
    }
    assert (await call(client, "get_recent_orders", store="Aldi"))["message"] == (
        "No orders at Aldi in the history."
    )


async def test_embedded_mode_builds_the_server_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DATA_DIR", str(tmp_path))
    monkeypatch.setenv("SHOPPING_DEFAULT_LIST", "pantry")

    async with Client(build_server()) as client:
        shown = await call(client, "get_list")

    assert shown["lists"][0]["name"] == "pantry"
    assert (tmp_path / "shopping.sqlite3").is_file()


async def test_accents_and_words_run_together_still_match(
    client: Client[Any], clock: Clock
) -> None:
    await add(client, clock, "Jalapeño peppers")
    await add(client, clock, "Crunchy Peanut Butter")

    assert (await names(client, "jalapeno"))[0] == "Jalapeño peppers"
    assert (await names(client, "crunchy peanutbutter"))[0] == "Crunchy Peanut Butter"
