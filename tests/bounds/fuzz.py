"""Hostile tool arguments, derived from each tool's input schema with a seeded random."""

from __future__ import annotations

import random
from typing import Any

HOSTILE_STRINGS = [
    "",
    " ",
    "\x00",
    "x" * 1_000_000,
    "\u202e\u200d\ufeff",
    "REMEMBERED>>>",
    "REMEMBERED\uff1e\uff1e\uff1e",
    "<<<REMEMBERED",
    "' OR 1=1 --",
    "../../etc/passwd",
    "0001-01-01",
    "9999-12-31T23:59",
    "2026-02-30",
    "-1",
    "1e309",
    "NaN",
    "Europe/../../etc",
    "\ud83e\udd16" * 10,
    "mem_000000000000",
    "q_000000000000",
    "fir_000000000000",
    "bat_000000000000",
    "{}",
]
HOSTILE_NUMBERS: list[Any] = [
    10**30,
    -(10**30),
    2**63,
    2**63 - 1,
    -1,
    0,
    1.5,
    1e308,
    -1e308,
]
WRONG_TYPES: list[Any] = [
    None,
    True,
    [],
    ["x"] * 3,
    {},
    {"a": {"b": {"c": [1, [2, [3]]]}}},
    "x",
    7,
]


def nested(depth: int) -> Any:
    value: Any = "deep"
    for level in range(depth):
        value = {"k": value} if level % 2 else [value]
    return value


# Values that take a call past its first check (a known agent, a real zone, a readable time).
KNOWN: dict[str, Any] = {
    "agent": "ada",
    "user": "42",
    "chat_id": "42",
    "timezone": "Europe/Berlin",
    "location": "Berlin",
    "start": "2026-12-01T09:00",
    "end": "2026-12-01T10:00",
    "when": "2026-12-01T09:00",
    "date": "2026-12-01",
    "text": "hello",
    "query": "dentist",
    "title": "Dentist",
    "name": "milk",
    "item": "milk",
}


def plausible(schema: dict[str, Any], rng: random.Random) -> Any:
    """A value the schema probably accepts: the baseline every hostile call changes."""
    if "default" in schema:
        return schema["default"]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return plausible(schema[key][0], rng)
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type")
    if kind == "string":
        return "x" * max(1, schema.get("minLength", 1))
    if kind == "integer":
        return max(1, schema.get("minimum", 1))
    if kind == "number":
        return 1.0
    if kind == "boolean":
        return False
    if kind == "array":
        return []
    if kind == "object":
        return {
            name: plausible(prop, rng)
            for name, prop in schema.get("properties", {}).items()
            if name in schema.get("required", [])
        }
    return None


def hostile(rng: random.Random) -> Any:
    pool = rng.choice([HOSTILE_STRINGS, HOSTILE_NUMBERS, WRONG_TYPES])
    return nested(rng.choice([20, 60])) if rng.random() < 0.05 else rng.choice(pool)


def resolve(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return resolve(defs[ref.rsplit("/", 1)[1]], defs)
    return schema


def kinds(schema: dict[str, Any], defs: dict[str, Any]) -> set[str]:
    """The JSON types a (resolved) schema allows, its anyOf options included."""
    found = {schema["type"]} if isinstance(schema.get("type"), str) else set()
    for option in schema.get("anyOf", []):
        found |= kinds(resolve(option, defs), defs)
    return found


# The extreme each declared type gets once per argument: a huge string, an id of 10^30.
EXTREMES: dict[str, list[Any]] = {
    "string": ["x" * 1_000_000],
    "integer": [10**30, -(10**30)],
    "number": [1e308],
    "array": [["x" * 1_000_000], list(range(10_000))],
    "object": [nested(60)],
}


def calls(schema: dict[str, Any], rng: random.Random, count: int) -> list[dict[str, Any]]:
    """Argument sets for one tool, each a plausible baseline with something made hostile:
    every argument once at the extreme of each type it takes, then ``count`` random ones
    (one or two arguments, or items inside one, hostile; now and then an unknown one)."""
    defs = schema.get("$defs", {})
    props = {key: resolve(value, defs) for key, value in schema.get("properties", {}).items()}
    baseline = {key: KNOWN.get(key, plausible(value, rng)) for key, value in props.items()}
    out: list[dict[str, Any]] = [
        {**baseline, key: extreme}
        for key, prop in props.items()
        for kind in sorted(kinds(prop, defs))
        for extreme in EXTREMES.get(kind, [])
    ]
    for _ in range(count):
        arguments = dict(baseline)
        names = sorted(props) or ["extra"]
        for key in rng.sample(names, k=min(len(names), rng.choice([1, 2]))):
            arguments[key] = hostile(rng)
            if isinstance(baseline.get(key), list) and rng.random() < 0.5:
                arguments[key] = [hostile(rng) for _ in range(rng.choice([1, 3]))]
        if rng.random() < 0.1:
            arguments["unexpected"] = hostile(rng)
        out.append(arguments)
    return out
