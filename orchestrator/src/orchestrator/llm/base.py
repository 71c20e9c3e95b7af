"""The LLM behind a small protocol: ``respond(instructions, items, tools) -> LLMReply``.

Conversation items are Responses API input items (plain dicts), the one format
stored in memory and sent to any backend:

    {"type": "message", "role": "user" | "assistant", "content": "<text>"}
    {"type": "function_call", "call_id": "...", "name": "server__tool", "arguments": "<json>"}
    {"type": "function_call_output", "call_id": "...", "output": "<string>"}
    {"type": "reasoning", "id": "...", "summary": [...], "encrypted_content": "..."}  (in a turn)

Implementations translate to and from their wire format (Responses API, Chat Completions).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

Item = dict[str, Any]


@dataclass(frozen=True)
class ToolSpec:
    """A function tool as the model sees it."""

    name: str
    description: str
    parameters: dict[str, Any]
    strict: bool


@dataclass(frozen=True)
class FunctionCall:
    call_id: str
    name: str
    arguments: str  # JSON text, exactly as the model wrote it


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens
        )


@dataclass(frozen=True)
class LLMReply:
    """One model response.

    ``items`` are the response's output as input items, in order (reasoning,
    assistant messages, function calls), ready to be appended to the history.
    ``calls`` are the function calls among them; ``text`` the assistant text.
    """

    items: list[Item]
    calls: list[FunctionCall]
    text: str
    usage: Usage = field(default_factory=Usage)


class LLM(Protocol):
    """What the turn needs from a model. Errors are ``orchestrator.llm.errors.LLMError``s."""

    @property
    def model(self) -> str: ...

    async def respond(
        self, *, instructions: str, items: Sequence[Item], tools: Sequence[ToolSpec]
    ) -> LLMReply: ...

    async def aclose(self) -> None:
        """Release the HTTP client."""
