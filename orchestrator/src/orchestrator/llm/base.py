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
    """The tokens of one or more model calls, as the API reported them.

    ``cached_input_tokens`` are part of ``input_tokens`` and ``reasoning_tokens`` part of
    ``output_tokens`` (both APIs count them so). ``unknown`` counts the calls whose response
    reported no usage: their tokens are not in the sums, never guessed.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    reasoning_tokens: int = 0
    unknown: int = 0

    @classmethod
    def not_reported(cls) -> Usage:
        """One call whose response said nothing of its usage."""
        return cls(unknown=1)

    @property
    def known(self) -> bool:
        return self.unknown == 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cached_input_tokens + other.cached_input_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
            self.unknown + other.unknown,
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
    usage: Usage = field(default_factory=Usage.not_reported)


class LLM(Protocol):
    """What the turn needs from a model. Errors are ``orchestrator.llm.errors.LLMError``s."""

    @property
    def model(self) -> str: ...

    async def respond(
        self, *, instructions: str, items: Sequence[Item], tools: Sequence[ToolSpec]
    ) -> LLMReply: ...

    async def aclose(self) -> None:
        """Release the HTTP client."""
