"""The clarify tools: internal, for the orchestrator that asks the user on the model's behalf."""

from __future__ import annotations

from typing import Annotated, Any

from fastmcp import FastMCP
from pydantic import Field

from mcp_memory.questions import MAX_CHOICES, QuestionStore
from meshkit.params import Agent, ChatId, MessageKey
from meshkit.tool_classes import internal
from meshkit.wire.memory import Question, QuestionLookup

QuestionId = Annotated[str, Field(pattern=r"^q_[0-9a-f]{12}$", max_length=14)]


def add_question_tools(mcp: FastMCP[Any], questions: QuestionStore) -> None:
    @mcp.tool(**internal(title="Ask a question"))
    async def ask_question(  # noqa: PLR0917 (a tool's parameters are its schema)
        agent: Agent,
        chat_id: ChatId,
        question: Annotated[str, Field(min_length=1, max_length=1000)],
        choices: Annotated[
            list[Annotated[str, Field(min_length=1, max_length=100)]],
            Field(max_length=MAX_CHOICES, description="Empty for an open question"),
        ],
        ttl_s: Annotated[float, Field(gt=0, le=7 * 24 * 3600)],
        message_key: MessageKey | None = None,
    ) -> Question:
        """Record a question the model asks the chat, before its message is sent (under
        ``message_key``); one still waiting there is ended."""
        return await questions.ask(agent, chat_id, question, choices, ttl_s, message_key)

    @mcp.tool(**internal(title="Choose an answer"))
    async def choose_answer(  # noqa: PLR0917 (a tool's parameters are its schema)
        question_id: QuestionId,
        agent: Agent,
        chat_id: ChatId,
        message_key: MessageKey,
        message_id: Annotated[
            str,
            Field(
                min_length=1,
                max_length=100,
                description="The tapped message: a typed answer is drawn there later",
            ),
        ],
        choice: Annotated[
            int | None,
            Field(ge=0, lt=MAX_CHOICES, description="The tapped choice; null: Other (type)"),
        ],
        tap_id: Annotated[
            str | None,
            Field(
                max_length=100,
                description="The tap's own id (e.g. its Telegram update): the same tap again "
                "after a crash is still the answer (changed: true), another one is not",
            ),
        ] = None,
    ) -> QuestionLookup:
        """A tap on the question's buttons. The question as it stands after it: answered (a
        choice), typing (Other: the next text answers), or unchanged when it was no longer
        open (answered before, expired); null when it is not in the message sent under
        ``message_key`` in this chat."""
        changed, found = await questions.choose(
            question_id, agent, chat_id, message_key, message_id, choice, tap_id
        )
        return QuestionLookup(question=found, changed=changed)
