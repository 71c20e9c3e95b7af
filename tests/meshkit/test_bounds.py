"""A server whose tools take an argument without a size bound does not start."""

from __future__ import annotations

from typing import Annotated

import pytest
from fastmcp import Client
from pydantic import BaseModel, Field

from meshkit.bounds import UnboundedArgument
from meshkit.server import create_server
from meshkit.tool_classes import read

pytestmark = pytest.mark.anyio

Short = Annotated[str, Field(max_length=10)]


class Row(BaseModel):
    label: Short
    note: str  # unbounded, inside a list of models


async def test_a_server_with_an_unbounded_argument_does_not_start_and_says_which() -> None:
    server = create_server("loose", version="0", instructions="Loose.")

    @server.tool(**read())
    async def look(
        zone: str,
        count: int,
        keys: list[Short],
        rows: Annotated[list[Row], Field(max_length=5)],
        fine: Short = "",
        kind: Annotated[str, Field(pattern="^[a-z]+$")] = "a",
    ) -> str:
        """Look."""
        return ""

    # The in-memory client reports the failed start as a failed connect, with its message.
    with pytest.raises(RuntimeError) as raised:
        async with Client(server):
            pass
    assert isinstance(raised.value.__cause__ or raised.value.__context__, UnboundedArgument)
    assert str(raised.value).endswith(
        "server 'loose' has tool arguments without a size bound (give strings max_length, "
        "numbers le, lists max_length): look: zone; look: count; look: keys; "
        "look: rows[].note; look: kind"
    )


async def test_a_server_whose_arguments_are_all_bounded_starts() -> None:
    server = create_server("tight", version="0", instructions="Tight.")

    @server.tool(**read())
    async def look(
        zone: Short,
        count: Annotated[int, Field(ge=0, le=100)],
        keys: Annotated[list[Short], Field(max_length=5)],
        choice: Annotated[str, Field(json_schema_extra={"enum": ["a", "b"]})] = "a",
        payload: dict[str, object] | None = None,
    ) -> str:
        """Look."""
        return zone

    async with Client(server) as client:
        assert (await client.call_tool("look", {"zone": "x", "count": 1, "keys": []})).data == "x"
        refused = await client.call_tool(
            "look", {"zone": "x" * 11, "count": 1, "keys": []}, raise_on_error=False
        )
    assert refused.is_error
