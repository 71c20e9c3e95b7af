"""What one model request of the shipped agent carries, in estimated tokens: the figures
bench/tokens.py prints and tests/orchestrator/test_request_size.py holds to a budget.

The request is the exact body the orchestrator sends (the fake OpenAI's ``requests``) for a
plain question to the shipped agent (config/agents.yaml's first, clawdia) with every server
of config/mcp_servers.local.yaml in-process (telegram-io left out, as the console does: it
has no model tools), a few remembered notes (imported as ``python -m mcp_memory import``
would) and a short window (one earlier exchange with a weather call).

The estimator: **characters / 4** of the body as the orchestrator sends it: the openai
client serialises it compactly (``openai._utils._json.openapi_dumps``: separators ``,`` and
``:``, non-ASCII as itself), which ``sent`` reproduces from the body the fake received. No
tokenizer is in the lock, and tiktoken downloads its encodings at run time (unreachable
here); four characters a token is OpenAI's own rule of thumb for English. It errs high on
the tools: the API shows the model a function's schema more compactly than its JSON. (The
fake OpenAI's ``usage.input_tokens`` counts ``json.dumps``'s default spacing and ASCII
escapes too, about 5 % more.) A part's figure is the characters its JSON adds to the body
(a string's quotes and escapes included) over 4; ``envelope`` is the rest (model, keys,
options, the input's roles).

The tools are also estimated **as the model reads them**: OpenAI renders the function
definitions into the model's context as text, not as their JSON, and its cookbook
("How to count tokens with tiktoken", tool calls) counts them as fixed costs per function,
per property and per enum item plus the tokens of ``name:description`` and
``key:type:description`` lines (``rendered``; text still at 4 characters a token, a nested
schema at its JSON's). That is what a hosted OpenAI model bills; a local server whose chat
template pastes the tools' JSON into the prompt reads something closer to the first figure.
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from fakes.responses_api import Body, FakeOpenAI, Step, call, calls, text
from mcp_memory.memory_store import MemoryStore
from mcp_memory.settings import MemorySettings
from orchestrator.app import App, open_app
from orchestrator.core.remembered import CLOSE, PREAMBLE
from orchestrator.core.routes import TextContext
from orchestrator.settings import OrchestratorSettings

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = ROOT / "config" / "mcp_servers.local.yaml"
FLEET = ROOT / "config" / "agents.yaml"
AGENT = "clawdia"
USER = "4242"
CHARS_PER_TOKEN = 4
# The cookbook's fixed costs of a rendered tool list (gpt-4o family and later).
FUNC_INIT, PROP_INIT, PROP_KEY, ENUM_INIT, ENUM_ITEM, FUNC_END = 7, 3, 3, -3, 3, 12
BUDGET = 3000  # issue 25: a plain question's request, at most
NOTES = [  # (scope, user, text): what a few weeks of taps leave remembered
    ("agent", "", "Answer in English unless the user writes in another language."),
    ("user", USER, "Lives in Berlin-Kreuzberg; cycles to work."),
    ("user", USER, "Vegetarian; partner is allergic to nuts."),
    ("user", USER, "Prefers temperatures in °C and times as 24-hour clock."),
    ("user", USER, "Weekly shop on Saturday mornings at the market."),
]
EARLIER = "What's the weather in Paris right now?"  # a place the fake Open-Meteo knows
EARLIER_ANSWER = "12 °C and cloudy in Paris, light wind from the west."
QUESTION = "Do I need an umbrella this afternoon?"
ANSWER = "Probably not: showers are unlikely before the evening."


def sent(value: Any) -> str:
    """``value`` serialised as the openai client sends it."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def chars(value: Any) -> int:
    """The characters ``value`` adds to the body as sent."""
    return len(sent(value))


def tokens(value: Any) -> float:
    return chars(value) / CHARS_PER_TOKEN


def text_tokens(value: str) -> int:
    return math.ceil(len(value) / CHARS_PER_TOKEN)


def rendered(tools: list[Body]) -> float:
    """The tools as the model reads them (OpenAI's cookbook counting, see the docstring)."""
    count = FUNC_END if tools else 0
    for tool in tools:
        description = str(tool.get("description") or "").removesuffix(".")
        count += FUNC_INIT + text_tokens(f"{tool['name']}:{description}")
        properties = (tool.get("parameters") or {}).get("properties") or {}
        count += PROP_INIT if properties else 0
        for key, schema in properties.items():
            count += PROP_KEY
            enum = [item for item in schema.get("enum") or [] if item is not None]
            if enum:
                count += ENUM_INIT + sum(ENUM_ITEM + text_tokens(str(item)) for item in enum)
            kind = schema.get("type", "")
            kind = "|".join(kind) if isinstance(kind, list) else str(kind)
            described = str(schema.get("description") or "").removesuffix(".")
            count += text_tokens(f"{key}:{kind}:{described}")
            nested = {k: v for k, v in schema.items() if k in ("items", "properties", "anyOf")}
            count += math.ceil(chars(nested) / CHARS_PER_TOKEN) if nested else 0
    return float(count)


def total(body: Body) -> int:
    """The whole body's estimate."""
    return chars(body) // CHARS_PER_TOKEN + 1


@dataclass(frozen=True)
class Breakdown:
    """A Responses API body split into what it carries, each part in estimated tokens."""

    instructions: float  # persona and the date line
    remembered: float  # the remembered section, preamble and markers
    window: float  # earlier items and the question
    tools: dict[str, float]  # name → its function tool entry
    envelope: float  # the rest
    total: int
    tools_rendered: float  # the tools as the model reads them (``rendered``)

    @property
    def tools_total(self) -> float:
        return sum(self.tools.values())

    @property
    def total_rendered(self) -> int:
        """The request with its tools counted as the model reads them."""
        return round(self.total - self.tools_total + self.tools_rendered)


def breakdown(body: Body) -> Breakdown:
    instructions = str(body.get("instructions", ""))
    start = instructions.find(PREAMBLE)
    remembered = ""
    if start >= 0:
        end = instructions.index(CLOSE, start) + len(CLOSE)
        remembered = instructions[start:end]
        instructions = instructions[:start] + instructions[end:]
    tools = {str(tool["name"]): tokens(tool) for tool in body.get("tools", [])}
    parts = tokens(instructions) + len(remembered) / CHARS_PER_TOKEN + tokens(body["input"])
    whole = total(body)
    return Breakdown(
        instructions=tokens(instructions),
        remembered=len(remembered) / CHARS_PER_TOKEN,
        window=tokens(body["input"]),
        tools=tools,
        envelope=whole - parts - sum(tools.values()),
        total=whole,
        tools_rendered=rendered(list(body.get("tools", []))),
    )


def environment(data_dir: Path, open_meteo: str) -> dict[str, str]:
    """What the in-process servers read (set it before ``shipped_agent``)."""
    return {
        "DATA_DIR": str(data_dir),
        "WEATHER_FORECAST_URL": f"{open_meteo}/v1/forecast",
        "WEATHER_GEOCODING_URL": f"{open_meteo}/v1/search",
    }


def answer(body: Body) -> Step:
    """The fake model: a weather call for the earlier question, else a text."""
    last = body["input"][-1]
    if last.get("type") == "function_call_output":
        output = str(last["output"])  # a failed call must not pass for a measured one
        return text(f"tool failed: {output}" if output.startswith('{"error"') else EARLIER_ANSWER)
    if last.get("content") == EARLIER:
        return calls(call("weather__get_current_weather", location="Paris"))
    return text(ANSWER)


async def remember(data_dir: Path) -> None:
    """The notes, as ``python -m mcp_memory import`` adds them."""
    store = MemoryStore(MemorySettings(data_dir=data_dir).memories_path)
    try:
        await store.load(AGENT, NOTES, 0.0)
    finally:
        await store.aclose()


@asynccontextmanager
async def shipped_agent(llm_url: str, data_dir: Path) -> AsyncIterator[App]:
    """The shipped fleet and registry, as ``make chat`` opens them, against ``llm_url``."""
    await remember(data_dir)
    settings = OrchestratorSettings(
        registry=REGISTRY,
        agents=FLEET,
        root=ROOT,
        openai_api_key=SecretStr("sk-request-size-not-a-key"),
        openai_base_url=llm_url,
        openai_model="gpt-5-mini",
        openai_api="responses",
        reasoning_effort=None,
        llm_timeout_s=30,
        tool_timeout_s=30,
    )
    async with open_app(settings, without=frozenset({"telegram-io"})) as app:
        yield app


async def plain_question(llm: FakeOpenAI, app: App) -> Body:
    """The request of a plain question after one earlier exchange in the same chat."""
    llm.default = answer
    for message, expected in ((EARLIER, EARLIER_ANSWER), (QUESTION, ANSWER)):
        reply = await app.dispatcher.on_text(TextContext(AGENT, USER, message, user=USER))
        if reply.text != expected:
            raise RuntimeError(f"unexpected reply to {message!r}: {reply.text[:300]!r}")
    return llm.requests[-1]
