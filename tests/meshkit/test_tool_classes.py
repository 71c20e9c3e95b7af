"""Each tool class carries exactly one tag and the annotations DESIGN.md gives it."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fastmcp import Client

from meshkit.params import Agent
from meshkit.server import create_server
from meshkit.tool_classes import CLASSES, ToolOptions, confirm, internal, producer, read

pytestmark = pytest.mark.anyio


async def test_classes_reach_clients_as_tags_and_hints() -> None:
    server = create_server("demo", version="0", instructions="demo")

    @server.tool(**read(open_world=True))
    async def look() -> str:
        """Look."""
        return ""

    @server.tool(**producer())
    async def propose() -> str:
        """Propose."""
        return ""

    @server.tool(**confirm(destructive=True))
    async def confirm_it() -> str:
        """Confirm."""
        return ""

    @server.tool(**internal(idempotent=True))
    async def plumbing() -> str:
        """Plumbing."""
        return ""

    async with Client(server) as client:
        tools = {tool.name: tool for tool in await client.list_tools()}

    def tags(name: str) -> list[str]:
        meta = tools[name].meta or {}
        return list(meta["fastmcp"]["tags"])

    def hints(name: str) -> tuple[bool | None, bool | None, bool | None]:
        a = tools[name].annotations
        assert a is not None
        return a.read_only_hint, a.destructive_hint, a.idempotent_hint

    assert {name: tags(name) for name in tools} == {
        "look": ["read"],
        "propose": ["producer"],
        "confirm_it": ["confirm"],
        "plumbing": ["internal"],
    }
    assert hints("look") == (True, False, True)
    assert hints("propose") == (True, False, True)
    assert hints("confirm_it") == (False, True, True)
    assert hints("plumbing") == (False, False, True)
    assert {t for name in tools for t in tags(name)} <= CLASSES


@pytest.mark.parametrize("options", [read, producer])
def test_context_arguments_are_marked_in_meta(options: Callable[..., ToolOptions]) -> None:
    assert options(context=("agent",))["meta"] == {"clawmesh": {"context": ["agent"]}}


@pytest.mark.parametrize("options", [read, producer])
def test_without_context_no_meta_is_set(options: Callable[..., ToolOptions]) -> None:
    assert "meta" not in options()


@pytest.mark.parametrize("options", [read, producer])
@pytest.mark.parametrize("context", [("person",), ("agent", "chat_id"), ("Agent",)])
def test_an_unknown_context_argument_is_refused(
    options: Callable[..., ToolOptions], context: tuple[str, ...]
) -> None:
    with pytest.raises(ValueError, match="unknown context"):
        options(context=context)


async def test_context_meta_reaches_clients_next_to_the_tag() -> None:
    server = create_server("demo", version="0", instructions="demo")

    @server.tool(**read(context=("agent",)))
    async def recall(agent: Agent = "default") -> str:
        """Recall."""
        return agent

    @server.tool(**producer(context=("agent",)))
    async def propose(agent: Agent = "default") -> str:
        """Propose."""
        return agent

    @server.tool(**read())
    async def look() -> str:
        """Look."""
        return ""

    async with Client(server) as client:
        tools = {tool.name: tool for tool in await client.list_tools()}

    for name, tag in (("recall", "read"), ("propose", "producer")):
        meta = tools[name].meta or {}
        assert meta["clawmesh"] == {"context": ["agent"]}
        assert list(meta["fastmcp"]["tags"]) == [tag]
    assert "clawmesh" not in (tools["look"].meta or {})
