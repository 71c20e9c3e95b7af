"""/memory: what the agent remembers for this user, each line with a Forget button.

No model is involved. The list shows a 🗑 for what the user may forget (their notes, the
rules they set; the agent's owner: every rule), and the memory server records which
buttons the message shows (``memories_shown``, again at each redraw): a 🗑 acts in that
message only. A Forget tap is a tap on a change like any other: the memory server checks
it (``forget_tapped``: shown there, theirs to forget) and proposes the forget,
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

from meshkit.wire.memory import ForgetTapped, MemoriesShown
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
from orchestrator.core.routes import Deliver, TapContext
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
        # One /memory message sent or one Forget tap at a time in a chat: a tap waits until
        # the message it is on is recorded, and a second tap until the first has redrawn.
        self._busy: defaultdict[tuple[str, str], anyio.Lock] = defaultdict(anyio.Lock)

    async def _listing(self, agent: str, user: str, owner: bool) -> tuple[Reply, list[str]]:
        """The list, and the memories it shows a 🗑 for (``owner``: every rule too)."""
        memories = await self._remembered.memories(agent, user)
        if not memories:
            return Reply(NOTHING), []
        lines = ["What I remember (🗑 forgets one):"]
        rows, ids = [], []
        for number, memory in enumerate(memories, start=1):
            lines.append(f"{number}. [{LABELS[memory.scope]}] {memory.text}")
            if memory.yours or owner:
                rows.append([Button(f"🗑 {number}", encode_forget(ForgetTap(memory.id)))])
                ids.append(memory.id)
        return Reply("\n".join(lines), rows), ids

    async def present(
        self, agent: str, chat_id: str, user: str, owner: bool, deliver: Deliver | None
    ) -> Reply:
        """Send the list and record the 🗑 buttons its message shows: they act there only."""
        async with self._busy[(agent, chat_id)]:
            reply, ids = await self._listing(agent, user, owner)
            if deliver is None:
                return reply
            message_id = await deliver(reply)
            if ids and message_id is None:
                logger.warning("/memory: sent, but its message id is unknown")
            elif ids and message_id is not None:
                await self._shown(agent, chat_id, user, message_id, ids)
            return reply

    async def _shown(
        self, agent: str, chat_id: str, user: str, message_id: str, ids: list[str]
    ) -> None:
        memory = self._registry.server_for("memory")
        if memory is None:
            return
        arguments = {
            "agent": agent, "user": user, "chat_id": chat_id, "message_id": message_id,
            "memory_ids": ids,
        }  # fmt: skip
        try:
            await self._registry.call_as(memory, "memories_shown", arguments, MemoriesShown)
        except ToolCallError as error:
            logger.warning("/memory: its buttons were not recorded (%s)", error)

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
        if forget is None or tap.message is None or tap.key is None:
            await tap.answer(NO_LONGER_ACTIVE)
            return
        async with self._busy[(tap.agent, tap.chat)]:
            await self._forget(tap, tap.message, forget, owner)

    async def _forget(
        self, tap: TapContext, message_id: str, forget: ForgetTap, owner: bool
    ) -> None:
        memory = self._registry.server_for("memory")
        pending = self._registry.server_for("pending-actions")
        if memory is None or pending is None:
            await tap.answer(UNAVAILABLE)
            return
        where = {
            "agent": tap.agent,
            "user": tap.user,
            "chat_id": tap.chat,
            "message_id": message_id,
        }
        arguments = {**where, "memory_id": forget.memory_id, "owner": owner}
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
            listing, ids = await self._listing(tap.agent, tap.user, owner)
            # Recorded before it can be tapped.
            await self._shown(tap.agent, tap.chat, tap.user, message_id, ids)
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
