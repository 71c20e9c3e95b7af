"""The agent speaks first: what a due firing of the scheduler becomes.

    briefing  ─► Briefings.compose (parts by direct tool calls; the model writes, or the
                 template) ─► a message to the owner
    prompt    ─► a normal turn (the agent's tools, proposals with buttons, remembered) in
                 the owner's chat, its reply sent there
    reminder  ─► "⏰ <text>" with its buttons (``Reminders``: their taps, ``/jobs``)

The owner is the agent's first allowed user (a private chat's id is its user's id).
"""

from __future__ import annotations

import logging

from meshkit.wire.scheduler import Firing, FiringKind, sent_under
from orchestrator.core.briefing import Briefings
from orchestrator.core.dispatch import Dispatcher, owner_of
from orchestrator.core.reminders import reminder_reply
from orchestrator.core.replies import Reply
from orchestrator.core.routes import Deliver, TextContext
from orchestrator.core.runtime import AgentRuntime
from orchestrator.mesh.registry import Registry

logger = logging.getLogger(__name__)

PROMPT_PREFIX = "(Scheduled: {name}) "


class Proactive:
    def __init__(self, registry: Registry, dispatcher: Dispatcher) -> None:
        self._dispatcher = dispatcher
        self._briefings = Briefings(registry, dispatcher.meter)
        self.server = registry.server_for("scheduler")

    def runtime(self, agent: str) -> AgentRuntime | None:
        return self._dispatcher.agents.get(agent)

    async def handle(self, firing: Firing, deliver: Deliver) -> bool:
        """Deliver what ``firing`` says to its agent's owner; False when there is nobody
        to send it to (the firing is done all the same)."""
        runtime = self._dispatcher.agents.get(firing.agent)
        owner = None if runtime is None else owner_of(runtime)
        if runtime is None or owner is None:
            logger.warning(
                "firing %s: agent %s has no owner to tell; dropped", firing.key, firing.agent
            )
            return False
        kind: FiringKind = firing.kind
        if kind == "reminder":
            await deliver(reminder_reply(firing))
        elif kind == "briefing":
            await deliver(Reply(await self._briefings.compose(runtime, firing, owner)))
        else:
            name = firing.source.rsplit("/", 1)[-1]
            prompt = PROMPT_PREFIX.format(name=name) + str(firing.payload.get("prompt", ""))
            await self._dispatcher.on_text(
                TextContext(
                    runtime.id,
                    owner,
                    prompt,
                    message_id=sent_under(firing.key),
                    user=owner,
                    deliver=deliver,
                    from_user=False,
                ),  # a question waiting in the chat is the user's to answer
            )
        return True
