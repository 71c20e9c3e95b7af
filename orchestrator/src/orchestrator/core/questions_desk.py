"""The clarify questions on the chat side: ask, take a tap, take a typed answer.

See ``clarify`` for the flow. The question's message is redrawn as it changes: with
the answer, "type your answer" after Other, or "expired". Memory trouble never breaks
a turn: a question that cannot be stored is sent as plain text (its answer then comes
as an ordinary message, with the question in the window all the same).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any

from meshkit.wire.memory import Question
from orchestrator.core.actions import NO_LONGER_ACTIVE, UNAVAILABLE
from orchestrator.core.callbacks import decode_choice
from orchestrator.core.clarify import ANSWERED, EXPIRED, TYPE_IT, Asked, Questions, render
from orchestrator.core.replies import Reply
from orchestrator.core.routes import Deliver, TapContext

logger = logging.getLogger(__name__)

# Redraws message ``message_id`` of the chat (a question, once answered by text).
EditMessage = Callable[[str, Reply], Coroutine[Any, Any, None]]


class QuestionDesk:
    def __init__(self, questions: Questions) -> None:
        self._questions = questions

    async def ask(self, agent: str, chat_id: str, asked: Asked, deliver: Deliver | None) -> Reply:
        """Store the question, send it with its buttons, record the message it is in."""
        question = await self._questions.ask(agent, chat_id, asked)
        if question is None:
            listed = "".join(f"\n• {choice}" for choice in asked.choices)
            reply = Reply(f"❓ {asked.question}{listed}")
            if deliver is not None:
                await deliver(reply)
            return reply
        reply = render(question)
        if deliver is not None:
            message_id = await deliver(reply)
            if message_id is not None:
                await self._questions.shown(question, message_id)
            else:
                logger.warning("question %s: sent, but its message id is unknown", question.id)
        return reply

    async def tap(self, tap: TapContext) -> Question | None:  # noqa: PLR0911 (one return a case)
        """A tap on a question's button (``cl``): the question, answered by it (its answer
        starts the next turn), or None (Other tapped, expired, answered before, not this
        chat's, forged). ``tap.tap_id`` names the tap: handed over again after a crash, it
        is still the answer."""
        choice = decode_choice(tap.data)
        if choice is None or tap.message is None:
            await tap.answer(NO_LONGER_ACTIVE)
            return None
        found = await self._questions.choose(tap.agent, tap.chat, tap.message, choice, tap.tap_id)
        if found is None:
            await tap.answer(UNAVAILABLE)
            return None
        question = found.question
        if question is None:
            await tap.answer(NO_LONGER_ACTIVE)
            return None
        if question.state == "expired":
            await tap.answer(EXPIRED)
            if found.changed:  # the first tap to find it expired: drawn so once
                await tap.edit(render(question))
            return None
        if not found.changed:
            await tap.answer(TYPE_IT if question.state == "typing" else ANSWERED)
            return None
        if question.state == "typing":
            await tap.answer(TYPE_IT)
            await tap.edit(render(question))
            return None
        await tap.answer(f"→ {question.answer}")
        await tap.edit(render(question))
        return question

    async def answered_by_text(self, question: Question, edit_message: EditMessage | None) -> None:
        """A question the user's text answered (memory answered it as it read the turn's
        context) is redrawn with the answer in the message it was shown in."""
        if question.message_id and edit_message is not None:
            await edit_message(question.message_id, render(question))
