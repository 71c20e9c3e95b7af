"""What a tool of the server behind the gateway is to clawmesh: a read, a change, or hidden.

A tool is a read when it declares ``readOnlyHint: true``. Every other tool is a change,
including one with no annotations at all: the MCP specification's defaults
(``readOnlyHint: false``, ``destructiveHint: true``) say it may change anything. The
gateway offers a change as a producer of the same name, whose proposal the user confirms
with a tap; ``destructiveHint`` (true, or absent) marks it destructive: shown with ⚠️,
always a tap, never "allow for 1 h".

A change's kind (what policies and grants name: ``git.git_add``) is its tool name when
that is one (``[a-z][a-z0-9_]{0,39}``), else the name lower-cased with ``-`` as ``_``.
A tool is hidden, never offered, when no kind can be made of its name, when its kind is
another tool's, when its name is the gateway's own (``get_action``, ``confirm_…``), or when
a change takes an argument named ``agent`` or ``user`` (clawmesh fills those in itself).
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Final, Literal

import mcp_types

from meshkit.text import shown_line

READ: Final = "read"
CHANGE: Final = "change"
HIDDEN: Final = "hidden"
Class = Literal["read", "change", "hidden"]

_KIND = re.compile(r"[a-z][a-z0-9_]{0,39}")
RESERVED = ("get_action",)
CONFIRM_PREFIX = "confirm_"
IDENTITY = ("agent", "user")
MAX_SUMMARY = 500
MAX_VALUE = 80


@dataclass(frozen=True)
class Classified:
    """One upstream tool as the gateway serves it."""

    tool: mcp_types.Tool
    tool_class: Class
    kind: str = ""  # a change's kind
    destructive: bool = False
    why: str = ""  # why it is hidden

    @property
    def title(self) -> str:
        hints = self.tool.annotations
        return self.tool.title or (hints.title if hints and hints.title else "") or self.tool.name


def kind_of(name: str) -> str | None:
    """The change kind a tool name makes, or None."""
    kind = name.lower().replace("-", "_")
    return kind if _KIND.fullmatch(kind) else None


def classify(tools: list[mcp_types.Tool]) -> list[Classified]:
    """Every tool of the upstream's listing, in its order, with its class."""
    found: list[Classified] = []
    kinds: dict[str, str] = {}
    for tool in tools:
        hints = tool.annotations
        if tool.name in RESERVED or tool.name.startswith(CONFIRM_PREFIX):
            found.append(Classified(tool, HIDDEN, why="its name is one the gateway uses itself"))
            continue
        if hints is not None and hints.read_only_hint is True:
            found.append(Classified(tool, READ))
            continue
        kind = kind_of(tool.name)
        properties = (tool.input_schema or {}).get("properties") or {}
        taken = [name for name in IDENTITY if name in properties]
        if kind is None:
            why = "no change kind can be made of its name (letters, digits, _ and -, 40 at most)"
            found.append(Classified(tool, HIDDEN, why=why))
        elif kind in kinds:
            why = f"its change kind {kind!r} is {kinds[kind]!r}'s already"
            found.append(Classified(tool, HIDDEN, why=why))
        elif taken:
            why = f"it takes an argument named {taken[0]!r}, which clawmesh fills in itself"
            found.append(Classified(tool, HIDDEN, why=why))
        else:
            kinds[kind] = tool.name
            destructive = hints is None or hints.destructive_hint is not False
            found.append(Classified(tool, CHANGE, kind=kind, destructive=destructive))
    return found


def call_summary(title: str, arguments: dict[str, Any], *, destructive: bool) -> str:
    """The line a person reads above the buttons: the tool and its arguments in plain words,
    each value as JSON (quoted, escaped) and cut at ``MAX_VALUE`` characters, the whole cut
    at ``MAX_SUMMARY`` (the whole call is one tap away)."""
    parts = [f"{name}={_value(value)}" for name, value in arguments.items()]
    head = f"{'⚠️ ' if destructive else ''}{shown_line(title)}"
    text = f"{head}: {', '.join(parts)}" if parts else f"{head} (no arguments)"
    return text if len(text) <= MAX_SUMMARY else text[: MAX_SUMMARY - 1] + "…"


def whole_call(tool: str, arguments: dict[str, Any]) -> str:
    """The call exactly as it will be made: the tool and its arguments, as indented JSON."""
    text = json.dumps(arguments, ensure_ascii=False, indent=2, sort_keys=True)
    return f"{tool}\n{''.join(_escaped(char) for char in text)}"


def _escaped(char: str) -> str:
    """An invisible character (a bidi override, a zero-width joiner) as its escape, so what a
    person reads is what is sent."""
    if char == "\n" or unicodedata.category(char) not in {"Cf", "Cc", "Cs"}:
        return char
    return f"\\u{ord(char):04x}"


def _value(value: Any) -> str:
    text = shown_line(json.dumps(value, ensure_ascii=False, separators=(",", ":")))
    return text if len(text) <= MAX_VALUE else text[: MAX_VALUE - 1] + "…"


def result_text(result: mcp_types.CallToolResult) -> str:
    """What a call answered, as text: its text blocks, else its structured content as JSON,
    else a word for each other block."""
    texts = [block.text for block in result.content if isinstance(block, mcp_types.TextContent)]
    if texts:
        return "\n".join(texts).strip()
    if result.structured_content is not None:
        return json.dumps(result.structured_content, ensure_ascii=False)
    return " ".join(f"[{block.type}]" for block in result.content) or "(no answer)"
