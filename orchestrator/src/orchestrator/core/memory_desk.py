"""/memory: what the agent remembers for this user, each line with a Forget button.

No model is involved. A Forget tap is a tap on a change like any other: the memory
server proposes the forget, pending-actions stages it for this user and records it as
shown in the tapped message, and the same tap confirms it (``ActionDesk.tap``: approval
token, confirm-once, the conversation told). The message then shows the outcome above
the list as it now stands.
"""

from __future__ import annotations

from meshkit.proposals import Proposal
from meshkit.wire.pending_actions import BatchView
from orchestrator.core.actions import NO_LONGER_ACTIVE, UNAVAILABLE, ActionDesk, Answer, Edit
from orchestrator.core.callbacks import ForgetTap, Tap, decode, encode, encode_forget
from orchestrator.core.remembered import BUDGETS, LABELS, Remembered, layers
from orchestrator.core.replies import Button, Reply
from orchestrator.mesh.errors import ToolCallError
from orchestrator.mesh.registry import Registry

NOTHING = (
    'I remember nothing for you yet. Say "from now on …" or "remember that …" and '
    "confirm with 💾 Remember."
)

BATCH_TEXT = "/memory"  # what pending-actions keeps as the text of a Forget tap's batch


class MemoryDesk:
    def __init__(self, registry: Registry, desk: ActionDesk, remembered: Remembered) -> None:
        self._registry = registry
        self._desk = desk
        self._remembered = remembered

    async def listing(self, agent: str, user: str) -> Reply:
        memories = await self._remembered.memories(agent, user)
        if not memories:
            return Reply(NOTHING)
        lines = ["What I remember (🗑 forgets one):"]
        rows = []
        for number, memory in enumerate(memories, start=1):
            lines.append(f"{number}. [{LABELS[memory.scope]}] {memory.text}")
            rows.append([Button(f"🗑 {number}", encode_forget(ForgetTap(memory.id)))])
        return Reply("\n".join(lines), rows)

    async def status_line(self, agent: str, user: str) -> str:
        """The layers' use of their budgets, and what did not fit (left out of turns)."""
        found = layers(await self._remembered.memories(agent, user))
        parts = []
        for scope, budget in BUDGETS.items():
            left = f", {found.left_out[scope]} left out" if found.left_out[scope] else ""
            count = len(found.lines[scope])
            parts.append(f"{LABELS[scope]} {count} ({found.used[scope]}/{budget} chars{left})")
        return "🧠 Remembered: " + "; ".join(parts)

    async def forget(  # noqa: PLR0917 (who, where, what, and the two ways back)
        self,
        agent: str,
        chat_id: str,
        user: str,
        message_id: str | None,
        tap: ForgetTap,
        answer: Answer,
        edit: Edit,
    ) -> None:
        memory = self._registry.server_for("memory")
        pending = self._registry.server_for("pending-actions")
        if message_id is None or memory is None or pending is None:
            await answer(NO_LONGER_ACTIVE if message_id is None else UNAVAILABLE)
            return
        arguments = {"memory_id": tap.memory_id, "agent": agent, "user": user}
        try:
            proposal = await self._registry.call_as(memory, "propose_forget", arguments, Proposal)
        except ToolCallError:  # forgotten already (or memory is down): redraw the list
            await answer(NO_LONGER_ACTIVE)
            await edit(await self.listing(agent, user))
            return
        staged = await self._desk.stage(agent, chat_id, user, BATCH_TEXT, [(memory, proposal)])
        first = decode(staged.buttons[0][0].data) if staged.buttons else None
        if staged.batch_id is None or first is None:
            await answer(UNAVAILABLE)
            return
        shown = {"agent": agent, "chat_id": chat_id, "message_id": message_id}
        try:
            await self._registry.call_as(
                pending, "show", {"batch_id": staged.batch_id, **shown}, BatchView
            )
        except ToolCallError:
            await answer(UNAVAILABLE)
            return

        async def with_list(outcome: Reply) -> None:
            listing = await self.listing(agent, user)
            done = outcome.text.removeprefix(f"{BATCH_TEXT}\n\n")
            await edit(Reply(f"{done}\n\n{listing.text}", listing.buttons))

        confirm = encode(Tap("action", "confirm", first.target))
        await self._desk.tap(agent, chat_id, user, message_id, confirm, answer, with_list)
