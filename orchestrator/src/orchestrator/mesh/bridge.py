"""MCP tools to Responses API function tools, arguments back, results and errors to the
output strings the model reads (the only place that writes them).

Strict mode (structured outputs) accepts a subset of JSON Schema: every object
closed (``additionalProperties: false``) with every property required, optional
ones made nullable, no ``default``. A schema that cannot be expressed that way
(free-form objects, ``oneOf``/``allOf``) is sent with ``strict: false``. When the
model fills an optional argument with ``null`` (as strict mode makes it), the
null is dropped before the call so the server applies its own default.

Every request carries every tool, so the specs are kept small without losing what the
model reads: ``anyOf [T, null]`` (pydantic's ``T | None``) becomes ``type: [T, "null"]``
where T is a plain typed schema, titles and defaults go, and a description's hard-wrapped
lines (a docstring's) are joined into one paragraph.
"""

from __future__ import annotations

import json
import re
from typing import Any

from orchestrator.llm.base import ToolSpec
from orchestrator.mesh.errors import (
    CallLost,
    CallRefused,
    CallTimedOut,
    ServerUnavailable,
    ToolCallError,
    ToolFailed,
)
from orchestrator.mesh.registry import ToolResult
from orchestrator.mesh.tools import ToolInfo

_KEEP = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "anyOf",
        "description",
        "$ref",
        "$defs",
        "pattern",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minItems",
        "maxItems",
    }
)
_UNSUPPORTED = frozenset(
    {
        "oneOf",
        "allOf",
        "not",
        "if",
        "then",
        "else",
        "patternProperties",
        "dependentSchemas",
        "dependentRequired",
        "unevaluatedProperties",
        "propertyNames",
        "prefixItems",
    }
)
_MERGEABLE = frozenset({"string", "integer", "number", "boolean", "array"})
_WRAP = re.compile(r"(?<!\n)[ \t]*\n[ \t]*(?![\n \t]|[-*] )")  # a break inside a paragraph
_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)


class NotStrict(Exception):
    pass


def to_tool_spec(tool: ToolInfo) -> ToolSpec:
    schema = without_context(tool.input_schema or {"type": "object", "properties": {}}, tool)
    description = unwrapped(tool.description)
    try:
        return ToolSpec(tool.qualified, description, strict_schema(schema), strict=True)
    except NotStrict:
        return ToolSpec(tool.qualified, description, loose_schema(schema), strict=False)


def unwrapped(text: str) -> str:
    """``text`` with its hard line breaks joined (blank lines and list items kept)."""
    return _WRAP.sub(" ", text.strip())


def without_context(schema: dict[str, Any], tool: ToolInfo) -> dict[str, Any]:
    """The schema minus the arguments the orchestrator fills in: the model never sees them."""
    if not tool.context:
        return schema
    properties = {
        name: sub
        for name, sub in (schema.get("properties") or {}).items()
        if name not in tool.context
    }
    required = [name for name in schema.get("required", []) if name not in tool.context]
    return {**schema, "properties": properties, "required": required}


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The strict-mode form of an object schema; raises NotStrict when there is none."""
    if schema.get("type") != "object":
        raise NotStrict("the root must be an object")
    converted = _convert(schema)
    if "$defs" in schema:
        converted["$defs"] = {name: _convert(sub) for name, sub in schema["$defs"].items()}
    return converted


def loose_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Non-strict tools still need an object root."""
    if schema.get("type") == "object":
        return schema
    return {"type": "object", "properties": {}, "additionalProperties": True}


def _convert(node: Any) -> dict[str, Any]:
    if not isinstance(node, dict):
        raise NotStrict("a schema must be an object")
    if _UNSUPPORTED & node.keys():
        raise NotStrict(f"unsupported keywords {sorted(_UNSUPPORTED & node.keys())}")
    out = {key: value for key, value in node.items() if key in _KEEP and key != "$defs"}
    if out.get("format") not in _FORMATS:
        out.pop("format", None)
    if "description" in out:
        out["description"] = unwrapped(str(out["description"]))
    if "anyOf" in node:
        out["anyOf"] = [_convert(sub) for sub in node["anyOf"]]
        out = _merged(out)
    types = node.get("type")
    type_set = set(types) if isinstance(types, list) else {types}
    if "object" in type_set or "properties" in node:
        extra = node.get("additionalProperties")
        if ("properties" not in node and extra is not False) or (isinstance(extra, dict) and extra):
            raise NotStrict("free-form objects (open key sets) cannot be strict")
        properties = node.get("properties") or {}
        required = set(node.get("required", []))
        out["properties"] = {
            name: _convert(sub) if name in required else _nullable(_convert(sub))
            for name, sub in properties.items()
        }
        out["required"] = list(properties)
        out["additionalProperties"] = False
    if "array" in type_set:
        if "items" not in node:
            raise NotStrict("arrays need an items schema")
        out["items"] = _convert(node["items"])
    return out


def _merged(node: dict[str, Any]) -> dict[str, Any]:
    """``anyOf [T, null]`` as ``type: [T, "null"]`` when T is one plain type (its other
    keywords apply to that type only, so null still validates); else ``node`` as it is."""
    branches = node["anyOf"]
    if len(branches) != 2 or {"type": "null"} not in branches:
        return node
    [plain] = [sub for sub in branches if sub != {"type": "null"}]
    kind = plain.get("type")
    described = "description" in plain and "description" in node
    if kind not in _MERGEABLE or "const" in plain or described:
        return node
    merged = {**{k: v for k, v in node.items() if k != "anyOf"}, **plain, "type": [kind, "null"]}
    if "enum" in merged and None not in merged["enum"]:
        merged["enum"] = [*merged["enum"], None]
    return merged


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    if "anyOf" in schema:
        if not any(sub.get("type") == "null" for sub in schema["anyOf"]):
            schema["anyOf"] = [*schema["anyOf"], {"type": "null"}]
        return schema
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if "null" not in types:
            schema["type"] = [*types, "null"]
        if "enum" in schema and None not in schema["enum"]:
            schema["enum"] = [*schema["enum"], None]
        return schema
    return {"anyOf": [schema, {"type": "null"}]}


def prepare_arguments(arguments: str, schema: dict[str, Any]) -> dict[str, Any]:
    """Parse the model's JSON arguments and drop nulls it sent for optional ones."""
    try:
        value = json.loads(arguments or "{}")
    except json.JSONDecodeError as error:
        raise ValueError(
            f"the arguments are not valid JSON ({error.msg}); send a JSON object"
        ) from None
    if not isinstance(value, dict):
        raise ValueError("the arguments must be a JSON object")
    dropped: dict[str, Any] = _drop_optional_nulls(value, schema)
    return dropped


def _drop_optional_nulls(value: Any, schema: Any) -> Any:
    if not isinstance(value, dict) or not isinstance(schema, dict):
        return value
    properties = schema.get("properties") or {}
    required = set(schema.get("required", []))
    return {
        key: _drop_optional_nulls(item, properties.get(key))
        for key, item in value.items()
        if not (item is None and key not in required)
    }


def output_of(result: ToolResult) -> str:
    """The function_call_output string: structured content as JSON, else the text."""
    if result.structured is None:
        return result.text
    if result.wrapped:
        value = result.structured["result"]  # a tool that returned a bare value
        return value if isinstance(value, str) else _json(value)
    return _json(result.structured)


# What the model reads of a proposal it made, when the server's own note ("Nothing has
# changed yet... Do not say it is done") is not the whole truth. The orchestrator knows the
# policy (agents.yaml) at tool time, not whether a grant is running (pending-actions keeps
# those): where one may be, the note says both ways, so it is never false.
MADE_AT_ONCE_NOTE = (
    "No tap is needed: the user's policy allows this change, so it is made as soon as your "
    "reply is sent, and the user sees under your reply how it went. It is not done yet: say "
    "you are making it, not that it is done."
)
TAP_OR_GRANT_NOTE = (
    "Nothing has changed yet: the user sees this under your reply with buttons to confirm or "
    "cancel it, unless they have allowed such changes for a while, in which case it is made "
    "as soon as your reply is sent and the line under your reply says so. Do not say it is "
    "done."
)


def note_for(policy: str, *, offers_grant: bool) -> str | None:
    """The note a proposal's output carries under ``policy`` (``offers_grant``: the rule
    lets a tap allow its kind for a while); None: the server's own stands."""
    if policy == "auto":
        return MADE_AT_ONCE_NOTE
    if offers_grant:
        return TAP_OR_GRANT_NOTE
    return None


def proposal_output(result: ToolResult, note: str | None) -> str:
    """A proposal's function_call_output, with ``note`` in place of the server's (None:
    as it came)."""
    if note is None or result.structured is None or result.wrapped:
        return output_of(result)
    return _json({**result.structured, "note": note})


def error_output(message: str) -> str:
    return json.dumps({"error": message}, ensure_ascii=False)


def denied_output(agent_name: str, change: str) -> str:
    """What the model reads when the agent's policy denies the change a tool proposed."""
    return error_output(
        f"{change} is not allowed by {agent_name}'s policy: nothing was proposed and nothing "
        "will change. Tell the user it is not allowed; do not try another way to make it."
    )


def cannot_make_output(tool: ToolInfo, kind: str) -> str:
    """What the model reads when a tool proposed a kind of change its server cannot make (it
    has no ``confirm_<kind>``): nothing is staged, so no tap could ever leave it half done."""
    return error_output(
        f"{tool.qualified} proposed a change of a kind ({kind[:40]}) that the {tool.server} "
        "server cannot make: nothing was proposed and nothing will change. Tell the user it "
        "cannot be done this way."
    )


def output_of_error(error: ToolCallError, tool: ToolInfo) -> str:
    """What the model reads when a call gave no result: what happened and what to do."""
    return error_output(_explained(error, tool))


def _explained(error: ToolCallError, tool: ToolInfo) -> str:  # noqa: PLR0911 (one per case)
    if isinstance(error, ToolFailed):
        return error.message
    if isinstance(error, ServerUnavailable):
        return (
            f"The {tool.server} server is unavailable right now; tell the user and "
            "suggest trying again shortly."
        )
    if isinstance(error, CallTimedOut):
        return (
            f"{tool.qualified} did not answer within {error.timeout_s:g} s; "
            "it may still complete. Do not assume it worked."
        )
    if isinstance(error, CallLost) and tool.retry_safe:
        return (
            f"The call to {tool.qualified} failed in transport, also when tried again; "
            "tell the user and suggest trying again shortly."
        )
    if isinstance(error, CallLost):  # not sent again: it may have happened
        return (
            f"The call to {tool.qualified} failed in transport and was not retried because "
            "it may change something. Tell the user it may not have happened."
        )
    if isinstance(error, CallRefused):
        return f"{tool.qualified} refused the call: {error.detail}"
    return f"{tool.qualified} gave an answer clawmesh cannot read."


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
