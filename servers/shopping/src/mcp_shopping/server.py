"""The shopping MCP surface: read and producer tools over ShoppingService, confirm tools over
Confirmations."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import date
from importlib.metadata import version
from typing import Annotated, Any

from fastmcp import FastMCP
from pydantic import Field

from mcp_shopping import examples
from mcp_shopping.confirmations import Confirmations
from mcp_shopping.importer import read_orders
from mcp_shopping.models import (
    AddedToList,
    ItemMatches,
    Lists,
    RecentOrders,
    RemovedFromList,
    Reordered,
)
from mcp_shopping.service import MAX_QUANTITY, ShoppingService, list_key
from mcp_shopping.settings import MAX_LIST_NAME, ShoppingSettings
from mcp_shopping.store import ShoppingStore
from meshkit.approval_keys import public_key
from meshkit.proposals import Approvals, Proposal
from meshkit.server import create_server
from meshkit.settings import load_settings
from meshkit.tool_classes import confirm, producer, read

logger = logging.getLogger(__name__)

INSTRUCTIONS = (
    "The user's shopping lists (groceries by default; carts are 'cart:<store>') and order "
    "history. Look items up with find_item: it understands loose names ('the Kirkland "
    "water'). Changes are proposals the user confirms with a tap; nothing is bought."
)
MAX_ORDERS = 100

Agent = Annotated[
    str, Field(description="filled in by the assistant", min_length=1, max_length=200)
]
ItemName = Annotated[str, Field(min_length=1, max_length=200)]
Store = Annotated[str | None, Field(max_length=100, description="Store, e.g. 'Costco' (optional)")]
ListName = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_LIST_NAME,
        description="The list's name; a store's cart is 'cart:<store>', e.g. 'cart:costco'",
    ),
]
Quantity = Annotated[float, Field(gt=0, le=MAX_QUANTITY, description="How many, or how much")]
Payload = Annotated[
    dict[str, Any], Field(description="The proposal's payload, exactly as it was proposed")
]
ApprovalToken = Annotated[
    str,
    Field(
        max_length=500,
        description="The approval token pending-actions minted when the user tapped Confirm",
    ),
]


def build_server(
    settings: ShoppingSettings | None = None,
    *,
    clock: Callable[[], float] = time.time,
    today: Callable[[], date] | None = None,
) -> FastMCP[Any]:
    """The shopping server; ``settings`` default to the environment (embedded mode).

    ``today`` gives the date recorded for reorders (default: the local date of ``clock``).
    """
    settings = settings or load_settings(ShoppingSettings)
    store = ShoppingStore(settings.db_path, max_bytes=settings.max_db_bytes, clock=clock)
    service = ShoppingService(settings, store)
    approvals = Approvals(public_key(settings), clock=clock)
    confirmations = Confirmations(store, approvals, clock=clock, today=today)
    default_list = list_key(settings.default_list)

    @asynccontextmanager
    async def lifespan(_: FastMCP[Any]) -> AsyncIterator[None]:
        async with store.lifespan():
            if settings.example_agent:
                orders = read_orders(examples.FILE.read_text(encoding="utf-8").splitlines())
                if await store.load_examples(settings.example_agent, orders, clock()):
                    logger.info(
                        "loaded example orders for %s (make forget-example-orders removes them)",
                        settings.example_agent,
                    )
            yield

    mcp = create_server(
        "shopping",
        version=version("mcp-shopping"),
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        checks={"database": service.check},
        stores=[store],
    )

    # --- read ----------------------------------------------------------------------------

    @mcp.tool(**read(title="Shopping list", context=("agent",)))
    async def get_list(
        list_name: Annotated[
            str | None,
            Field(
                max_length=MAX_LIST_NAME,
                description="The list to show ('cart:<store>' for a store's cart); "
                "null shows every list",
            ),
        ] = default_list,
        agent: Agent = "default",
    ) -> Lists:
        """The items on a shopping list, with their ids, and the names of all lists."""
        return await service.get_list(agent, list_name)

    @mcp.tool(**read(title="Find an item", context=("agent",)))
    async def find_item(
        query: Annotated[
            str,
            Field(
                min_length=1,
                max_length=200,
                description="The item in the user's words: 'the Kirkland water', 'oat milk'",
            ),
        ],
        limit: Annotated[int, Field(ge=1, le=20, description="Most matches to return")] = 5,
        agent: Agent = "default",
    ) -> ItemMatches:
        """Items the user ordered before or has on a list that match loose words (typos and
        partial names too), with where, when, how many and at what price they were last
        ordered. Use it to find an item's full name before proposing a reorder."""
        return await service.find_item(agent, query, limit)

    @mcp.tool(**read(title="Recent orders", context=("agent",)))
    async def get_recent_orders(
        limit: Annotated[int, Field(ge=1, le=MAX_ORDERS, description="Most orders")] = 20,
        store: Store = None,
        agent: Agent = "default",
    ) -> RecentOrders:
        """The user's most recent orders, newest first, of one store or of all."""
        return await service.recent_orders(agent, limit, store)

    # --- producer ------------------------------------------------------------------------

    @mcp.tool(**producer(title="Propose adding to a list", context=("agent",)))
    async def propose_add_to_list(
        name: Annotated[str, Field(min_length=1, max_length=200, description="The item")],
        *,
        quantity: Quantity = 1,
        unit: Annotated[
            str | None, Field(max_length=20, description="Unit, e.g. 'kg', 'pack' (optional)")
        ] = None,
        store: Store = None,
        note: Annotated[str | None, Field(max_length=300, description="Note (optional)")] = None,
        list_name: ListName = default_list,
        agent: Agent = "default",
    ) -> Proposal:
        """Propose adding an item to a shopping list. Nothing changes until the user taps Add."""
        return await service.propose_add(
            agent,
            name,
            quantity=quantity,
            unit=unit,
            store=store,
            note=note,
            list_name=list_name,
        )

    @mcp.tool(**producer(title="Propose removing from a list", context=("agent",)))
    async def propose_remove_from_list(
        name: Annotated[
            str,
            Field(
                min_length=1,
                max_length=200,
                description="The item's name as on the list (loose words work), or its id",
            ),
        ],
        list_name: ListName = default_list,
        agent: Agent = "default",
    ) -> Proposal:
        """Propose removing an item from a shopping list. Nothing changes until the user taps
        Remove. When several items match, the error lists them: ask the user which one."""
        return await service.propose_remove(agent, name, list_name)

    @mcp.tool(**producer(title="Propose a reorder", context=("agent",)))
    async def propose_reorder(
        item: Annotated[
            str,
            Field(
                min_length=1,
                max_length=200,
                description="An item ordered before, in loose words: 'the Kirkland water'",
            ),
        ],
        quantity: Annotated[
            float | None,
            Field(gt=0, le=MAX_QUANTITY, description="How many; default: as last time"),
        ] = None,
        store: Annotated[
            str | None,
            Field(max_length=100, description="Store; default: where it was last bought"),
        ] = None,
        agent: Agent = "default",
    ) -> Proposal:
        """Propose ordering an item again: into the store's cart, recorded as an order.
        Nothing changes until the user taps Add to cart, and nothing is bought online.
        When several items match, the error lists them: ask the user which one."""
        return await service.propose_reorder(agent, item, quantity, store)

    # --- confirm (only the orchestrator, after a tap) --------------------------------------

    @mcp.tool(**confirm(title="Add to a list"))
    async def confirm_add_to_list(payload: Payload, approval: ApprovalToken) -> AddedToList:
        """Perform an approved add_to_list proposal. Needs the user's approval token."""
        return await confirmations.add(payload, approval)

    @mcp.tool(**confirm(title="Remove from a list", destructive=True))
    async def confirm_remove_from_list(
        payload: Payload, approval: ApprovalToken
    ) -> RemovedFromList:
        """Perform an approved remove_from_list proposal. Needs the user's approval token."""
        return await confirmations.remove(payload, approval)

    @mcp.tool(**confirm(title="Reorder"))
    async def confirm_reorder(payload: Payload, approval: ApprovalToken) -> Reordered:
        """Perform an approved reorder proposal: add to the store's cart and record the order.
        Needs the user's approval token."""
        return await confirmations.reorder(payload, approval)

    return mcp
