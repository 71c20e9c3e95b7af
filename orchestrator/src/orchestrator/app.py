"""Assembly: configuration → registry → agents with their models → dispatcher.

The dispatcher is built with everything its routes need (the reminders' taps, ``/jobs``,
``/usage``, the usage's, the scheduler's and the Telegram inbox's lines in ``/status``):
nothing is added to it later.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime

import anyio

from meshkit.exception_groups import as_itself
from meshkit.yaml_config import ConfigError
from orchestrator.channels.telegram import inbox_status
from orchestrator.config.fleet import Agent, load_fleet
from orchestrator.config.prices import load_prices
from orchestrator.config.registry import Role, load_registry, mesh_credentials
from orchestrator.core.allowance_limits import limits as allowance_limits
from orchestrator.core.conversation import Conversation
from orchestrator.core.dispatch import Dispatcher
from orchestrator.core.proactive import Proactive
from orchestrator.core.reminders import JOBS, Reminders
from orchestrator.core.routes import Command
from orchestrator.core.runtime import AgentRuntime, TurnLimits
from orchestrator.core.turn import TurnEngine
from orchestrator.core.usage import Meter, Metered
from orchestrator.core.usage_book import UsageBook
from orchestrator.core.usage_view import USAGE, UsageView
from orchestrator.llm.base import LLM, Transcriber
from orchestrator.llm.openai_api import build_llm, build_transcriber
from orchestrator.mesh.registry import Registry
from orchestrator.mesh.transports import ModuleNotLoadable
from orchestrator.settings import OrchestratorSettings

LLMFactory = Callable[[Agent, OrchestratorSettings], LLM]


@dataclass(frozen=True)
class App:
    settings: OrchestratorSettings
    registry: Registry
    dispatcher: Dispatcher
    engine: TurnEngine
    proactive: Proactive  # briefings, scheduled prompts, reminders (with role: scheduler)
    transcriber: Transcriber | None = None  # voice notes (None: no key and no server)


def llm_for(agent: Agent, settings: OrchestratorSettings) -> LLM:
    """The agent's model: its own choices in agents.yaml, else the environment defaults."""
    entry = agent.entry
    key = settings.api_key.get_secret_value() if settings.api_key else None
    return build_llm(
        entry.api or settings.openai_api,
        api_key=key,
        base_url=settings.openai_base_url,
        model=entry.model or settings.openai_model,
        reasoning_effort=entry.reasoning_effort or settings.reasoning_effort,
        timeout_s=settings.llm_timeout_s,
    )


def transcriber_for(settings: OrchestratorSettings) -> Transcriber | None:
    """Speech to text, where the model's server (or TRANSCRIPTION_BASE_URL's) is; None
    without a key or a server to ask."""
    base_url = settings.transcription_base_url or settings.openai_base_url
    key = settings.transcription_key
    if key is None and base_url is None:
        return None
    return build_transcriber(
        api_key=key.get_secret_value() if key else None,
        base_url=base_url,
        model=settings.transcription_model,
        timeout_s=settings.llm_timeout_s,
    )


def limits(agent: Agent, settings: OrchestratorSettings) -> TurnLimits:
    """The agent's turn bounds: its own in agents.yaml, else the environment's."""
    return TurnLimits(
        max_rounds=agent.entry.max_rounds or settings.max_rounds,
        max_tool_calls=agent.entry.max_tool_calls or settings.max_tool_calls,
        timeout_s=settings.turn_timeout_s,
    )


def metered(
    settings: OrchestratorSettings,
    registry: Registry,
    runtimes: Mapping[str, AgentRuntime],
    clock: Callable[[], float],
) -> Meter:
    """The meter of the fleet. A money allowance needs its model's price: on a hosted API
    (no OPENAI_BASE_URL) an unpriced model is a ConfigError naming the agent's key (on a
    local server it costs 0)."""
    prices = load_prices(settings.agents)
    local = bool(settings.openai_base_url)
    for agent_id, runtime in runtimes.items():
        allowance = runtime.agent.entry.allowance
        money = [limit for limit in allowance_limits(allowance) if limit.amount.unit == "money"]
        model = runtime.llm.model
        if money and not local and prices.price(model) is None:
            raise ConfigError(
                f"{settings.agents}: agents.{agent_id}.allowance is in money but model "
                f"{model!r} has no price; add it under prices.models (per million tokens: "
                "input, output), or give the allowance in tokens ('200k tokens')"
            )
    agents = {
        agent_id: Metered(runtime.agent.entry.allowance, runtime.agent.entry.timezone)
        for agent_id, runtime in runtimes.items()
    }
    return Meter(registry, prices, agents, local=local, clock=clock)


@asynccontextmanager
async def open_app(
    settings: OrchestratorSettings,
    *,
    llm_factory: LLMFactory = llm_for,
    without: frozenset[Role] = frozenset(),
    clock: Callable[[], float] = time.time,
) -> AsyncIterator[App]:
    """Load the configuration (ConfigError on mistakes) and connect every server but
    those whose role is in ``without`` (the console does not poll Telegram). ``clock``
    (Unix seconds): the time allowances are counted in."""
    entries = {
        name: entry
        for name, entry in load_registry(settings.registry).items()
        if entry.role is None or entry.role not in without
    }
    fleet = load_fleet(settings.agents, entries, root=settings.root)
    credentials = mesh_credentials(entries, settings.registry, settings.mesh_credentials_file)
    try:
        registry = Registry(
            entries, credentials=credentials, default_timeout_s=settings.tool_timeout_s
        )
    except ModuleNotLoadable as error:
        raise ConfigError(
            f"{settings.registry}: {error}; check the module path and that its package is installed"
        ) from None
    runtimes = {
        agent_id: AgentRuntime(agent, llm_factory(agent, settings), limits(agent, settings))
        for agent_id, agent in fleet.items()
    }
    try:
        meter = metered(settings, registry, runtimes, clock)
    except ConfigError:
        for runtime in runtimes.values():
            await runtime.llm.aclose()
        raise
    transcriber = None if without else transcriber_for(settings)  # Telegram's voice notes
    async with registry.running():
        conversation = Conversation(registry)
        engine = TurnEngine(registry, now=lambda: datetime.fromtimestamp(clock(), UTC), meter=meter)
        try:
            async with as_itself(), anyio.create_task_group() as background:
                reminders = Reminders(registry, runtimes)
                scheduler = reminders.server is not None
                book = UsageBook(registry)
                usage = (
                    UsageView(book, runtimes, meter.prices.currency, clock) if book.server else None
                )
                dispatcher = Dispatcher(
                    runtimes, engine, registry, conversation,
                    reminder_taps=reminders.tap,  # rm: refused without a scheduler
                    more_commands={
                        **({"/jobs": Command(JOBS, reminders.jobs)} if scheduler else {}),
                        **({"/usage": Command(USAGE, usage.command)} if usage else {}),
                    },
                    status_lines=[
                        *([usage.status_lines] if usage else []),
                        *([reminders.status_lines] if scheduler else []),
                        *([inbox_status(registry)] if registry.server_for("telegram-io") else []),
                    ],
                    clarify_ttl_s=settings.clarify_ttl_s, background=background.start_soon,
                )  # fmt: skip
                proactive = Proactive(registry, dispatcher)
                try:
                    yield App(settings, registry, dispatcher, engine, proactive, transcriber)
                finally:
                    background.cancel_scope.cancel()  # summaries under way: not worth a wait
        finally:
            for runtime in runtimes.values():
                await runtime.llm.aclose()
            if transcriber is not None:
                await transcriber.aclose()
