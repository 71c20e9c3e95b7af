"""An agent with its model and limits, ready to run turns: what the turn engine, the routes,
the summaries and the channels share (apart from the turn engine, so none of them imports it
for this)."""

from __future__ import annotations

from dataclasses import dataclass, field

from orchestrator.config.fleet import Agent
from orchestrator.llm.base import LLM


@dataclass(frozen=True)
class TurnLimits:
    max_rounds: int = 6  # model requests (each retried by the LLM layer's own policy)
    max_tool_calls: int = 24
    timeout_s: float = 180.0


@dataclass(frozen=True)
class AgentRuntime:
    """An agent with its model and limits, ready to run turns."""

    agent: Agent
    llm: LLM
    limits: TurnLimits = field(default_factory=TurnLimits)

    @property
    def id(self) -> str:
        return self.agent.id
