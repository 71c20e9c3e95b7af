"""The one way a clawmesh server is created: a FastMCP with health and safe errors."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

from fastmcp import FastMCP
from fastmcp.server.server import LifespanCallable, default_lifespan

from meshkit.bounds import require_bounds
from meshkit.health import Check, health_endpoint
from meshkit.sqlite import SQLiteStore


def create_server(
    name: str,
    *,
    version: str,
    instructions: str,
    lifespan: LifespanCallable[Any] | None = None,
    checks: Mapping[str, Check] | None = None,
    stores: Sequence[SQLiteStore] = (),
) -> FastMCP[Any]:
    """A FastMCP server with ``GET /health`` and masked internal errors.

    A ``ModelError`` a tool raises reaches the client verbatim as a tool error (its
    message is written for the model; see ``meshkit.errors``); any other exception
    becomes a generic tool error, so stack details and secrets never leave the process.

    Before its ``lifespan``, a starting server checks that every argument of every tool has
    a size bound (``meshkit.bounds``): one without does not start.

    Each of ``stores`` is opened and checked now (``SQLiteStore.verify``: a directory the
    server cannot write or a damaged file stops the start with one line), kept open while
    the server runs (``SQLiteStore.lifespan``, around ``lifespan``) and reported by the
    ``storage`` health check.
    """
    for store in stores:
        store.verify()
    if stores:
        checks = {**(checks or {}), "storage": _storage_check(stores)}
    server: FastMCP[Any] = FastMCP(
        name,
        version=version,
        instructions=instructions,
        lifespan=_bounds_first(lifespan or default_lifespan, stores),
        mask_error_details=True,
        # Schemas are listed as pydantic writes them, local $refs kept: no tool the model
        # sees has one in its arguments (the orchestrator's bridge reads $defs anyway), and
        # inlining them on every tools/list is fastmcp's one use of jsonref, which imports
        # requests wherever that is installed (5 MiB and about 120 modules per process).
        dereference_schemas=False,
    )
    server.custom_route("/health", methods=["GET"])(
        health_endpoint(name, version, dict(checks or {}))
    )
    return server


def _bounds_first(
    lifespan: LifespanCallable[Any], stores: Sequence[SQLiteStore]
) -> LifespanCallable[Any]:
    @asynccontextmanager
    async def checked(server: FastMCP[Any]) -> AsyncIterator[Any]:
        await require_bounds(server)
        async with AsyncExitStack() as opened:
            for store in stores:
                await opened.enter_async_context(store.lifespan())
            async with lifespan(server) as state:
                yield state

    return checked


def _storage_check(stores: Sequence[SQLiteStore]) -> Check:
    async def storage() -> None:
        for store in stores:
            await store.storage.check()

    return storage
