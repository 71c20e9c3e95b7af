"""MCP tools become function tools the Responses API accepts; results become strings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import mcp_types
import pytest
from fastmcp import Client, FastMCP

from mcp_memory.server import build_server as build_memory
from mcp_memory.settings import MemorySettings
from mcp_telegram_io.server import build_server as build_telegram_io
from mcp_telegram_io.settings import TelegramIOSettings
from mcp_weather.server import build_server as build_weather
from mcp_weather.settings import WeatherSettings
from orchestrator.mesh.bridge import (
    output_of,
    output_of_error,
    prepare_arguments,
    strict_schema,
    to_tool_spec,
)
from orchestrator.mesh.errors import ToolFailed
from orchestrator.mesh.registry import ToolResult
from orchestrator.mesh.tools import ToolInfo

pytestmark = pytest.mark.anyio


def assert_strict(schema: Any) -> None:
    """The rules of OpenAI strict mode, checked on every node."""
    if isinstance(schema, dict):
        assert "default" not in schema
        assert "oneOf" not in schema
        assert "allOf" not in schema
        if schema.get("type") == "object" or "properties" in schema:
            assert schema["additionalProperties"] is False
            assert schema["required"] == list(schema["properties"])
        for value in schema.values():
            assert_strict(value)
    elif isinstance(schema, list):
        for value in schema:
            assert_strict(value)


def tool_info(schema: dict[str, Any], name: str = "t") -> ToolInfo:
    return ToolInfo(
        server="s",
        name=name,
        qualified=f"s__{name}",
        tool_class="read",
        title=name,
        description="d",
        input_schema=schema,
        read_only=True,
        idempotent=True,
    )


async def shipped_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> list[tuple[str, mcp_types.Tool]]:
    agents = tmp_path / "agents.yaml"
    agents.write_text("agents:\n  a: {bot_token_env: A_TOKEN}\n")
    monkeypatch.setenv("A_TOKEN", "123:abc")
    servers: list[FastMCP[Any]] = [
        build_weather(WeatherSettings()),
        build_memory(MemorySettings(data_dir=tmp_path)),
        build_telegram_io(TelegramIOSettings(data_dir=tmp_path, agents=agents)),
    ]
    found = []
    for server in servers:
        async with Client(server) as client:
            found += [(server.name, tool) for tool in await client.list_tools()]
    return found


async def test_every_tool_of_every_shipped_server_converts_to_strict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tools = await shipped_tools(tmp_path, monkeypatch)
    assert len(tools) >= 6
    for server, tool in tools:
        spec = to_tool_spec(tool_info(dict(tool.input_schema), tool.name))
        # Free-form item lists (memory's append_items) and payloads (confirm tools, never
        # shown to the model) may stay non-strict; all else is strict.
        if spec.strict:
            assert_strict(spec.parameters)
            jsonschema.Draft202012Validator.check_schema(spec.parameters)
        else:
            assert server == "memory", tool.name
            assert tool.name == "append_items" or tool.name.startswith("confirm_"), tool.name


async def test_weather_tools_are_strict_with_optional_days_nullable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tools = dict((tool.name, tool) for _, tool in await shipped_tools(tmp_path, monkeypatch))
    spec = to_tool_spec(tool_info(dict(tools["get_forecast"].input_schema), "get_forecast"))
    assert spec.strict
    days = spec.parameters["properties"]["days"]
    assert "null" in days["type"] or {"type": "null"} in days.get("anyOf", [])
    assert spec.parameters["required"] == ["location", "days"]


def test_optional_nulls_are_dropped_and_the_original_schema_then_validates() -> None:
    original = {
        "type": "object",
        "properties": {
            "location": {"type": "string"},
            "days": {"type": "integer", "default": 3},
            "filter": {
                "type": "object",
                "properties": {"tag": {"type": "string"}, "limit": {"type": "integer"}},
                "required": ["tag"],
            },
        },
        "required": ["location"],
    }
    strict = strict_schema(original)
    sent = {"location": "Paris", "days": None, "filter": {"tag": "x", "limit": None}}
    jsonschema.validate(sent, strict)
    prepared = prepare_arguments(json.dumps(sent), original)
    assert prepared == {"location": "Paris", "filter": {"tag": "x"}}
    jsonschema.validate(prepared, original)


def test_a_required_null_is_kept_for_the_server_to_refuse() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
    assert prepare_arguments('{"a": null}', schema) == {"a": None}


@pytest.mark.parametrize("arguments", ["{not json", "[1, 2]", '"text"'])
def test_malformed_arguments_are_refused_with_a_hint(arguments: str) -> None:
    with pytest.raises(ValueError, match="JSON"):
        prepare_arguments(arguments, {"type": "object", "properties": {}})


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object"},
        {"type": "object", "additionalProperties": {"type": "string"}},
        {
            "type": "object",
            "properties": {"x": {"oneOf": [{"type": "string"}, {"type": "integer"}]}},
        },
        {"type": "object", "properties": {"x": {"type": "object"}}},
    ],
)
def test_schemas_that_cannot_be_strict_fall_back_to_strict_false(schema: dict[str, Any]) -> None:
    spec = to_tool_spec(tool_info(schema))
    assert spec.strict is False
    assert spec.parameters["type"] == "object"


def test_enums_and_refs_become_nullable_when_optional() -> None:
    schema = {
        "type": "object",
        "properties": {
            "unit": {"type": "string", "enum": ["c", "f"]},
            "where": {"$ref": "#/$defs/Place"},
        },
        "$defs": {
            "Place": {
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"],
                "title": "Place",
            }
        },
    }
    strict = strict_schema(schema)
    assert strict["properties"]["unit"] == {"type": ["string", "null"], "enum": ["c", "f", None]}
    assert strict["properties"]["where"] == {"anyOf": [{"$ref": "#/$defs/Place"}, {"type": "null"}]}
    assert_strict(strict)
    jsonschema.validate({"unit": None, "where": {"name": "Paris"}}, strict)


def test_results_render_structured_as_json_text_as_text_and_errors_marked() -> None:
    structured = ToolResult({"temp": 21.5, "n": "Zürich"}, "")
    assert output_of(structured) == '{"temp":21.5,"n":"Zürich"}'
    assert output_of(ToolResult(None, "plain words")) == "plain words"
    assert output_of(ToolResult({"result": "bare"}, "bare", wrapped=True)) == "bare"
    failed = ToolFailed("s__t", "No place called 'X'")
    assert json.loads(output_of_error(failed, tool_info({}))) == {"error": "No place called 'X'"}


def test_optional_plain_types_are_sent_as_a_type_list_and_the_rest_stays_an_anyof() -> None:
    schema = {
        "type": "object",
        "properties": {
            "store": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
            "days": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]},
            "repeat": {"anyOf": [{"type": "string", "enum": ["daily"]}, {"type": "null"}]},
            "where": {"anyOf": [{"$ref": "#/$defs/Place"}, {"type": "null"}]},
            "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        },
        "required": ["store", "days", "repeat", "where", "either"],
        "$defs": {"Place": {"type": "object", "properties": {}, "required": []}},
    }
    strict = strict_schema(schema)
    properties = strict["properties"]
    assert properties["store"] == {"type": ["string", "null"]}
    assert properties["days"] == {"type": ["integer", "null"], "minimum": 1}
    assert properties["repeat"] == {"type": ["string", "null"], "enum": ["daily", None]}
    assert properties["where"] == {"anyOf": [{"$ref": "#/$defs/Place"}, {"type": "null"}]}
    assert properties["either"] == {"anyOf": [{"type": "string"}, {"type": "integer"}]}
    assert_strict(strict)
    jsonschema.Draft202012Validator.check_schema(strict)
    for sent in ({"store": None, "days": None, "repeat": None}, {"store": "x", "days": 2}):
        jsonschema.validate({"where": None, "either": 1, "repeat": "daily", **sent}, strict)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**{k: None for k in properties}, "days": 0}, strict)


def test_a_docstring_s_hard_wrapped_lines_reach_the_model_as_one_paragraph() -> None:
    info = tool_info({"type": "object", "properties": {}})
    wrapped = "Events from start\n        to end.\n\nSecond paragraph:\n- one\n- two"
    spec = to_tool_spec(ToolInfo(**{**info.__dict__, "description": wrapped}))
    assert spec.description == "Events from start to end.\n\nSecond paragraph:\n- one\n- two"
