"""clarify: the tool the orchestrator gives every agent, to ask instead of guessing.

    model calls clarify(question, choices?) ─► the turn ends with the question
        ─► memory.ask_question (stored, bound to the key its message is sent under: its
            buttons act in that message only; a restart in between changes nothing)
        ─► sent with a button per choice and "✏️ Other (type answer)" (none: open question)
    tap on a choice ─► memory.choose_answer ─► the message shows the answer
        ─► the choice starts the next turn, with the question in the window
        (the tap handed over again after a crash, same tap_id: still the answer, the turn
        redone and stored once; another tap: "Already answered.")
    tap on Other, or an open question ─► the next text is the answer (memory.turn_context,
        as the turn that text starts reads its context) ─► the message shows the answer

An unanswered question expires (``CLARIFY_TTL_S``): its buttons then answer that it
expired, and a later text is an ordinary message. The memory server is the registry's
server with ``role: memory``; without it the model gets an error and goes on.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from meshkit.wire.memory import Question, QuestionLookup
from orchestrator.core.callbacks import ChoiceTap, encode_choice
from orchestrator.core.replies import Button, Reply
from orchestrator.llm.base import FunctionCall, ToolSpec
from orchestrator.mesh.registry import Registry
from orchestrator.mesh.roles import RoleClient

if TYPE_CHECKING:  # routes imports the turn, which imports this
    from orchestrator.core.routes import TapContext

logger = logging.getLogger(__name__)

NAME = "clarify"
MAX_CHOICES = 6
MAX_CHOICE_CHARS = 60  # a button's label
OTHER = "✏️ Other (type answer)"
EXPIRED = "This question has expired: just tell me again what you need."
ANSWERED = "Already answered."
TYPE_IT = "Type your answer."
ASKED_OUTPUT = (
    "The question is shown to the user; their answer will be the next user message. "
    "Say nothing more now."
)
SPEC = ToolSpec(
    NAME,
    "Ask the user one short question instead of guessing when a wrong guess would matter. "
    "Your turn ends; the answer is the next user message.",
    {
        "type": "object",
        "properties": {
            "question": {"type": "string"},
            "choices": {
                "type": ["array", "null"],
                "items": {"type": "string"},
                "description": "Up to 6 likely answers, a few words each (the user may type "
                "another); null: an open question",
            },
        },
        "required": ["question", "choices"],
        "additionalProperties": False,
    },
    strict=True,
)


@dataclass(frozen=True)
class Asked:
    """What the model asked."""

    question: str
    choices: list[str]


def parse(call: FunctionCall) -> Asked:
    """The question a clarify call asks; ValueError with words for the model."""
    try:
        value = json.loads(call.arguments or "{}")
    except json.JSONDecodeError:
        raise ValueError("clarify: the arguments are not valid JSON") from None
    question = value.get("question") if isinstance(value, dict) else None
    if not isinstance(question, str) or not question.strip():
        raise ValueError("clarify needs a question")
    raw = value.get("choices") or []
    if not isinstance(raw, list) or not all(isinstance(c, str) for c in raw):
        raise ValueError("clarify: choices must be a list of strings")
    choices = list(dict.fromkeys(" ".join(c.split()) for c in raw if c.strip()))
    if len(choices) > MAX_CHOICES:
        raise ValueError(f"clarify takes at most {MAX_CHOICES} choices")
    if any(len(c) > MAX_CHOICE_CHARS for c in choices):
        raise ValueError(f"clarify: keep each choice under {MAX_CHOICE_CHARS} characters")
    return Asked(question.strip()[:1000], choices)


def render(question: Question) -> Reply:
    """The question's message: the question and, while it is open, its buttons."""
    text = f"❓ {question.question}"
    if question.state == "answered":
        return Reply(f"{text}\n→ {question.answer}")
    if question.state == "expired":
        return Reply(f"{text}\n⌛ expired")
    if question.state == "typing":
        return Reply(f"{text}\n✏️ (type your answer)")
    rows = [
        [Button(choice, encode_choice(ChoiceTap(question.id, n)))]
        for n, choice in enumerate(question.choices)
    ]
    if rows:
        rows.append([Button(OTHER, encode_choice(ChoiceTap(question.id, None)))])
    return Reply(text, rows)


class Questions:
    """The questions, kept by the memory server; no answer from it is None, and logged."""

    def __init__(self, registry: Registry, ttl_s: float) -> None:
        self._memory = RoleClient(registry, "memory")
        self._ttl_s = ttl_s

    async def ask(self, agent: str, chat_id: str, asked: Asked, key: str | None) -> Question | None:
        """Store the question, bound to ``key``, the key its message is sent under."""
        arguments = {
            "agent": agent, "chat_id": chat_id, "question": asked.question,
            "choices": asked.choices, "ttl_s": self._ttl_s, "message_key": key,
        }  # fmt: skip
        return await self._memory.call("ask_question", arguments, Question)

    async def choose(self, tap: TapContext, choice: ChoiceTap) -> QuestionLookup | None:
        arguments = {
            "question_id": choice.question_id, "agent": tap.agent, "chat_id": tap.chat,
            "message_key": tap.key, "message_id": tap.message, "choice": choice.choice,
            "tap_id": tap.tap_id,
        }  # fmt: skip
        return await self._memory.call("choose_answer", arguments, QuestionLookup)
