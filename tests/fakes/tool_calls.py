"""Calling a server's tools in tests: the structured result of a call that must succeed,
the message of one that must fail."""

from __future__ import annotations

from typing import Any

from fastmcp import Client
from fastmcp.client.client import CallToolResult
from mcp_types import TextContent


async def call(client: Client[Any], tool: str, **arguments: Any) -> dict[str, Any]:
    """The structured result of a tool call that must succeed."""
    result = await client.call_tool(tool, arguments)
    assert result.structured_content is not None
    return result.structured_content


async def call_error(client: Client[Any], tool: str, **arguments: Any) -> str:
    """The message of a tool call that must fail."""
    result = await client.call_tool(tool, arguments, raise_on_error=False)
    assert result.is_error
    return text_of(result)


def text_of(result: CallToolResult) -> str:
    """The text of a result with one text block."""
    [content] = result.content
    assert isinstance(content, TextContent)
    return content.text
