"""A turn's context: everything the orchestrator reads from memory for a turn, in one call.

    turn_context(agent, chat_id, user, text?, summarize_every?)
        ─► the text answers the chat's waiting question (if one waits for text: its own
           transaction, as a typed answer always was)
        ─► the window with its summary, and how many items out of it wait for a summary
        ─► the agent's rules and the user's notes (as list_memories gives them)

Each of these was a call of its own, and each call a round trip the reply waited for. The
answer is written before the window is read; a caller that passes no text (a scheduled
prompt, which is not the user's answer) answers nothing.
"""

from __future__ import annotations

from mcp_memory.memories import MemoryService
from mcp_memory.questions import QuestionStore
from mcp_memory.service import ConversationService
from meshkit.wire.memory import TurnContext


class TurnContexts:
    def __init__(
        self, conversation: ConversationService, memories: MemoryService, questions: QuestionStore
    ) -> None:
        self._conversation = conversation
        self._memories = memories
        self._questions = questions

    async def read(
        self,
        agent: str,
        chat_id: str,
        user: str,
        text: str | None = None,
        summarize_every: int | None = None,
    ) -> TurnContext:
        answered = await self._questions.answer_text(agent, chat_id, text) if text else None
        view = await self._conversation.view(agent, chat_id)
        memories = await self._memories.list(agent, user)
        return TurnContext(
            window=view.window,
            memories=memories.memories,
            answered=answered,
            summary_due=summarize_every is not None and view.unsummarized >= summarize_every,
        )
