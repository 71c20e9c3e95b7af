"""The clarify questions on the chat side: ask, take a tap, take a typed answer.

See ``clarify`` for the flow. The question's message is redrawn as it changes: with
the answer, "type your answer" after Other, or "expired". Memory trouble never breaks
a turn: a question that cannot be stored is sent as plain text (its answer then comes
as an ordinary message, with the question in the window all the same).

A typed answer is drawn in the message a tap on the question came from (memory keeps its
id), else in the one this process sent it in: an open question (no buttons, so no tap)
answered after a restart is not redrawn, its answer taken all the same.
"""

from __future__ import annotations

from collections import OrderedDict

from meshkit.wire.memory import Question
from orchestrator.core.actions import NO_LONGER_ACTIVE, UNAVAILABLE
from orchestrator.core.callbacks import decode_choice
from orchestrator.core.clarify import ANSWERED, EXPIRED, TYPE_IT, Asked, Questions, render
from orchestrator.core.replies import Reply
from orchestrator.core.routes import Deliver, EditMessage, TapContext

SENT_KEPT = 1000  # questions whose message id this process keeps for a typed answer


class QuestionDesk:
    def __init__(self, questions: Questions) -> None:
        self._questions = questions
        self._sent_in: OrderedDict[str, str] = OrderedDict()  # question id → message id

    async def ask(self, agent: str, chat_id: str, asked: Asked, deliver: Deliver | None) -> Reply:
        """Store the question, bound to the key its message goes under, then send it."""
        key = None if deliver is None else deliver.key
        question = await self._questions.ask(agent, chat_id, asked, key)
        if question is None:
            listed = "".join(f"\n• {choice}" for choice in asked.choices)
            reply = Reply(f"❓ {asked.question}{listed}")
            if deliver is not None:
                await deliver(reply)
            return reply
        reply = render(question)
        if deliver is not None and (message_id := await deliver(reply)) is not None:
            self._sent_in[question.id] = message_id
            while len(self._sent_in) > SENT_KEPT:
                self._sent_in.popitem(last=False)
        return reply

    async def tap(self, tap: TapContext) -> Question | None:  # noqa: PLR0911 (one return a case)
        """A tap on a question's button (``cl``): the question, answered by it (its answer
        starts the next turn), or None (Other tapped, expired, answered before, not this
        chat's, forged). ``tap.tap_id`` names the tap: handed over again after a crash, it
        is still the answer."""
        choice = decode_choice(tap.data)
        if choice is None or tap.message is None or tap.key is None:
            await tap.answer(NO_LONGER_ACTIVE)
            return None
        found = await self._questions.choose(tap, choice)
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
        message_id = question.message_id or self._sent_in.get(question.id)
        if message_id and edit_message is not None:
            await edit_message(message_id, render(question))
