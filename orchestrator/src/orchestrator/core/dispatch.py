"""Channel-agnostic dispatch: commands, button taps and text turns, one chat at a time.

    message ─► on_text ─► a command: command_routes[name](CommandContext), its reply sent
                        └► otherwise: a turn (_turn), stored with its usage, then its reply
                           sent (at the allowance's cap: the cap reply, nothing stored)
    tap     ─► on_callback ─► tap_routes[prefix of its data](TapContext); no route: refused

Both tables are built here, once, with what the app gives (``reminder_taps``,
``more_commands``, ``status_lines``); nothing is added to them later. Channels (the
console, Telegram) turn their input into calls here and render the :class:`Reply`; what
is particular to a channel (Telegram's ``/help@Bot`` form, its message limits) stays in
the channel. Turns are serial within one chat and concurrent across chats and agents.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import anyio

from meshkit.exception_groups import as_itself
from meshkit.wire.memory import AppendResult, TurnContext, Window
from meshkit.wire.proposals import Proposal
from orchestrator.core.actions import NO_LONGER_ACTIVE, ActionDesk, Where
from orchestrator.core.allowance_replies import offer, warning_text
from orchestrator.core.callbacks import (
    ACTION,
    BATCH,
    CHOICE,
    FORGET,
    GRANT_END,
    REMINDER,
    prefix_of,
)
from orchestrator.core.clarify import Questions
from orchestrator.core.consent_desk import ConsentDesk, policy_lines
from orchestrator.core.conversation import Conversation
from orchestrator.core.memory_desk import MemoryDesk
from orchestrator.core.questions_desk import QuestionDesk
from orchestrator.core.remembered import Remembered
from orchestrator.core.replies import Button, Reply
from orchestrator.core.routes import (
    Command,
    CommandContext,
    Deliver,
    EditMessage,
    FileContext,
    StatusLines,
    TapContext,
    TapHandler,
    TextContext,
)
from orchestrator.core.runtime import AgentRuntime
from orchestrator.core.summaries import Spawn, Summarizer
from orchestrator.core.turn import TurnEngine, TurnRequest, TurnResult
from orchestrator.mesh.errors import ToolCallError, ToolFailed
from orchestrator.mesh.registry import Registry

__all__ = ["Button", "Dispatcher", "Reply"]

logger = logging.getLogger(__name__)

STOPPED = "Stopped: I dropped that request. What next?"
NOTHING_TO_STOP = "Nothing is running right now."
SEND_AGAIN = "More is allowed for today: send me your message again."
NOT_HELD = "(I could not keep this message to answer once more is allowed: send it again then.)"
ALIASES = {"/start": "/help"}  # Telegram sends /start first; not listed
IMPORT = "stage_import"  # a calendar's tool: an .ics file's proposal (internal)
NO_CALENDAR = "I have no calendar to import {name} into."
CALENDAR_DOWN = "The calendar is not answering right now; send the file again in a minute."


class Dispatcher:
    def __init__(
        self,
        agents: dict[str, AgentRuntime],
        engine: TurnEngine,
        registry: Registry,
        conversation: Conversation,
        *,
        reminder_taps: TapHandler | None = None,
        more_commands: Mapping[str, Command] | None = None,
        status_lines: Sequence[StatusLines] = (),
        clarify_ttl_s: float = 3600.0,
        background: Spawn | None = None,
    ) -> None:
        """What other components give, all at construction: ``reminder_taps`` takes the
        ``rm`` buttons (None: no scheduler, refused), ``more_commands`` (``/jobs``) join the
        built-in ones, ``status_lines`` add their lines to ``/status``. ``background`` runs
        work off the replies' path (summaries); without it, none."""
        self.agents = agents
        self._engine = engine
        self.meter = engine.meter  # usage and allowances (None: nothing metered)
        self._registry = registry
        self._conversation = conversation
        zones = {agent: runtime.agent.entry.timezone for agent, runtime in agents.items()}
        self.consent = ConsentDesk(registry, zones)
        self.desk = ActionDesk(
            registry, conversation, self.consent, zones, meter=self.meter, granted=self._allowed
        )
        self._memory = MemoryDesk(registry, self.desk, Remembered(registry))
        self._questions = QuestionDesk(Questions(registry, clarify_ttl_s))
        self._summarizer = Summarizer(registry, background, self.meter)
        self._started = time.monotonic()
        self._locks: defaultdict[tuple[str, str], anyio.Lock] = defaultdict(anyio.Lock)
        self._running: dict[tuple[str, str], anyio.CancelScope] = {}
        self._status_lines = tuple(status_lines)
        # Callback prefix → handler: where every tap goes (the formats: core/callbacks.py).
        self.tap_routes: Mapping[str, TapHandler] = MappingProxyType({
            ACTION: self.desk.tap,  # pending-actions decides, the confirm tool acts
            BATCH: self.desk.tap,
            CHOICE: self._choose,  # the question answered, then the turn its answer starts
            FORGET: self._forget,  # memory checks it, then it is a change confirmed at once
            REMINDER: reminder_taps or refused,  # the scheduler follows the reminder up
            GRANT_END: self.consent.end,  # pending-actions ends the tapping user's grant
        })  # fmt: skip
        # Command → handler, in the order /help and Telegram's "/" menu list them.
        self.command_routes: Mapping[str, Command] = MappingProxyType({
            "/new": Command("start a fresh conversation", self._new),
            "/memory": Command("what I remember for you (forget with a tap)", self._memories),
            "/stop": Command("cancel the answer in progress", self._stop, serial=False),
            "/status": Command("servers, tools, model, policies and uptime", self._status),
            "/grants": Command("changes allowed without a tap, for now", self.consent.grants),
            "/audit": Command("your last 10 entries in the consent ledger", self.consent.audit),
            "/reload": Command("re-discover the tools of every server", self._reload),
            "/help": Command("what I can do", self._help),
            **(more_commands or {}),
        })  # fmt: skip

    async def on_text(self, said: TextContext) -> Reply:
        """The answer to a text (:class:`TextContext`). A turn cancelled by ``/stop``
        answers an empty Reply.

        Changes the turn proposed are staged for ``said.user`` to confirm, bound to
        ``said.deliver.key``: the reply carries their buttons, which act only in the
        message sent under it. The turn is stored before ``deliver`` sends its reply, so
        the send may be the last thing the message needs (a crash before it redoes the
        turn, stored once; the channel delivers a reply once).
        """
        runtime = self.agents[said.agent]
        text = said.text
        typed = text.startswith("/") and not said.images  # a photo's caption is no command
        command = text.strip().split(maxsplit=1)[0].lower() if typed else ""
        if command:
            asked = CommandContext(runtime, said.chat, said.user or said.chat, said.deliver)
            return await self._on_command(command, asked)
        async with self._locks[(said.agent, said.chat)]:
            turn = TurnRequest(
                runtime, said.chat, text, said.user, said.observe, said.writing, said.images,
                purpose="turn" if said.from_user else "scheduled", turn_id=said.message_id,
            )  # fmt: skip
            redraw = said.edit_message if said.from_user else None
            answered = await self._turn(
                turn, said.message_id, said.deliver, answers=said.from_user, redraw=redraw
            )
            return answered.reply

    async def _turn(
        self,
        turn: TurnRequest,
        turn_id: str | None,
        deliver: Deliver | None,
        *,
        answers: bool = False,
        redraw: EditMessage | None = None,
    ) -> Answered:
        """A turn and its reply; hold the chat's lock. Memory is read once (the context),
        the model runs, memory is written once (the turn, stored under ``turn_id``), then
        the reply is delivered. ``answers``: the text is the user's own and answers the
        chat's question waiting for a typed answer, if one does; that question's message
        is redrawn through ``redraw`` before the reply goes out. At the allowance's cap
        the message is held in memory (under ``turn_id``) until more is allowed."""
        thought = await self._think(turn, answers, redraw)
        agent_id, chat_id = turn.runtime.id, turn.chat_id
        if thought is None:
            await self._flush(agent_id)  # the calls it made count all the same
            return Answered(Reply(""))  # stopped: nothing stored, nothing said
        context, result = thought
        # Warned of with this reply, recorded with this turn; a question's reply has no room.
        warned = [] if result.asked or result.capped else self._warnings(turn)
        if result.stored:
            recorded = await self._record(turn, result, turn_id)
            due = recorded is not None and recorded.summary_due
        else:  # stores nothing: the count its context was read with tells
            await self._flush(agent_id)
            due = context is not None and context.summary_due
        if due:
            self._summarizer.after_turn(turn.runtime, chat_id)
        if result.asked is not None:  # a question ends the turn; proposals wait for the answer
            asked = await self._questions.ask(agent_id, chat_id, result.asked, deliver)
            return Answered(asked)
        where = Where(agent_id, chat_id, turn.user_id, turn.runtime.agent.entry.timezone)
        key = None if deliver is None else deliver.key  # the buttons act in that message
        if result.capped is not None:  # the allowance's reply, with "allow more"
            text = await self._hold(turn, turn_id, result.text)
            memory = self._registry.server_for("memory")
            capped = (  # the offer, always asked; without memory to record a grant, the text
                await self.desk.stage(
                    where, text, [(memory, offer(result.capped))], key=key, ask=True
                )
                if memory is not None
                else Reply(text)
            )
            return Answered(await _delivered(capped, deliver), capped=True)
        text = "\n\n".join([result.text, *warned])
        reply = Reply(text)
        if result.proposals:
            reply = await self.desk.stage(where, text, result.proposals, key=key)
        return Answered(await _delivered(reply, deliver))

    async def on_calendar_file(self, file: FileContext) -> Reply:
        """An .ics file: the agent's calendar reads it and proposes its import, staged for
        ``file.user`` like a turn's change (bound to ``file.deliver.key``), never read by the
        model; its refusal (not a calendar file, nothing in it) is the reply."""
        runtime = self.agents[file.agent]
        zone = runtime.agent.entry.timezone
        server = next(
            (s for s in runtime.agent.servers if self._registry.find(s, IMPORT) is not None), None
        )
        async with self._locks[(file.agent, file.chat)]:
            if server is None:
                return await _delivered(Reply(NO_CALENDAR.format(name=file.name)), file.deliver)
            arguments = {"agent": file.agent, "ics": file.text, "file_name": file.name,
                         "timezone": zone}  # fmt: skip
            try:
                proposal = await self._registry.call_as(server, IMPORT, arguments, Proposal)
            except ToolFailed as error:  # the calendar's one line, written for the user
                return await _delivered(Reply(error.message[:500]), file.deliver)
            except ToolCallError as error:
                logger.warning("%s: %s could not stage %s (%s)", file.agent, server, IMPORT, error)
                return await _delivered(Reply(CALENDAR_DOWN), file.deliver)
            where = Where(file.agent, file.chat, file.user, zone)
            key = None if file.deliver is None else file.deliver.key
            text = "\n\n".join(filter(None, [f"📅 {file.name}", file.caption]))
            reply = await self.desk.stage(where, text, [(server, proposal)], key=key)
            return await _delivered(reply, file.deliver)

    async def _hold(self, turn: TurnRequest, turn_id: str | None, text: str) -> str:
        """Keep the message the cap held back in memory, answered once more is allowed;
        the cap reply's text, which says so when it could not be kept."""
        held = await self._conversation.hold(
            turn.runtime.id, turn.chat_id, turn_id or f"held:{uuid.uuid4().hex[:16]}",
            turn.text, turn.user_id, "turn" if turn.purpose == "turn" else "scheduled",
        )  # fmt: skip
        if held is None or not held.held:
            return f"{text}\n\n{NOT_HELD}"
        return text

    async def _allowed(self, tap: TapContext) -> None:
        """More allowed by a tap ("allow more"): the messages the cap held back (memory
        keeps them, through a restart) are answered now, oldest first, each in a message of
        its own; one the cap holds again stops there (its new offer is on screen, the rest
        wait with it). Memory not answering, the user is asked to send them again."""
        waiting = await self._conversation.held(tap.agent, tap.chat)
        if waiting is None:
            await _delivered(Reply(SEND_AGAIN), tap.deliver)
            return
        runtime = self.agents[tap.agent]
        for message in waiting:
            turn = TurnRequest(
                runtime, tap.chat, message.text, message.user_id, turn_id=message.turn_id,
                purpose=message.purpose,
            )  # fmt: skip
            async with self._locks[(tap.agent, tap.chat)]:
                answered = await self._turn(turn, message.turn_id, _each(tap, message.turn_id))
            if answered.capped:
                return

    def _warnings(self, turn: TurnRequest) -> list[str]:
        meter = self.meter
        return [] if meter is None else [warning_text(w) for w in meter.warnings(turn.who)]

    async def _record(
        self, turn: TurnRequest, result: TurnResult, turn_id: str | None
    ) -> AppendResult | None:
        """Store the turn, its model calls' usage riding with it (no call of their own)."""
        agent_id, meter = turn.runtime.id, self.meter
        usage, warned = meter.take(agent_id) if meter is not None else ([], [])
        recorded: AppendResult | None = None
        try:
            recorded = await self._conversation.record(
                agent_id, turn.chat_id, result.new_items, turn_id, usage=usage, warned=warned
            )
        finally:
            if recorded is None and meter is not None:  # no answer, or cut short
                meter.restore(agent_id, usage, warned)  # with the next record
        return recorded

    async def _flush(self, agent_id: str) -> None:
        if self.meter is not None:
            await self.meter.flush(agent_id)

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
        async with as_itself(), anyio.create_task_group() as beside:
            with anyio.CancelScope() as scope:
                self._running[key] = scope
                try:
                    context = await self._conversation.context(*key, turn.user, answer)
                    if context is not None and context.answered is not None:
                        beside.start_soon(
                            self._questions.answered_by_text, context.answered, redraw
                        )
                    result = await self._engine.run(turn, context)
                finally:
                    del self._running[key]
        return None if result is None else (context, result)

    def stop(self, agent_id: str, chat_id: str) -> bool:
        """Cancel the chat's running turn (it stores nothing); whether one was running."""
        scope = self._running.get((agent_id, chat_id))
        if scope is None:
            return False
        scope.cancel()
        return True

    async def on_callback(self, tap: TapContext) -> None:
        """A tap on a button, never seen by the model: the handler of its data's prefix
        takes it (``tap_routes``). An old button or forged data with no route is answered
        that the button is no longer active; nothing runs."""
        await self.tap_routes.get(prefix_of(tap.data), refused)(tap)

    async def _choose(self, tap: TapContext) -> None:
        """A clarify choice answers the question: the turn it starts is sent through
        ``tap.deliver``; the same tap handed over again (``tap.tap_id``) after a crash cut
        that turn off is still the answer, and the turn is redone (stored once, as a
        redone message's is)."""
        chosen = await self._questions.tap(tap)
        if chosen is None:
            return
        runtime = self.agents[tap.agent]
        async with self._locks[(tap.agent, tap.chat)]:
            turn_id = f"clarify:{chosen.id}"
            turn = TurnRequest(runtime, tap.chat, chosen.answer or "", tap.user, turn_id=turn_id)
            await self._turn(turn, turn_id, tap.deliver)

    async def _forget(self, tap: TapContext) -> None:
        """/memory's 🗑: the agent's owner may forget any rule, others what is theirs."""
        owner = owner_of(self.agents[tap.agent]) == tap.user
        await self._memory.forget(tap, owner=owner)

    async def _on_command(self, name: str, asked: CommandContext) -> Reply:
        """The command's reply, delivered. Commands wait for the chat's turn in progress,
        but /stop, which must reach it; an unknown one is answered with the list."""
        command = self.command_routes.get(ALIASES.get(name, name))
        if command is None:
            unknown = Reply(f"I don't know {name}. " + self._commands_line())
            async with self._locks[(asked.runtime.id, asked.chat)]:
                return await _delivered(unknown, asked.deliver)
        if not command.serial:
            return await _run(command, asked)
        async with self._locks[(asked.runtime.id, asked.chat)]:
            return await _run(command, asked)

    async def _stop(self, asked: CommandContext) -> Reply:
        stopped = self.stop(asked.runtime.id, asked.chat)
        return Reply(STOPPED if stopped else NOTHING_TO_STOP)

    async def _memories(self, asked: CommandContext) -> Reply:
        """/memory: the 🗑 buttons act in the message it is sent in."""
        return await self._memory.present(asked, owner_of(asked.runtime) == asked.user)

    async def _help(self, asked: CommandContext) -> Reply:
        return Reply(self.help_text(asked.runtime))

    async def _new(self, asked: CommandContext) -> Reply:
        ok = await self._conversation.reset(asked.runtime.id, asked.chat)
        return Reply(
            "Fresh start: I have forgotten our conversation so far."
            if ok
            else "I could not reset the conversation (memory is unavailable)."
        )

    async def _reload(self, asked: CommandContext) -> Reply:
        await self._registry.reload()
        count = len(self._engine.visible_tools(asked.runtime))
        return Reply(f"Reloaded: {count} tools available.")

    async def _status(self, asked: CommandContext) -> Reply:
        runtime = asked.runtime
        await self._registry.check()  # the truth now, not as of the last call
        lines = [self.status_text(runtime), await self._memory.status_line(runtime.id, asked.user)]
        window = await self._conversation.loaded(runtime.id, asked.chat)
        if window is not None:
            lines.append(conversation_line(window))
        for more in self._status_lines:
            lines += await more(runtime.id)
        lines += policy_lines(runtime.agent.policies)
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
        return {name: command.description for name, command in self.command_routes.items()}

    def _commands_line(self) -> str:
        return "Commands: " + ", ".join(f"{c} ({d})" for c, d in self.commands().items())


@dataclass(frozen=True)
class Answered:
    """A turn's reply, delivered; ``capped``: the allowance held its message back."""

    reply: Reply
    capped: bool = False


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


async def refused(tap: TapContext) -> None:
    """A tap with no route (an old button, forged data): answered, nothing done."""
    await tap.answer(NO_LONGER_ACTIVE)


async def _run(command: Command, asked: CommandContext) -> Reply:
    return await _delivered(await command.run(asked), asked.deliver)


def _each(tap: TapContext, turn_id: str) -> Deliver | None:
    """Where a held message is answered after ``tap``: a message of its own, under a key of
    its own (the tap's and the message's: the same when the tap is handed over again)."""
    if tap.deliver is None:
        return None
    return tap.deliver.under(f"{tap.deliver.key or 'tap'}:{turn_id}")


async def _delivered(reply: Reply, deliver: Deliver | None) -> Reply:
    if deliver is not None and reply.text:
        await deliver(reply)
    return reply
