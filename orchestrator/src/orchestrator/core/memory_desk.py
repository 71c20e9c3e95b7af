"""/memory: what the agent remembers for this user, each line with a Forget button.

No model is involved. The list shows a 🗑 for what the user may forget (their notes, the
rules they set; the agent's owner: every rule); the memory server gives the list and binds
those buttons to the key its message is sent under before it is sent (``show_memories``,
again at each redraw): a 🗑 acts in that message only. A Forget tap is a tap on a change
like any other: the memory server checks it (``forget_tapped``: shown under that key,
theirs to forget) and proposes the forget,
pending-actions stages it for this user, bound to the key the tapped message was sent
under, and the same tap confirms it (``ActionDesk.tap``: approval token, confirm-once, the
conversation told). The message then shows the outcome above the list as it now stands.
A tap on a button already acted on is answered and edits nothing.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import replace

import anyio

from meshkit.wire.memory import ForgetTapped, Memories, Memory
from meshkit.wire.proposals import Proposal
from orchestrator.core.actions import NO_LONGER_ACTIVE, UNAVAILABLE, ActionDesk, Where
from orchestrator.core.callbacks import (
    ForgetTap,
    Tap,
    decode,
    decode_forget,
    encode,
    encode_forget,
)
from orchestrator.core.remembered import BUDGETS, LABELS, Remembered, layers
from orchestrator.core.replies import Button, Reply
from orchestrator.core.routes import CommandContext, TapContext
from orchestrator.mesh.errors import ToolCallError
from orchestrator.mesh.registry import Registry

logger = logging.getLogger(__name__)

NOTHING = (
    'I remember nothing for you yet. Say "from now on …" or "remember that …" and '
    "confirm with 💾 Remember."
)
ALREADY_FORGOTTEN = "Already forgotten."
NOT_ALLOWED = "Not allowed by your policy: nothing was forgotten."
NOT_YOURS = "Only the one who set that rule, or the agent's owner, can forget it."

BATCH_TEXT = "/memory"  # what pending-actions keeps as the text of a Forget tap's batch


class MemoryDesk:
    def __init__(self, registry: Registry, desk: ActionDesk, remembered: Remembered) -> None:
        self._registry = registry
        self._desk = desk
        self._remembered = remembered
        # One Forget tap at a time in a chat: a second one waits until the first has redrawn.
        self._busy: defaultdict[tuple[str, str], anyio.Lock] = defaultdict(anyio.Lock)

    async def _listing(
        self, agent: str, chat_id: str, user: str, owner: bool, key: str | None
    ) -> Reply:
        """The list, its 🗑 buttons (``owner``: every rule's too) bound to the message sent
        or redrawn under ``key`` (None: no buttons, nowhere to bind them)."""
        bound = await self._bound(agent, chat_id, user, owner, key)
        memories = bound if bound is not None else await self._remembered.memories(agent, user)
        if not memories:
            return Reply(NOTHING)
        lines = ["What I remember (🗑 forgets one):"]
        rows = []
        for number, memory in enumerate(memories, start=1):
            lines.append(f"{number}. [{LABELS[memory.scope]}] {memory.text}")
            if bound is not None and (memory.yours or owner):
                rows.append([Button(f"🗑 {number}", encode_forget(ForgetTap(memory.id)))])
        return Reply("\n".join(lines), rows)

    async def _bound(
        self, agent: str, chat_id: str, user: str, owner: bool, key: str | None
    ) -> list[Memory] | None:
        """The memories listed, their buttons bound to ``key``; None when there is no key
        or memory did not answer (the list is shown without buttons)."""
        memory = self._registry.server_for("memory")
        if memory is None or key is None:
            return None
        arguments = {
            "agent": agent, "user": user, "chat_id": chat_id, "message_key": key, "owner": owner
        }  # fmt: skip
        try:
            return (
                await self._registry.call_as(memory, "show_memories", arguments, Memories)
            ).memories
        except ToolCallError as error:
            logger.warning("/memory: its buttons could not be bound (%s)", error)
            return None

    async def present(self, command: CommandContext, owner: bool) -> Reply:
        """/memory's list, its 🗑 buttons bound to the key it is sent under: they act there
        only."""
        key = None if command.deliver is None else command.deliver.key
        runtime = command.runtime
        return await self._listing(runtime.id, command.chat, command.user, owner, key)

    async def status_line(self, agent: str, user: str) -> str:
        """The layers' use of their budgets, and what did not fit (left out of turns)."""
        found = layers(await self._remembered.memories(agent, user))
        parts = []
        for scope, budget in BUDGETS.items():
            left = f", {found.left_out[scope]} left out" if found.left_out[scope] else ""
            count = len(found.lines[scope])
            parts.append(f"{LABELS[scope]} {count} ({found.used[scope]}/{budget} chars{left})")
        return "🧠 Remembered: " + "; ".join(parts)

    async def forget(self, tap: TapContext, *, owner: bool) -> None:
        """A 🗑 tap (``mf``) on message ``tap.message``; ``owner``: the tapping user is the
        agent's owner, who may forget any rule."""
        forget = decode_forget(tap.data)
        if forget is None or tap.key is None:
            await tap.answer(NO_LONGER_ACTIVE)
            return
        async with self._busy[(tap.agent, tap.chat)]:
            await self._forget(tap, tap.key, forget, owner)

    async def _forget(self, tap: TapContext, key: str, forget: ForgetTap, owner: bool) -> None:
        memory = self._registry.server_for("memory")
        pending = self._registry.server_for("pending-actions")
        if memory is None or pending is None:
            await tap.answer(UNAVAILABLE)
            return
        arguments = {
            "agent": tap.agent, "user": tap.user, "chat_id": tap.chat, "message_key": key,
            "memory_id": forget.memory_id, "owner": owner,
        }  # fmt: skip
        try:
            found = await self._registry.call_as(memory, "forget_tapped", arguments, ForgetTapped)
        except ToolCallError:
            await tap.answer(UNAVAILABLE)
            return
        if found.state == "not_here":
            await tap.answer(NO_LONGER_ACTIVE)
            return
        if found.state == "not_yours":
            await tap.answer(NOT_YOURS)
            return

        async def with_list(outcome: Reply | None) -> None:
            listing = await self._listing(tap.agent, tap.chat, tap.user, owner, key)
            done = "" if outcome is None else outcome.text.removeprefix(f"{BATCH_TEXT}\n\n")
            await tap.settle(Reply(f"{done}\n\n{listing.text}".lstrip("\n"), listing.buttons))

        if found.state == "forgotten" or found.proposal is None:
            await tap.answer(ALREADY_FORGOTTEN)
            if found.redraw:  # forgotten another way: the list still shows its button
                await with_list(None)
            return

        async def outcome_and_list(outcome: Reply | None) -> None:
            await (tap.settle() if outcome is None else with_list(outcome))

        # The message then shows the outcome above the list as it now stands.
        await self._confirm(replace(tap, finish=outcome_and_list), found.proposal)

    async def _confirm(self, tap: TapContext, proposal: Proposal) -> None:
        """Stage the forget, bound to the tapped message's key, and confirm it with this
        tap."""
        memory = self._registry.server_for("memory")
        if memory is None or tap.key is None:  # gone since forget_tapped (a /reload)
            await tap.answer(UNAVAILABLE)
            return
        where = Where(tap.agent, tap.chat, tap.user)
        staged = await self._desk.stage(where, BATCH_TEXT, [(memory, proposal)], key=tap.key)
        first = decode(staged.buttons[0][0].data) if staged.buttons else None
        if staged.batch_id is None:
            await tap.answer(UNAVAILABLE)
            return
        if first is None:  # decided at stage: done by the agent's policy, or refused by it
            await tap.answer("Done." if staged.batch_id else NOT_ALLOWED)
            await tap.settle(staged)
            return
        confirm = encode(Tap("action", "confirm", first.target))
        await self._desk.tap(replace(tap, data=confirm))
