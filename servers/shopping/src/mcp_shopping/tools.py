"""The shopping tools the model (and any client) calls: reads, and proposals of changes.

``agent`` is a context argument: the orchestrator fills it in for its turn, a client bound
to a person gets it from its binding (``meshkit.bindings``). A proposal goes through the
consent kernel (``meshkit.consent``): the orchestrator gets it back to stage in its chat, a
bound client gets it staged for its person on Telegram.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastmcp import FastMCP
from pydantic import Field

from mcp_shopping.models import ItemMatches, Lists, RecentOrders
from mcp_shopping.service import MAX_QUANTITY, ShoppingService
from mcp_shopping.settings import MAX_LIST_NAME
from meshkit.consent import Consent
from meshkit.params import ContextAgent
from meshkit.tool_classes import producer, read
from meshkit.wire.proposals import Proposal

MAX_ORDERS = 100

Store = Annotated[str | None, Field(max_length=100)]
ListName = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_LIST_NAME,
        description="A store's cart is 'cart:<store>'",
    ),
]
Quantity = Annotated[float, Field(gt=0, le=MAX_QUANTITY)]


def add_read_tools(mcp: FastMCP[Any], service: ShoppingService, default_list: str) -> None:
    @mcp.tool(**read(title="Shopping list", context=("agent",)))
    async def get_list(
        list_name: Annotated[
            str | None,
            Field(
                max_length=MAX_LIST_NAME,
                description="null: every list; a store's cart is 'cart:<store>'",
            ),
        ] = default_list,
        agent: ContextAgent = "default",
    ) -> Lists:
        """A shopping list's items with their ids, and the names of all lists."""
        return await service.get_list(agent, list_name)

    @mcp.tool(**read(title="Find an item", context=("agent",)))
    async def find_item(
        query: Annotated[
            str,
            Field(
                min_length=1,
                max_length=200,
                description="The item in loose words ('oat milk')",
            ),
        ],
        limit: Annotated[int, Field(ge=1, le=20)] = 5,
        agent: ContextAgent = "default",
    ) -> ItemMatches:
        """Items ordered before or on a list that match loose words (typos too), with where,
        when, how many and at what price last ordered: an item's full name for a reorder."""
        return await service.find_item(agent, query, limit)

    @mcp.tool(**read(title="Recent orders", context=("agent",)))
    async def get_recent_orders(
        limit: Annotated[int, Field(ge=1, le=MAX_ORDERS)] = 20,
        store: Store = None,
        agent: ContextAgent = "default",
    ) -> RecentOrders:
        """The most recent orders, newest first, of one store or all."""
        return await service.recent_orders(agent, limit, store)


def add_producer_tools(
    mcp: FastMCP[Any], service: ShoppingService, consent: Consent, default_list: str
) -> None:
    @mcp.tool(**producer(title="Propose adding to a list", context=("agent",)))
    async def propose_add_to_list(
        name: Annotated[str, Field(min_length=1, max_length=200)],
        *,
        quantity: Quantity = 1,
        unit: Annotated[str | None, Field(max_length=20, description="e.g. 'kg', 'pack'")] = None,
        store: Store = None,
        note: Annotated[str | None, Field(max_length=300)] = None,
        list_name: ListName = default_list,
        agent: ContextAgent = "default",
    ) -> Proposal:
        """Propose adding an item to a shopping list."""
        proposal = await service.propose_add(
            agent,
            name,
            quantity=quantity,
            unit=unit,
            store=store,
            note=note,
            list_name=list_name,
        )
        return await consent.offer(proposal)

    @mcp.tool(**producer(title="Propose removing from a list", context=("agent",)))
    async def propose_remove_from_list(
        name: Annotated[
            str,
            Field(
                min_length=1,
                max_length=200,
                description="As on the list (loose words work), or its id",
            ),
        ],
        list_name: ListName = default_list,
        agent: ContextAgent = "default",
    ) -> Proposal:
        """Propose removing an item from a shopping list."""
        return await consent.offer(await service.propose_remove(agent, name, list_name))

    @mcp.tool(**producer(title="Propose a reorder", context=("agent",)))
    async def propose_reorder(
        item: Annotated[
            str,
            Field(
                min_length=1,
                max_length=200,
                description="An item ordered before, in loose words",
            ),
        ],
        quantity: Annotated[
            float | None,
            Field(gt=0, le=MAX_QUANTITY, description="Default: as last time"),
        ] = None,
        store: Annotated[
            str | None,
            Field(max_length=100, description="Default: where last bought"),
        ] = None,
        agent: ContextAgent = "default",
    ) -> Proposal:
        """Propose ordering an item again: into the store's cart, recorded as an order
        (nothing is bought online)."""
        return await consent.offer(await service.propose_reorder(agent, item, quantity, store))
