"""The shopping MCP surface: read and producer tools over ShoppingService (tools), and its
change kinds (changes) with their confirm tools from the consent kernel."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import date
from importlib.metadata import version
from typing import Any

from fastmcp import FastMCP

from mcp_shopping import examples
from mcp_shopping.changes import change_kinds
from mcp_shopping.importer import read_orders
from mcp_shopping.models import SERVER
from mcp_shopping.service import ShoppingService, list_key
from mcp_shopping.settings import ShoppingSettings
from mcp_shopping.store import ShoppingStore
from mcp_shopping.tools import add_producer_tools, add_read_tools
from meshkit.consent import Consent
from meshkit.server import create_server
from meshkit.settings import load_settings

logger = logging.getLogger(__name__)

INSTRUCTIONS = (
    "The user's shopping lists (groceries by default; carts are 'cart:<store>') and order "
    "history. Look items up with find_item: it understands loose names ('the Kirkland "
    "water'). Changes are proposals the user confirms with a tap; nothing is bought."
)


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

    @asynccontextmanager
    async def lifespan(_: FastMCP[Any]) -> AsyncIterator[None]:
        await _load_examples(settings, store, clock())
        yield

    mcp = create_server(
        "shopping",
        version=version("mcp-shopping"),
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        checks={"database": service.check},
        stores=[store],
    )
    consent = Consent.from_settings(mcp, SERVER, settings, clock=clock)
    consent.declare(*change_kinds(store, clock, today or (lambda: date.fromtimestamp(clock()))))
    default_list = list_key(settings.default_list)
    add_read_tools(mcp, service, default_list)
    add_producer_tools(mcp, service, consent, default_list)
    return mcp


async def _load_examples(settings: ShoppingSettings, store: ShoppingStore, now: float) -> None:
    """An example order history for SHOPPING_EXAMPLE_AGENT, on the first start only."""
    if not settings.example_agent:
        return
    orders = read_orders(examples.FILE.read_text(encoding="utf-8").splitlines())
    if await store.load_examples(settings.example_agent, orders, now):
        logger.info(
            "loaded example orders for %s (make forget-example-orders removes them)",
            settings.example_agent,
        )
