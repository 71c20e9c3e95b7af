"""What the orchestrator knows of a tool: its names, its class, its schema and hints.

A ``producer`` tool is offered to the model only when its server may propose changes: its
registry entry says ``proposes: true`` and it declares a change kind (it lists a
``confirm_<kind>`` tool). Any other server's producer tools are kept as ``withheld``: never
offered, and what one returns is never staged (it is not a producer's answer). A server
broken into cannot make itself a proposer by listing one: the operator's registry decides.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import mcp_types

from meshkit.tool_classes import CLASSES, CONFIRM, CONTEXT_ARGUMENTS, PRODUCER, READ
from orchestrator.config.registry import qualified_name

logger = logging.getLogger(__name__)

UNCLASSIFIED = "unclassified"
WITHHELD = "withheld"  # a producer of a server that may not propose: never offered
CONFIRM_PREFIX = "confirm_"


@dataclass(frozen=True)
class ToolInfo:
    server: str
    name: str
    qualified: str
    tool_class: str
    title: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool
    idempotent: bool
    context: tuple[str, ...] = ()  # arguments the orchestrator fills in (``agent``)
    # For other clients only (``get_action``: follow a proposal they made): never the model's.
    clients_only: bool = False

    @property
    def retry_safe(self) -> bool:
        """A lost call may be sent again only when doing it twice changes nothing."""
        return self.read_only or self.idempotent


def classify(tool: mcp_types.Tool) -> str:
    """The tool class from its tag; untagged third-party tools are ``read`` only when
    they declare themselves read-only, and otherwise never shown to the model."""
    meta = tool.meta or {}
    tags = set(meta.get("fastmcp", {}).get("tags", [])) & CLASSES
    if len(tags) == 1:
        return str(tags.pop())
    if not tags and tool.annotations is not None and tool.annotations.read_only_hint:
        return READ
    return UNCLASSIFIED


def context_arguments(tool: mcp_types.Tool) -> tuple[str, ...]:
    """The arguments a tool asks the orchestrator to fill in (``meta.clawmesh.context``),
    among those the orchestrator knows and the tool's schema has."""
    meta = tool.meta or {}
    clawmesh = meta.get("clawmesh")
    declared = clawmesh.get("context", []) if isinstance(clawmesh, dict) else []
    properties = (tool.input_schema or {}).get("properties") or {}
    if not isinstance(declared, list):
        return ()
    return tuple(name for name in declared if name in CONTEXT_ARGUMENTS and name in properties)


def for_clients_only(tool: mcp_types.Tool) -> bool:
    """Whether a tool says it is for other MCP clients only (``meta.clawmesh.clients_only``):
    the orchestrator's model follows its proposals by their buttons, not by polling."""
    clawmesh = (tool.meta or {}).get("clawmesh")
    return isinstance(clawmesh, dict) and clawmesh.get("clients_only") is True


def describe(server: str, tools: list[mcp_types.Tool], *, proposes: bool) -> dict[str, ToolInfo]:
    """The tools a server listed, by name; those whose names cannot form ``server__tool``
    are left out, and those without a class are kept but never shown to the model. Its
    producer tools are ``withheld`` unless it ``proposes`` (its registry entry) and declares
    a change kind."""
    found: dict[str, ToolInfo] = {}
    for tool in tools:
        qualified = qualified_name(server, tool.name)
        if qualified is None:
            logger.warning(
                "server %s: tool %r skipped: its name cannot form a valid 'server__tool' name",
                server,
                tool.name,
            )
            continue
        hints = tool.annotations
        found[tool.name] = ToolInfo(
            server=server,
            name=tool.name,
            qualified=qualified,
            tool_class=classify(tool),
            title=tool.title or (hints.title if hints and hints.title else tool.name),
            description=tool.description or "",
            input_schema=dict(tool.input_schema),
            read_only=bool(hints and hints.read_only_hint),
            idempotent=bool(hints and hints.idempotent_hint),
            context=context_arguments(tool),
            clients_only=for_clients_only(tool),
        )
    hidden = [t.name for t in found.values() if t.tool_class == UNCLASSIFIED]
    if hidden:
        logger.warning(
            "server %s: tools %s have no class tag and are not read-only: never shown to the model",
            server,
            hidden,
        )
    if proposes and change_kinds(found.values()):
        return found
    return {
        name: replace(tool, tool_class=WITHHELD) if tool.tool_class == PRODUCER else tool
        for name, tool in found.items()
    }


def change_kinds(tools: Iterable[ToolInfo]) -> set[str]:
    """The change kinds a server declares: ``<kind>`` of each ``confirm_<kind>`` tool."""
    return {
        tool.name.removeprefix(CONFIRM_PREFIX)
        for tool in tools
        if tool.tool_class == CONFIRM and tool.name.startswith(CONFIRM_PREFIX)
    }


def withheld_reason(server: str, tools: Mapping[str, ToolInfo], *, proposes: bool) -> str:
    """One line for the operator: which producer tools of ``server`` are not offered, and
    what would change that."""
    names = ", ".join(sorted(t.name for t in tools.values() if t.tool_class == WITHHELD))
    if proposes:
        return (
            f"servers.{server}: producer tools {names} not offered to the model: the server "
            "declares no change kind (it lists no confirm_<kind> tool), so nothing it proposes "
            "could be done"
        )
    return (
        f"servers.{server}: producer tools {names} not offered to the model: its registry entry "
        "does not allow it to propose changes; set proposes: true on servers."
        f"{server} if you trust it to (clawmesh's calendar, shopping, memory and scheduler)"
    )
