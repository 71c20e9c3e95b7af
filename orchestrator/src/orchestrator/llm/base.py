"""The LLM behind a small protocol: ``respond(instructions, items, tools) -> LLMReply``.

Conversation items are Responses API input items (plain dicts), the one format
stored in memory and sent to any backend:

    {"type": "message", "role": "user" | "assistant", "content": "<text>"}
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "..."},
        {"type": "input_image", "image_url": "data:image/jpeg;base64,...", "detail": "auto"}]}
        (a photo: in the turn it came in only; what is stored describes it in words)
    {"type": "function_call", "call_id": "...", "name": "server__tool", "arguments": "<json>"}
    {"type": "function_call_output", "call_id": "...", "output": "<string>"}
    {"type": "reasoning", "id": "...", "summary": [...], "encrypted_content": "..."}  (in a turn)

Implementations translate to and from their wire format (Responses API, Chat Completions).
Given ``writing``, a call streams: it is told the reply's text so far each time the model
has written more (from "" again if the call is tried again), and returns the same reply.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

Item = dict[str, Any]
# Told the text a streamed model call has written so far (each attempt starts from "").
Writing = Callable[[str], Awaitable[None]]


@dataclass(frozen=True)
class ToolSpec:
    """A function tool as the model sees it."""

    name: str
    description: str
    parameters: dict[str, Any]
    strict: bool


@dataclass(frozen=True)
class Image:
    """A picture for the model to look at: its bytes, base64, and their type."""

    mime_type: str
    data: str  # base64

    def part(self) -> Item:
        """The image as a part of a user message's content."""
        url = f"data:{self.mime_type};base64,{self.data}"
        return {"type": "input_image", "image_url": url, "detail": "auto"}


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
    audio_s: float = 0.0  # seconds of audio heard (a transcription: priced per minute)

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
            self.audio_s + other.audio_s,
        )


@dataclass(frozen=True)
class Heard:
    """What a transcription heard: the words, and what it used (``audio_s`` its length)."""

    text: str
    usage: Usage


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
        self,
        *,
        instructions: str,
        items: Sequence[Item],
        tools: Sequence[ToolSpec],
        writing: Writing | None = None,
    ) -> LLMReply:
        """The model's reply; with ``writing``, streamed (the same reply, told as written)."""
        ...

    async def aclose(self) -> None:
        """Release the HTTP client."""


class Transcriber(Protocol):
    """Speech to text. Errors are ``orchestrator.llm.errors.LLMError``s."""

    @property
    def model(self) -> str: ...

    async def transcribe(
        self, audio: bytes, *, file_name: str, mime_type: str, seconds: float
    ) -> Heard:
        """The words of ``audio`` (``seconds`` long, as its sender said)."""
        ...

    async def aclose(self) -> None: ...
