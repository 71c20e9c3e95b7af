"""Every argument of every tool has a size bound, checked when a server starts.

An argument without one lets a single call cost unbounded work or fail deep inside: a
1 MB time-zone string, an id of 10**30 that SQLite cannot store ("Python int too large to
convert"), a list of a million keys. Bounded means, in the tool's input schema:

- a string has ``maxLength`` (an ``enum`` or ``const`` is bounded by its values; a
  ``pattern`` alone is not, as a regular expression says nothing about length to a reader),
- an integer or number has ``maximum`` (or ``exclusiveMaximum``),
- an array has ``maxItems``,

inside lists and objects too. The SDK validates every call against the schema, so a value
beyond its bound is a worded validation error, never a traceback. A free-form object
(a confirm tool's ``payload``, a turn's ``items``) has no schema to bound: the request
body bounds it (``MESH_MAX_BODY_BYTES``) and the model its reader validates it with.

``create_server`` runs :func:`require_bounds` as the first step of every server's
lifespan, in every transport (HTTP, stdio, in-memory, embedded): a server with an
unbounded argument does not start, and the error names each one.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from fastmcp import FastMCP


class UnboundedArgument(Exception):
    """A tool takes an argument without a size bound (a programming error, found at start)."""


def unbounded(schema: Mapping[str, Any]) -> list[str]:
    """The paths (``ids[]``, ``buttons[][].data``) of the schema's unbounded values."""
    defs = schema.get("$defs", {})
    return list(_walk(schema, "", defs, set()))


async def require_bounds(server: FastMCP[Any]) -> None:
    """UnboundedArgument naming every tool argument of ``server`` that has no bound."""
    found = [
        f"{tool.name}: {path}"
        for tool in await server.list_tools(run_middleware=False)
        for path in unbounded(tool.parameters)
    ]
    if found:
        raise UnboundedArgument(
            f"server {server.name!r} has tool arguments without a size bound (give strings "
            f"max_length, numbers le, lists max_length): {'; '.join(found)}"
        )


def _walk(node: Any, path: str, defs: Mapping[str, Any], seen: set[str]) -> Iterator[str]:
    if not isinstance(node, Mapping):
        return
    ref = node.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        if name not in seen:  # a recursive model is walked once
            yield from _walk(defs.get(name, {}), path, defs, seen | {name})
        return
    for key in ("anyOf", "oneOf", "allOf"):
        for option in node.get(key, []):
            yield from _walk(option, path, defs, seen)
    kind = node.get("type")
    kinds = set(kind) if isinstance(kind, list) else {kind}
    bounded_by_values = "enum" in node or "const" in node
    if "string" in kinds and "maxLength" not in node and not bounded_by_values:
        yield path or "(the value)"
    has_maximum = "maximum" in node or "exclusiveMaximum" in node
    if kinds & {"integer", "number"} and not has_maximum and not bounded_by_values:
        yield path or "(the value)"
    if "array" in kinds and "maxItems" not in node:
        yield path or "(the value)"
    for name, child in node.get("properties", {}).items():
        yield from _walk(child, f"{path}.{name}" if path else name, defs, seen)
    if "items" in node:
        yield from _walk(node["items"], f"{path}[]", defs, seen)
    if isinstance(node.get("additionalProperties"), Mapping):
        yield from _walk(node["additionalProperties"], f"{path}{{}}", defs, seen)
