"""Remembered rules and notes: proposed by the model, written only after the user's tap.

    propose_remember(text, scope) ─► Proposal (kind "remember", [💾 Remember] [Skip])
    tap ─► pending-actions ─► confirm_remember(payload, approval) ─► a memory row
    propose_forget(id)            ─► Proposal (kind "forget")  ─► confirm_forget

A remembered line is plain text on one line (``meshkit.text.one_line``: NFKC, no
zero-width or bidi characters, single spaces), made so when it is proposed and again when
it is written, so no look-alike of the orchestrator's section markers is ever stored.

The approval token is checked for the agent the payload acts on, and each approved
action is performed once (the consent kernel, ``meshkit.consent``, and confirm-once).
Nothing else writes memory: no read tool, no tool result, no other agent (a token minted
for another agent does not match).

A note is forgotten by its user; an agent rule (it reaches everyone) by the user who set
it, or by the agent's owner, for whom the orchestrator vouches on a /memory 🗑 tap
(``forget_tapped``): the model's ``propose_forget`` offers only what is the user's own.
/memory's 🗑 buttons act in the message that shows them: ``show`` binds them to the key
that message is sent under, before it is sent and again at each redraw; the same data
tapped on another message is "not here".
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, Field

from mcp_memory.errors import InvalidRequest
from mcp_memory.memory_store import Changes, MemoryStore
from meshkit.proposals import Approval, Confirmed
from meshkit.text import one_line
from meshkit.wire.memory import ForgetTapped, Memories
from meshkit.wire.proposals import Proposal

SERVER = "memory"  # as approval tokens name it
REMEMBER = "remember"
FORGET = "forget"
MAX_TEXT = 300
MAX_MEMORIES = 200  # per agent and user: beyond that, forget something first
Scope = Literal["user", "agent"]
SCOPE_WORDS = {"user": "about you", "agent": "for everyone"}


class RememberPayload(BaseModel):
    agent: str = Field(min_length=1)
    user: str
    scope: Scope
    text: str = Field(min_length=1, max_length=MAX_TEXT)
    memory_id: str = Field(pattern=r"^mem_[0-9a-f]{12}$")


class ForgetPayload(BaseModel):
    agent: str = Field(min_length=1)
    user: str
    memory_id: str = Field(pattern=r"^mem_[0-9a-f]{12}$")
    text: str
    as_owner: bool = False  # the agent's owner forgets another's rule (a /memory tap)


NOT_YOURS = (
    "That rule was set by someone else: only they, or the agent's owner (with /memory), "
    "can forget it."
)


class MemoryService:
    def __init__(self, store: MemoryStore, *, clock: Callable[[], float] = time.time) -> None:
        self._store = store
        self._clock = clock

    async def list(self, agent: str, user: str) -> Memories:
        return Memories(memories=await self._store.visible(agent, user))

    async def propose_remember(self, agent: str, user: str, text: str, scope: Scope) -> Proposal:
        line = one_line(text)
        if not line:
            raise InvalidRequest("There is nothing to remember: give the rule or note in words.")
        if len(line) > MAX_TEXT:
            raise InvalidRequest(
                f"That is {len(line)} characters; a memory holds at most {MAX_TEXT}. "
                "Say it shorter."
            )
        if scope == "user" and not user:
            raise InvalidRequest("No user is known here: remember it with scope 'agent'.")
        if len(await self._store.visible(agent, user)) >= MAX_MEMORIES:
            raise InvalidRequest(
                f"{MAX_MEMORIES} things are remembered already: ask the user to forget some "
                "first (/memory)."
            )
        payload = RememberPayload(
            agent=agent, user=user, scope=scope, text=line,
            memory_id=f"mem_{secrets.token_hex(6)}",
        )  # fmt: skip
        return Proposal(
            kind=REMEMBER,
            summary=f"Remember {SCOPE_WORDS[scope]}: {line}",
            payload=payload.model_dump(),
            confirm_label="💾 Remember",
            cancel_label="Skip",
        )

    async def propose_forget(
        self, agent: str, user: str, memory_id: str, *, as_owner: bool = False
    ) -> Proposal:
        found = await self._store.find(agent, user, memory_id)
        if found is None:
            raise InvalidRequest(
                f"No memory {memory_id!r} is remembered here: list_memories gives the ids."
            )
        if not (found.yours or as_owner):
            raise InvalidRequest(NOT_YOURS)
        payload = ForgetPayload(
            agent=agent, user=user, memory_id=memory_id, text=found.text,
            as_owner=as_owner and not found.yours,
        )  # fmt: skip
        return Proposal(
            kind=FORGET,
            summary=f"Forget: {found.text}",
            payload=payload.model_dump(),
            confirm_label="🗑 Forget",
            cancel_label="Keep",
        )

    async def show(
        self, agent: str, user: str, chat_id: str, message_key: str, *, owner: bool
    ) -> Memories:
        """What /memory lists for ``user``, its 🗑 buttons (theirs to forget; ``owner``:
        every rule too) bound to the message sent (or redrawn) under ``message_key``: they
        act there only."""
        memories = await self._store.visible(agent, user)
        ids = [memory.id for memory in memories if memory.yours or owner]
        await self._store.show(agent, chat_id, message_key, user, ids, self._clock())
        return Memories(memories=memories)

    async def forget_tapped(
        self,
        agent: str,
        user: str,
        chat_id: str,
        message_key: str,
        memory_id: str,
        *,
        owner: bool,
    ) -> ForgetTapped:
        """A /memory 🗑 tap: a forget to confirm, if the message sent under ``message_key``
        shows this user that button and the memory is theirs to forget (``owner``: the
        agent's owner, any rule)."""
        shown = await self._store.button(agent, chat_id, message_key, user, memory_id)
        found = await self._store.find(agent, user, memory_id)
        if shown is None or (shown is False and found is not None):
            return ForgetTapped(state="not_here")
        if found is None:
            return ForgetTapped(state="forgotten", redraw=shown)
        if not (found.yours or owner):
            return ForgetTapped(state="not_yours")
        proposal = await self.propose_forget(agent, user, memory_id, as_owner=owner)
        return ForgetTapped(state="proposed", proposal=proposal)

    # --- executors (meshkit.consent): the approval is checked, the payload read ----------

    async def remember(self, change: RememberPayload, approval: Approval) -> Confirmed:
        """Write an approved rule or note, once."""
        now = self._clock()
        # What was approved is what was proposed (plain already), unless a payload was made
        # by hand: it is written plain all the same.
        text = one_line(change.text)
        if not text:
            raise InvalidRequest("There is nothing to remember: the approved text is empty.")

        def perform(changes: Changes) -> dict[str, Any]:
            memory = changes.remember(
                change.memory_id, change.agent, change.scope, change.user, text, now,
                set_by=change.user or None,
            )  # fmt: skip
            return {"message": f"Remembered: {text}", "memory": memory.model_dump()}

        return await self._store.confirm(approval, perform, at=now)

    async def forget(self, change: ForgetPayload, approval: Approval) -> Confirmed:
        """Forget an approved memory, once."""
        now = self._clock()

        def perform(changes: Changes) -> dict[str, Any]:
            # Forgotten already (a second 🗑 tap proposed again before the first was done):
            # what the user asked for holds, so it is no failure. Still there, it is not
            # this user's to forget (a proposal from before that was checked).
            forgotten = changes.forget(
                change.agent, change.user, change.memory_id, now, as_owner=change.as_owner
            )
            if not forgotten and changes.remembered(change.agent, change.user, change.memory_id):
                raise InvalidRequest(NOT_YOURS)
            return {"message": f"Forgotten: {change.text}", "memory_id": change.memory_id}

        return await self._store.confirm(approval, perform, at=now)
