"""The four tool classes of DESIGN.md, as MCP annotations plus exactly one tag.

Use as ``@mcp.tool(**read(title="Forecast", open_world=True))``. The orchestrator
reads the tag (``tool.meta["fastmcp"]["tags"]``) to decide who may call a tool.

``context=("agent",)`` on a read or producer tool marks arguments the orchestrator
fills in itself (``tool.meta["clawmesh"]["context"]``): the model never sees them, so
it cannot read or change another agent's data. A client bound to a person (``MESH_CLIENTS``,
a bound stdio server) gets them from its binding, never from itself (``meshkit.bindings``);
an unbound local client sees an ordinary argument (give it a default). ``timezone`` only
reads and writes times: it never selects whose data a tool touches.
"""

from __future__ import annotations

from typing import Any, Final, NotRequired, TypedDict

from mcp_types import ToolAnnotations

READ: Final = "read"
PRODUCER: Final = "producer"
CONFIRM: Final = "confirm"
INTERNAL: Final = "internal"
# A server calling pending-actions for a client bound to a person (consent from any client):
# stage that client's proposal, follow its state. Held by servers' own credentials only.
RELAY: Final = "relay"
CLASSES: Final = frozenset({READ, PRODUCER, CONFIRM, INTERNAL, RELAY})
ORCHESTRATOR_CLASSES: Final = frozenset({READ, PRODUCER, CONFIRM, INTERNAL})
# What the orchestrator fills in: the turn's agent, its timezone, and the user it talks to.
CONTEXT_ARGUMENTS: Final = frozenset({"agent", "timezone", "user"})


class ToolOptions(TypedDict):
    annotations: ToolAnnotations
    tags: set[str]
    meta: NotRequired[dict[str, Any]]


def read(
    *,
    title: str | None = None,
    open_world: bool = False,
    context: tuple[str, ...] = (),
    clients_only: bool = False,
) -> ToolOptions:
    """A tool the LLM may call that never changes state.

    ``clients_only``: meant for other MCP clients (``get_action``, following a proposal they
    made), so the orchestrator does not offer it to its model
    (``meta["clawmesh"]["clients_only"]``)."""
    options = _options(
        READ, title, read_only=True, destructive=False, idempotent=True, open_world=open_world
    )
    options = _with_context(options, context)
    if clients_only:
        options.setdefault("meta", {}).setdefault("clawmesh", {})["clients_only"] = True
    return options


def producer(*, title: str | None = None, context: tuple[str, ...] = ()) -> ToolOptions:
    """A tool the LLM may call that returns a Proposal and changes nothing."""
    options = _options(
        PRODUCER, title, read_only=True, destructive=False, idempotent=True, open_world=False
    )
    return _with_context(options, context)


def confirm(*, title: str | None = None, destructive: bool = False) -> ToolOptions:
    """A tool only the orchestrator calls, after a human tap, with an approval token.

    Idempotent by construction: a replayed approval returns the first result.
    """
    return _options(
        CONFIRM, title, read_only=False, destructive=destructive, idempotent=True, open_world=False
    )


def internal(
    *, title: str | None = None, read_only: bool = False, idempotent: bool = False
) -> ToolOptions:
    """Orchestrator plumbing (Telegram inbox, conversation window), never shown to the LLM."""
    return _options(
        INTERNAL,
        title,
        read_only=read_only,
        destructive=False,
        idempotent=idempotent,
        open_world=False,
    )


def relay(*, title: str | None = None, read_only: bool = False) -> ToolOptions:
    """A pending-actions tool a server calls for a bound client: never the orchestrator's,
    never a client's, never the model's."""
    return _options(
        RELAY,
        title,
        read_only=read_only,
        destructive=False,
        idempotent=read_only,
        open_world=False,
    )


def _with_context(options: ToolOptions, context: tuple[str, ...]) -> ToolOptions:
    unknown = set(context) - CONTEXT_ARGUMENTS
    if unknown:
        raise ValueError(f"unknown context arguments {sorted(unknown)}")
    if context:
        options["meta"] = {"clawmesh": {"context": sorted(set(context))}}
    return options


def _options(
    tag: str,
    title: str | None,
    *,
    read_only: bool,
    destructive: bool,
    idempotent: bool,
    open_world: bool,
) -> ToolOptions:
    annotations = ToolAnnotations(
        title=title,
        read_only_hint=read_only,
        destructive_hint=destructive,
        idempotent_hint=idempotent,
        open_world_hint=open_world,
    )
    return ToolOptions(annotations=annotations, tags={tag})
