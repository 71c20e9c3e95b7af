"""Messages the allowance's cap held back, kept until they are answered.

    a turn at the cap ─► hold_message(turn id, text, user, purpose): kept (at most
                         ``MAX_HELD`` a chat; a message held again stays as it was)
    "Allow more" tap  ─► held_messages: those still waiting, oldest first ─► each answered
                         by a turn stored under its turn id, which lets it go

A held message is answered when a turn is stored under its turn id (``append_items``: the
``turns`` table), so nothing more needs saying after the turn; one held longer than
``HELD_S`` (the day it was held for is over) is let go unanswered. The orchestrator keeps
nothing of them: a restart between the hold and the tap loses none.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from mcp_memory.conversation_store import ConversationStore, HeldRow
from meshkit.wire.memory import Held, HeldMessage, HeldMessages

MAX_HELD = 10  # a chat's messages waiting at once; more are refused (said to the user)
HELD_S = 24 * 3600.0  # as long as the "allow more" offer lives


class HeldBack:
    def __init__(self, store: ConversationStore, *, clock: Callable[[], float] = time.time) -> None:
        self._store = store
        self._clock = clock

    async def hold(  # noqa: PLR0917 (the message's fields)
        self,
        agent: str,
        chat_id: str,
        turn_id: str,
        text: str,
        user_id: str | None,
        purpose: str,
    ) -> Held:
        now = self._clock()
        row = HeldRow(turn_id, user_id, purpose, text, now)
        held, waiting = await self._store.hold(
            agent, chat_id, row, since=now - HELD_S, most=MAX_HELD
        )
        return Held(held=held, waiting=waiting)

    async def waiting(self, agent: str, chat_id: str) -> HeldMessages:
        rows = await self._store.held(agent, chat_id, self._clock() - HELD_S, MAX_HELD)
        return HeldMessages(
            messages=[HeldMessage.model_validate(row, from_attributes=True) for row in rows]
        )
