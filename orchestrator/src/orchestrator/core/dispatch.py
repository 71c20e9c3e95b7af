"""Channel-agnostic dispatch: commands, button taps and text turns, one chat at a time.

Channels (the console, Telegram) turn their input into calls here and render the
:class:`Reply`; what is particular to a channel (Telegram's ``/help@Bot`` form, its
message limits) stays in the channel. Turns are serial within one chat and concurrent
across chats and agents.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Awaitable, Callable

import anyio

from meshkit.wire.memory import TurnContext, Window
from orchestrator.core.actions import ActionDesk, Answer, Deliver, Edit, proposals_of
from orchestrator.core.callbacks import decode_choice, decode_forget
from orchestrator.core.clarify import Questions
from orchestrator.core.conversation import Conversation
from orchestrator.core.memory_desk import MemoryDesk
from orchestrator.core.questions_desk import EditMessage, QuestionDesk
from orchestrator.core.remembered import Remembered
from orchestrator.core.replies import Button, Reply
from orchestrator.core.summaries import Spawn, Summarizer
from orchestrator.core.turn import AgentRuntime, ToolObserver, TurnEngine, TurnRequest, TurnResult
from orchestrator.mesh.registry import Registry

__all__ = ["Button", "Dispatcher", "Reply"]


StatusProbe = Callable[[str], Awaitable[list[str]]]  # the asking agent → its lines
CommandHandler = Callable[[AgentRuntime, str], Awaitable[Reply]]  # (agent, chat) -> reply
# A tap handler takes the taps it knows (True), such as a reminder's buttons: (agent, chat,
# user, message, data, answer, edit, tap id).
TapHandler = Callable[[str, str, str, str | None, str, Answer, Edit, str | None], Awaitable[bool]]
STOPPED = "Stopped: I dropped that request. What next?"
NOTHING_TO_STOP = "Nothing is running right now."

COMMANDS = {
    "/new": "start a fresh conversation",
    "/memory": "what I remember for you (forget with a tap)",
    "/stop": "cancel the answer in progress",
    "/status": "servers, tools, model and uptime",
    "/reload": "re-discover the tools of every server",
    "/help": "what I can do",
}


class Dispatcher:
    def __init__(
        self,
        agents: dict[str, AgentRuntime],
        engine: TurnEngine,
        registry: Registry,
        conversation: Conversation,
        *,
        clarify_ttl_s: float = 3600.0,
        background: Spawn | None = None,
    ) -> None:
        """``background`` runs work off the replies' path (summaries); without it, none."""
        self.agents = agents
        self._engine = engine
        self._registry = registry
        self._conversation = conversation
        self._desk = ActionDesk(registry, conversation)
        self._memory = MemoryDesk(registry, self._desk, Remembered(registry))
        self._questions = QuestionDesk(Questions(registry, clarify_ttl_s))
        self._summarizer = Summarizer(registry, background)
        self._started = time.monotonic()
        self._locks: defaultdict[tuple[str, str], anyio.Lock] = defaultdict(anyio.Lock)
        self._running: dict[tuple[str, str], anyio.CancelScope] = {}
        self.status_probes: list[StatusProbe] = []  # a channel's own lines for /status
        self.extra_commands: dict[str, tuple[str, CommandHandler]] = {}  # a module's commands
        self.tap_handlers: list[TapHandler] = []  # asked before pending-actions' taps

    async def on_text(
        self,
        agent_id: str,
        chat_id: str,
        text: str,
        observe: ToolObserver | None = None,
        *,
        message_id: str | None = None,
        user_id: str | None = None,
        deliver: Deliver | None = None,
        edit_message: EditMessage | None = None,
        from_user: bool = True,
    ) -> Reply:
        """The answer to a message. A turn cancelled by ``/stop`` answers an empty Reply.

        ``message_id`` identifies the message across redeliveries (a Telegram update id),
        so a turn redone after a crash is remembered once. Changes the turn proposed are
        staged for ``user_id`` to confirm: the reply carries their buttons. The turn is
        stored before ``deliver`` sends its reply, so the send may be the last thing the
        message needs (a crash before it redoes the turn, stored once; the channel
        delivers a reply once); ``deliver`` says which message the reply's buttons are
        in: only taps on it are taken. A text that answers a question the model asked
        (clarify) has the question's message redrawn with the answer through
        ``edit_message``; a text not typed by the user (``from_user`` False: a scheduled
        prompt) never answers one.
        """
        runtime = self.agents[agent_id]
        command = text.strip().split(maxsplit=1)[0].lower() if text.startswith("/") else ""
        if command == "/stop":  # not behind the chat's lock: it must reach the running turn
            stopped = Reply(STOPPED if self.stop(agent_id, chat_id) else NOTHING_TO_STOP)
            return await _delivered(stopped, deliver)
        async with self._locks[(agent_id, chat_id)]:
            if command == "/memory":  # its message is recorded: the 🗑 buttons act there
                user = user_id or chat_id
                owner = owner_of(runtime) == user
                return await self._memory.present(agent_id, chat_id, user, owner, deliver)
            if command:
                user = user_id or chat_id
                reply = await self._command(runtime, chat_id, command, user)
                return await _delivered(reply, deliver)
            turn = TurnRequest(runtime, chat_id, text, user_id, observe)
            redraw = edit_message if from_user else None
            return await self._turn(turn, message_id, deliver, answers=from_user, redraw=redraw)

    async def _turn(
        self,
        turn: TurnRequest,
        turn_id: str | None,
        deliver: Deliver | None,
        *,
        answers: bool = False,
        redraw: EditMessage | None = None,
    ) -> Reply:
        """A turn and its reply; hold the chat's lock. Memory is read once (the context),
        the model runs, memory is written once (the turn, stored under ``turn_id``), then
        the reply is delivered. ``answers``: the text is the user's own and answers the
        chat's question waiting for a typed answer, if one does; that question's message
        is redrawn through ``redraw`` before the reply goes out."""
        thought = await self._think(turn, answers, redraw)
        if thought is None:
            return Reply("")  # stopped: nothing stored, nothing said
        context, result = thought
        agent_id, chat_id = turn.runtime.id, turn.chat_id
        if result.stored:
            recorded = await self._conversation.record(agent_id, chat_id, result.new_items, turn_id)
            due = recorded is not None and recorded.summary_due
        else:  # stores nothing: the count its context was read with tells
            due = context is not None and context.summary_due
        if due:
            self._summarizer.after_turn(turn.runtime, chat_id)
        if result.asked is not None:  # a question ends the turn; proposals wait for the answer
            return await self._questions.ask(agent_id, chat_id, result.asked, deliver)
        reply = Reply(result.text)
        proposals = proposals_of(result.results)
        if proposals:
            reply = await self._desk.stage(agent_id, chat_id, turn.user_id, result.text, proposals)
        if reply.batch_id is not None and deliver is not None:
            await self._desk.present(agent_id, chat_id, reply, deliver)
            return reply
        return await _delivered(reply, deliver)

    async def _think(
        self, turn: TurnRequest, answers: bool, redraw: EditMessage | None
    ) -> tuple[TurnContext | None, TurnResult] | None:
        """The turn's context and the model's answer to it; None when ``/stop`` cut it
        short. A question the text answered is redrawn beside the model, and done before
        this returns (the reply must not come before it)."""
        key = (turn.runtime.id, turn.chat_id)
        answer = turn.text if answers else None
        context: TurnContext | None = None
        result: TurnResult | None = None
        failed: Exception | None = None
        async with anyio.create_task_group() as beside:
            with anyio.CancelScope() as scope:
                self._running[key] = scope
                try:
                    context = await self._conversation.context(*key, turn.user, answer)
                    if context is not None and context.answered is not None:
                        beside.start_soon(
                            self._questions.answered_by_text, context.answered, redraw
                        )
                    result = await self._engine.run(turn, context)
                except Exception as error:  # raised as itself, not in an exception group
                    failed = error
                finally:
                    del self._running[key]
        if failed is not None:
            raise failed
        return None if result is None else (context, result)

    def stop(self, agent_id: str, chat_id: str) -> bool:
        """Cancel the chat's running turn (it stores nothing); whether one was running."""
        scope = self._running.get((agent_id, chat_id))
        if scope is None:
            return False
        scope.cancel()
        return True

    async def on_callback(  # noqa: PLR0917
        self,
        agent_id: str,
        chat_id: str,
        user_id: str,
        message_id: str | None,
        data: str,
        answer: Answer,
        edit: Edit,
        *,
        deliver: Deliver | None = None,
        tap_id: str | None = None,
    ) -> None:
        """A tap on a button of message ``message_id``, never seen by the model: ``answer``
        gets a short notice once it is decided, ``edit`` the tapped message's new content
        (see ActionDesk.tap). A tap on a clarify choice answers the question: the turn it
        starts is sent through ``deliver``; the same tap handed over again (``tap_id``, the
        channel's id for it) after a crash cut that turn off is still the answer, and the
        turn is redone (stored once, as a redone message's is). /memory's Forget buttons
        forget, no model involved."""
        choice = decode_choice(data)
        if choice is not None:
            chosen = await self._questions.tap(
                agent_id, chat_id, message_id, choice, answer, edit, tap_id
            )
            if chosen is not None:
                runtime = self.agents[agent_id]
                async with self._locks[(agent_id, chat_id)]:
                    turn = TurnRequest(runtime, chat_id, chosen.answer or "", user_id)
                    await self._turn(turn, f"clarify:{chosen.id}", deliver)
            return
        forget = decode_forget(data)
        if forget is not None:
            owner = owner_of(self.agents[agent_id]) == user_id
            await self._memory.forget(
                agent_id, chat_id, user_id, message_id, forget, answer, edit, owner=owner
            )
            return
        for handler in self.tap_handlers:
            if await handler(agent_id, chat_id, user_id, message_id, data, answer, edit, tap_id):
                return
        await self._desk.tap(agent_id, chat_id, user_id, message_id, data, answer, edit)

    async def _command(self, runtime: AgentRuntime, chat_id: str, command: str, user: str) -> Reply:
        if command == "/status":
            return await self._status(runtime, chat_id, user)
        if command in self.extra_commands:
            return await self.extra_commands[command][1](runtime, chat_id)
        return await self._plain_command(runtime, chat_id, command)

    async def _plain_command(self, runtime: AgentRuntime, chat_id: str, command: str) -> Reply:
        if command in ("/start", "/help"):
            return Reply(self.help_text(runtime))
        if command == "/new":
            ok = await self._conversation.reset(runtime.id, chat_id)
            return Reply(
                "Fresh start: I have forgotten our conversation so far."
                if ok
                else "I could not reset the conversation (memory is unavailable)."
            )
        if command == "/reload":
            await self._registry.reload()
            count = len(self._engine.visible_tools(runtime))
            return Reply(f"Reloaded: {count} tools available.")
        return Reply(f"I don't know {command}. " + self._commands_line())

    async def _status(self, runtime: AgentRuntime, chat_id: str, user: str) -> Reply:
        await self._registry.check()  # the truth now, not as of the last call
        lines = [self.status_text(runtime), await self._memory.status_line(runtime.id, user)]
        window = await self._conversation.loaded(runtime.id, chat_id)
        if window is not None:
            lines.append(conversation_line(window))
        for probe in self.status_probes:
            lines += await probe(runtime.id)
        return Reply("\n".join(lines))

    def help_text(self, runtime: AgentRuntime) -> str:
        tools = self._engine.visible_tools(runtime)
        lines = [f"I'm {runtime.agent.entry.name}. Ask me anything in plain words."]
        by_server: dict[str, list[str]] = defaultdict(list)
        for tool in tools:
            by_server[tool.server].append(tool.title)
        if by_server:
            lines.append("I can use:")
            lines += [f"• {server}: {', '.join(titles)}" for server, titles in by_server.items()]
        down = {status.name for status in self._registry.status() if not status.up}
        missing = [s for s in runtime.agent.servers if s in down]
        if missing:
            lines.append(f"(unavailable right now: {', '.join(missing)})")
        lines.append(self._commands_line())
        return "\n".join(lines)

    def status_text(self, runtime: AgentRuntime) -> str:
        uptime = int(time.monotonic() - self._started)
        visible = self._engine.visible_tools(runtime)
        lines = [
            f"{runtime.agent.entry.name} · model {runtime.llm.model} · "
            f"up {uptime // 3600}h {uptime % 3600 // 60}m {uptime % 60}s"
        ]
        memory = self._registry.server_for("memory")
        for status in self._registry.status():
            if status.name not in runtime.agent.servers and status.name != memory:
                continue
            count = sum(1 for tool in visible if tool.server == status.name)
            tools = f", {count} tools" if count else ""
            why = f" ({status.error})" if status.error else ""
            mark, state = ("✅", f"up{tools}") if status.up else ("❌", f"down{why}")
            lines.append(f"{mark} {status.name} ({status.transport}): {state}")
        return "\n".join(lines)

    def commands(self) -> dict[str, str]:
        """Every command with its description: the built-in ones and a module's (/jobs)."""
        return {**COMMANDS, **{c: d for c, (d, _) in self.extra_commands.items()}}

    def _commands_line(self) -> str:
        return "Commands: " + ", ".join(f"{c} ({d})" for c, d in self.commands().items())


def owner_of(runtime: AgentRuntime) -> str | None:
    """The agent's owner: its first allowed user (proactive messages go to their chat; they
    may forget any rule)."""
    users = runtime.agent.entry.allowed_user_ids
    return users[0] if users else None


def conversation_line(window: Window) -> str:
    """The conversation layer: what the window gives the model, and what it leaves out."""
    left = f", {window.dropped} older left out" if window.dropped else ""
    return (
        f"💬 Conversation: {len(window.items)} items in the window "
        f"(~{window.token_estimate} tokens){left}"
    )


async def _delivered(reply: Reply, deliver: Deliver | None) -> Reply:
    if deliver is not None and reply.text:
        await deliver(reply)
    return reply
