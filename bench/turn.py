"""The orchestrator's own time per turn: everything but the model.

uv run python -m bench.turn [--iterations 200] [--warmup 20] [--rounds 10]

A zero-latency fake OpenAI (tests/fakes) answers each request at once, as a function
of it: a user message asking for the weather gets one call to
``weather__get_current_weather`` {"location": "Paris"}, any other user message a text,
and a tool's output a text. The weather and memory servers run (a) in this process
(``module:`` registry entries) and (b) as real HTTP servers in their own processes;
fake Open-Meteo is served in this process. Every turn goes through
``Dispatcher.on_text``, as a channel's message does. The agent's model is wrapped in a
proxy that times each ``respond()`` (the openai client, loopback HTTP and the fake's
answer), and per turn

    overhead = turn time - time inside respond()

which splits at the model calls into: before the first (mostly memory.load_window),
between them (the tool round) and after the last (mostly memory.append_items).

Each turn has a chat of its own, so the window is empty, except in the "20-item
window" rows: one chat, the memory window capped at 20 items (MEMORY_WINDOW_MAX_ITEMS),
full after the warm-up. Rounds interleave the scenarios, so machine noise spreads over
all of them; the figures are medians and 99th percentiles of the per-turn values.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import tempfile
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import yaml
from pydantic import SecretStr

from bench._fakes import Body, FakeOpenAI, FakeOpenMeteo, Step, call, calls, serving, text
from bench.hop import ROOT, free_port, http_server
from meshkit.credentials import token_digest
from meshkit.secret_files import CREDENTIALS, render_credentials
from orchestrator.app import App, llm_for, open_app
from orchestrator.config.fleet import Agent
from orchestrator.core.routes import TextContext
from orchestrator.llm.base import LLM, Item, LLMReply, ToolSpec, Writing
from orchestrator.settings import OrchestratorSettings

TOKEN = "bench-token-0123456789abcdef"
AGENT = "bench"
PERSONA = ROOT / "agents" / "clawdia"
WINDOW_ITEMS = 20
WEATHER_TOOL = "weather__get_current_weather"
TEXT_PROMPT = "Hello there!"
TOOL_PROMPT = "What is the weather in Paris right now?"
TEXT_ANSWER = "Hello! How can I help?"
TOOL_ANSWER = "It is mild in Paris."
GOAL_MS = {"in-process": 15.0, "HTTP": 30.0}  # overhead p50


def answer(body: Body) -> Step:
    """The fake model: a tool call for the weather question, a text for anything else."""
    last = body["input"][-1]
    if last.get("type") == "function_call_output":
        output = str(last["output"])
        # A failed call must not pass for a measured one: the reply check below fails.
        return text(f"tool failed: {output}" if output.startswith('{"error"') else TOOL_ANSWER)
    if last.get("content") == TOOL_PROMPT:
        return calls(call(WEATHER_TOOL, location="Paris"))
    return text(TEXT_ANSWER)


class TimedLLM:
    """The agent's model, recording (start ns, end ns, input items) for each respond()."""

    def __init__(self, inner: LLM) -> None:
        self._inner = inner
        self.spans: list[tuple[int, int, int]] = []

    @property
    def model(self) -> str:
        return self._inner.model

    async def respond(
        self,
        *,
        instructions: str,
        items: Sequence[Item],
        tools: Sequence[ToolSpec],
        writing: Writing | None = None,
    ) -> LLMReply:
        started = time.perf_counter_ns()
        try:
            return await self._inner.respond(
                instructions=instructions, items=items, tools=tools, writing=writing
            )
        finally:
            self.spans.append((started, time.perf_counter_ns(), len(items)))

    async def aclose(self) -> None:
        await self._inner.aclose()


@dataclass(frozen=True)
class Sample:
    """One turn, in milliseconds; before + tools + after = overhead = total - llm."""

    total: float
    llm: float
    before: float  # turn start → first respond(): window load, instructions, tool specs
    tools: float  # between respond() calls: the tool round
    after: float  # last respond() → reply: append to memory
    window: int  # history items sent with the user message

    @property
    def overhead(self) -> float:
        return self.total - self.llm


@dataclass
class Scenario:
    name: str
    transport: str  # a key of GOAL_MS
    app: App
    llm: TimedLLM
    prompt: str
    reply: str
    llm_calls: int
    chat: str | None  # one chat for every turn, or None: a fresh chat per turn
    samples: list[Sample] = field(default_factory=list)
    turns: int = 0

    async def turn(self) -> Sample:
        self.turns += 1
        chat = self.chat or f"{self.name}-{self.turns}"
        self.llm.spans.clear()
        started = time.perf_counter_ns()
        reply = await self.app.dispatcher.on_text(TextContext(AGENT, chat, self.prompt))
        ended = time.perf_counter_ns()
        spans = self.llm.spans
        if reply.text != self.reply or len(spans) != self.llm_calls:
            raise RuntimeError(
                f"{self.name}: {len(spans)} model calls, reply {reply.text[:300]!r}; "
                f"expected {self.llm_calls} and {self.reply!r}"
            )
        gaps = sum(spans[i][0] - spans[i - 1][1] for i in range(1, len(spans)))
        return Sample(
            total=(ended - started) / 1e6,
            llm=sum(end - start for start, end, _ in spans) / 1e6,
            before=(spans[0][0] - started) / 1e6,
            tools=gaps / 1e6,
            after=(ended - spans[-1][1]) / 1e6,
            window=spans[0][2] - 1,
        )

    def values(self, part: str) -> list[float]:
        return [float(getattr(sample, part)) for sample in self.samples]

    def p50(self, part: str) -> float:
        return statistics.median(self.values(part))

    def p99(self, part: str) -> float:
        return statistics.quantiles(self.values(part), n=100, method="inclusive")[98]

    def mean(self, part: str) -> float:
        return statistics.fmean(self.values(part))


def write_config(directory: Path, servers: dict[str, dict[str, object]]) -> tuple[Path, Path]:
    directory.mkdir(parents=True)
    registry, agents = directory / "servers.yaml", directory / "agents.yaml"
    registry.write_text(yaml.safe_dump({"servers": servers}))
    agent = {"name": "Bench", "persona": str(PERSONA), "servers": ["weather", "memory"]}
    agents.write_text(yaml.safe_dump({"agents": {AGENT: agent}}))
    return registry, agents


def settings_for(config: tuple[Path, Path], llm_url: str) -> OrchestratorSettings:
    # Every LLM field explicit, so no OPENAI_* variable of the environment changes the run.
    return OrchestratorSettings(
        registry=config[0],
        agents=config[1],
        openai_api_key=SecretStr("sk-bench"),
        openai_base_url=llm_url,
        openai_model="bench-model",
        openai_api="responses",
        reasoning_effort=None,
        mesh_credentials_file=config[0].parent / CREDENTIALS,  # read for auth: mesh only
        llm_timeout_s=30,
        tool_timeout_s=30,
        max_rounds=6,
    )


async def open_timed(stack: AsyncExitStack, settings: OrchestratorSettings) -> tuple[App, TimedLLM]:
    """An app whose agent's model is timed; every server must be up."""
    made: list[TimedLLM] = []

    def timed(agent: Agent, settings: OrchestratorSettings) -> LLM:
        made.append(TimedLLM(llm_for(agent, settings)))
        return made[-1]

    app = await stack.enter_async_context(open_app(settings, llm_factory=timed))
    down = [f"{s.name}: {s.error}" for s in app.registry.status() if not s.up]
    if down:
        raise RuntimeError(f"servers down: {down}")
    return app, made[0]


def scenarios_for(transport: str, app: App, llm: TimedLLM) -> list[Scenario]:
    return [
        Scenario(f"{transport}, text", transport, app, llm, TEXT_PROMPT, TEXT_ANSWER, 1, None),
        Scenario(f"{transport}, 1 tool", transport, app, llm, TOOL_PROMPT, TOOL_ANSWER, 2, None),
        Scenario(
            f"{transport}, text, {WINDOW_ITEMS}-item window",
            transport,
            app,
            llm,
            TEXT_PROMPT,
            TEXT_ANSWER,
            1,
            f"{transport}-history",
        ),
    ]


async def measure(scenarios: list[Scenario], *, iterations: int, warmup: int, rounds: int) -> None:
    for scenario in scenarios:
        # A history scenario's window is full after WINDOW_ITEMS / 2 text turns.
        for _ in range(max(warmup, WINDOW_ITEMS // 2 + 1) if scenario.chat else warmup):
            await scenario.turn()
    per_round = max(1, iterations // rounds)
    for _ in range(rounds):
        for scenario in scenarios:
            for _ in range(per_round):
                scenario.samples.append(await scenario.turn())


def print_tables(scenarios: list[Scenario]) -> None:
    width = max(len(s.name) for s in scenarios)
    ms = f"{'p50':>7} {'p99':>7}"
    rule = f"{'-' * width}-+-----+" + f"{'-' * 17}+" * 3 + "-" * 22

    def cells(s: Scenario, parts: Sequence[str]) -> str:
        return "".join(f"| {s.p50(p):7.2f} {s.p99(p):7.2f} " for p in parts)

    print(f"{'':<{width}} |     | {'turn':^15} | {'LLM':^15} | {'overhead':^15} |")
    print(f"{'scenario':<{width}} | win | {ms} | {ms} | {ms} | goal: overhead p50")
    print(rule)
    for s in scenarios:
        goal = GOAL_MS[s.transport]
        verdict = "met" if s.p50("overhead") < goal else "MISSED"
        print(
            f"{s.name:<{width}} | {s.p50('window'):3.0f} "
            + cells(s, ("total", "llm", "overhead"))
            + f"| < {goal:2.0f} ms: {verdict}"
        )
    print(
        "\nwhere the overhead goes: before the first model call (memory.load_window), "
        "between calls\n(the tool round: arguments, weather call, outputs), after the last "
        "(memory.append_items)\n"
    )
    print(f"{'':<{width}} |     | {'before':^15} | {'tool round':^15} | {'after':^15} |")
    print(f"{'scenario':<{width}} | win | {ms} | {ms} | {ms} | share of mean overhead")
    print(rule)
    for s in scenarios:
        total = s.mean("overhead")
        shares = " / ".join(f"{100 * s.mean(p) / total:.0f}" for p in ("before", "tools", "after"))
        print(
            f"{s.name:<{width}} | {s.p50('window'):3.0f} "
            + cells(s, ("before", "tools", "after"))
            + f"| {shares} %"
        )


async def run(iterations: int, warmup: int, rounds: int) -> None:
    fake = FakeOpenAI()
    fake.default = answer
    async with AsyncExitStack() as stack:
        llm_url = await stack.enter_async_context(fake.serve())
        open_meteo = await stack.enter_async_context(serving(FakeOpenMeteo().app))
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-turn-")))
        # The in-process servers read their settings from the environment; children inherit it.
        os.environ.update(
            {
                "WEATHER_FORECAST_URL": f"{open_meteo}/v1/forecast",
                "WEATHER_GEOCODING_URL": f"{open_meteo}/v1/search",
                "MEMORY_WINDOW_MAX_ITEMS": str(WINDOW_ITEMS),
                "DATA_DIR": str(tmp / "in-process-data"),
            }
        )
        ports = {"weather": free_port(), "memory": free_port()}
        async with anyio.create_task_group() as starting:  # side by side: imports take seconds
            for name, port in ports.items():
                env = {
                    "MESH_TOKEN_SHA256": token_digest(f"{TOKEN}-{name}"),
                    "MCP_PORT": str(port),
                    "DATA_DIR": str(tmp / "http-data"),
                }
                health = f"http://127.0.0.1:{port}/health"
                starting.start_soon(
                    stack.enter_async_context, http_server([f"mcp_{name}"], health, env)
                )

        in_process = write_config(
            tmp / "in-process" / "config",
            {
                "weather": {"module": "mcp_weather.server:build_server"},
                "memory": {
                    "module": "mcp_memory.server:build_server",
                    "role": "memory",
                    "proposes": True,
                },
            },
        )
        over_http = write_config(
            tmp / "http" / "config",
            {
                name: {"url": f"http://127.0.0.1:{port}/mcp", "auth": "mesh"}
                | ({"role": "memory", "proposes": True} if name == "memory" else {})
                for name, port in ports.items()
            },
        )
        (over_http[0].parent / CREDENTIALS).write_text(
            render_credentials({name: f"{TOKEN}-{name}" for name in ports})
        )
        scenarios: list[Scenario] = []
        for transport, config in (("in-process", in_process), ("HTTP", over_http)):
            app, llm = await open_timed(stack, settings_for(config, llm_url))
            scenarios += scenarios_for(transport, app, llm)

        began = time.perf_counter()
        await measure(scenarios, iterations=iterations, warmup=warmup, rounds=rounds)
        elapsed = time.perf_counter() - began

        turns = len(scenarios[0].samples)
        print(
            f"orchestrator time per turn, zero-latency fake LLM: {turns} turns per scenario "
            f"after {warmup} warm-up, {rounds} interleaved rounds, {elapsed:.1f} s "
            f"({len(fake.requests)} model requests)\n"
        )
        print_tables(scenarios)
        print(
            "\nLLM = inside respond(): openai client, loopback HTTP, the fake's answer "
            "(served in this process). overhead = turn - LLM, per turn."
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.turn",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--iterations", type=int, default=200, help="timed turns per scenario")
    parser.add_argument("--warmup", type=int, default=20, help="untimed turns per scenario first")
    parser.add_argument("--rounds", type=int, default=10, help="interleaved rounds")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    anyio.run(run, args.iterations, args.warmup, args.rounds)


if __name__ == "__main__":
    main()
