"""Errors written for the model.

    ModelError                 the message is for the model: it reaches the client verbatim
     └── (per server)          WeatherError → UnknownLocation, InvalidRequest, ...

A ``service.py`` raises these without importing the MCP library; the tool
adapter in ``server.py`` awaits the service through :func:`for_model`, which
turns them into tool errors. Any other exception is masked by the server, so
internals never reach a client.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


class ModelError(Exception):
    """A failure the model can act on (unknown place, bad date, try again later)."""


async def for_model(call: Awaitable[T]) -> T:
    """Await a service call, turning a ModelError into a tool error the client can read."""
    # Imported here: settings modules import meshkit (ModelError) before lean.install().
    from fastmcp.exceptions import ToolError  # noqa: PLC0415

    try:
        return await call
    except ModelError as error:
        raise ToolError(str(error)) from error
