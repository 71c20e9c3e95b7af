"""An in-process clawdia for tests: real servers (weather, memory, toys) in embedded mode,
fake OpenAI and fake Open-Meteo over real HTTP. Shared by the orchestrator tests and benches."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fakes.responses_api import FakeOpenAI, Reply, text
from orchestrator.app import App, llm_for, open_app
from orchestrator.channels.console import Console
from orchestrator.config.fleet import Agent
from orchestrator.core.replies import Reply as ChatReply
from orchestrator.core.routes import Deliver, TapContext, TextContext
from orchestrator.llm.base import LLM
from orchestrator.llm.openai_api import build_llm
from orchestrator.llm.retry import RetryPolicy
from orchestrator.settings import OrchestratorSettings

ROOT = Path(__file__).resolve().parents[2]
API_KEY = "sk-test-4f9a2c1e-not-a-real-key"
Body = dict[str, Any]


@dataclass
class World:
    llm: FakeOpenAI
    settings: OrchestratorSettings
    data_dir: Path

    def requested_tool_names(self) -> set[str]:
        return {
            tool.get("name") or tool["function"]["name"]  # Responses, or Chat Completions
            for request in self.llm.requests
            for tool in request.get("tools", [])
        }


def write_config(
    tmp_path: Path, *, api: str = "responses", max_rounds: int = 3
) -> tuple[Path, Path]:
    config = tmp_path / "config"
    config.mkdir(exist_ok=True)
    registry = config / "servers.yaml"
    registry.write_text(
        "servers:\n"
        "  weather: {module: 'mcp_weather.server:build_server'}\n"
        "  memory: {module: 'fakes.clocked:memory', role: memory, proposes: true}\n"
        "  toys: {module: 'fakes.mcp_toys:build_toys', timeout_s: 3, proposes: true}\n"
        "  shopping: {module: 'mcp_shopping.server:build_server', proposes: true}\n"
        "  pending-actions: {module: 'fakes.clocked:pending_actions', role: pending-actions}\n"
    )
    agents = config / "agents.yaml"
    agents.write_text(
        "agents:\n"
        "  clawdia:\n"
        "    name: Clawdia\n"
        f"    persona: {ROOT / 'agents' / 'clawdia'}\n"
        "    servers: [weather, memory, toys, shopping]\n"
        "    timezone: Europe/Paris\n"
        f"    api: {api}\n"
        f"    max_rounds: {max_rounds}\n"
    )
    return registry, agents


def write_telegram_fleet(
    tmp_path: Path,
    env: dict[str, str],
    *,
    servers: dict[str, str],
    tools: list[str],
    prompts: dict[str, str],
    user: int,
    home: str | None = None,
) -> tuple[Path, Path, dict[str, str]]:
    """Clawdia on Telegram (bot token in ``CLAWDIA_BOT_TOKEN``, ``user`` allowed) with the
    registry's ``servers`` (name → entry), the model's ``tools`` servers and scheduled
    ``prompts`` (name → text, all at 18:00 on Sundays), written under ``tmp_path``: the
    registry, the fleet, and the environment to run it with (``env`` added)."""
    config = tmp_path / "config"
    config.mkdir(exist_ok=True)
    registry, agents, schedule = (
        config / f for f in ("servers.yaml", "agents.yaml", "schedule.yaml")
    )
    registry.write_text(
        "servers:\n" + "".join(f"  {name}: {entry}\n" for name, entry in servers.items())
    )
    agents.write_text(
        "agents:\n  clawdia:\n    name: Clawdia\n"
        f"    persona: {ROOT / 'agents' / 'clawdia'}\n"
        "    bot_token_env: CLAWDIA_BOT_TOKEN\n"
        f"    allowed_user_ids: ['{user}']\n"
        f"    servers: [{', '.join(tools)}]\n"
        "    timezone: Europe/Paris\n" + (f"    home: {home}\n" if home else "")
    )
    schedule.write_text(
        "agents:\n  clawdia:\n    prompts:\n"
        + "".join(
            f'      - {{name: {name}, cron: "0 18 * * sun", prompt: {prompt}}}\n'
            for name, prompt in prompts.items()
        )
    )
    environment = {
        "DATA_DIR": str(tmp_path / "data"),
        "CLAWMESH_AGENTS": str(agents),
        "CLAWMESH_SCHEDULE": str(schedule),
        "TELEGRAM_PACE_S": "0",
        **env,
    }
    return registry, agents, environment


@asynccontextmanager
async def clawdia(
    world: World, *, sleeps: list[float] | None = None, llm_timeout_s: float | None = None
) -> AsyncIterator[App]:
    """The app, with LLM retries that record their waits instead of sleeping."""
    waits = sleeps if sleeps is not None else []

    async def no_sleep(seconds: float) -> None:
        waits.append(seconds)

    def factory(agent: Agent, settings: OrchestratorSettings) -> LLM:
        base = llm_for(agent, settings)
        return build_llm(
            agent.entry.api or "responses",
            api_key=API_KEY,
            base_url=settings.openai_base_url,
            model=base.model,
            reasoning_effort=None,
            timeout_s=llm_timeout_s or settings.llm_timeout_s,
            retry=RetryPolicy(sleep=no_sleep),
        )

    async with open_app(world.settings, llm_factory=factory) as app:
        yield app


async def say(app: App, message: str, chat: str = "chat-1") -> str:
    return (await app.dispatcher.on_text(TextContext("clawdia", chat, message, user=chat))).text


async def ask_in(app: App, chat: str, shown_in: str, message: str) -> ChatReply:
    """Clawdia's answer to ``message`` in the private chat ``chat``, its buttons shown in
    the message ``shown_in``."""

    async def deliver(reply: ChatReply) -> str:
        return shown_in

    return await app.dispatcher.on_text(
        TextContext("clawdia", chat, message, user=chat, deliver=Deliver(shown_in, deliver))
    )


async def tap_in(app: App, chat: str, shown_in: str, reply: ChatReply, label: str) -> ChatReply:
    """Tap the button of ``reply`` whose label holds ``label``, in the private chat ``chat``
    where ``reply`` is the message ``shown_in``; the message as the tap edits it (once)."""
    [data] = [b.data for row in reply.buttons for b in row if label in b.label]
    edits: list[ChatReply] = []

    async def answer(_: str) -> None:
        return None

    async def edit(new: ChatReply) -> None:
        edits.append(new)

    await app.dispatcher.on_callback(
        TapContext("clawdia", chat, chat, shown_in, data, answer, edit, key=shown_in)
    )
    [edited] = edits
    return edited


def inputs(body: Body) -> list[Body]:
    return list(body["input"])


def last_output(body: Body) -> Any:
    outputs = [i for i in body["input"] if i.get("type") == "function_call_output"]
    return json.loads(outputs[-1]["output"])


def answer_from_output(render: Callable[[Any], str]) -> Callable[[Body], Reply]:
    return lambda body: text(render(last_output(body)))


def recording_console(app: App, shown: list[tuple[str, str]]) -> Console:
    """Clawdia's console, its lines and its "thinking…" status (cleared: "") kept in ``shown``
    in the order they came, as ("line", text) and ("status", text)."""
    return Console(
        app.dispatcher,
        "clawdia",
        write=lambda line: shown.append(("line", line)),
        transient=lambda status: shown.append(("status", status)),
        color=False,
    )
