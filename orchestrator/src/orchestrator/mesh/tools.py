"""What the orchestrator knows of a tool: its names, its class, its schema and hints."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import mcp_types

from meshkit.tool_classes import CLASSES, CONTEXT_ARGUMENTS, READ
from orchestrator.config import qualified_name

logger = logging.getLogger(__name__)

UNCLASSIFIED = "unclassified"


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


def describe(server: str, tools: list[mcp_types.Tool]) -> dict[str, ToolInfo]:
    """The tools a server listed, by name; those whose names cannot form ``server__tool``
    are left out, and those without a class are kept but never shown to the model."""
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
    return found
