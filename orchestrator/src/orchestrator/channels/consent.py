"""The consent channel: what other MCP clients proposed, brought to the user's chat.

    pending-actions.next_notices (long poll) ─► show:    the batch with its buttons, sent
                                                         under the notice's key
                                                         (``consent:<batch id>``) "From
                                                         Claude Desktop: …"
                                             └► execute: <server>.confirm_<kind>(payload,
                                                         approval), complete or fail, then
                                                         "✅ From …: Shopping: …: done (why)" under
                                                         ``done:<action id>``
        ─► reported by the next next_notices: ``ack`` (delivered) or ``undelivered``
           (with why; ``final`` when it never will be), as the scheduled channel acks

A client (Claude Desktop, a script) bound to a user proposes a change through a server; the
server stages it in pending-actions, which queues a notice and wakes this poll at once. A
tap on a shown batch takes the ActionDesk's path like any other: telegram-io reports the key
of the tapped message, and pending-actions takes taps from the message sent under the key
the batch was staged with. The conversation is told (a developer note) what a client
proposed or had done, so the model knows when the user asks about it.

A batch for a user the agent does not talk to (not in its ``allowed_user_ids``: Telegram's
gate would drop their taps) is not shown: reported undelivered for good, with the fix, so
its proposals fail saying why; a change the policy allowed for one is done all the same,
without the message. The console shows every notice.

What becomes of a notice (no proposal ever vanishes unsaid):

    in the chat, or executed and recorded          acked (a show notice: shown_at)
    telegram-io down, Telegram busy or unreachable,
      or an error of ours                          undelivered: tried again after a backoff
                                                   pending-actions grows, until it expires
    refused for good (chat not found, the user
      blocked the bot, not a user of the agent)    undelivered, final: a show notice's
                                                   proposals fail with the reason, which
                                                   the client reads in get_action; the
                                                   change an execute notice made stays made
    the confirm tool gave no answer                neither: handed out again when its lease
                                                   runs out, with a fresh approval

The confirm tool performs an action id once, and telegram-io delivers a key once. The
notices of one poll are handled side by side, and reported by the next poll; stopping is
the consumer's (``consumer``).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable

import anyio

from meshkit.wire.pending_actions import Notice, Notices, Undelivered
from orchestrator.channels.consumer import Batch, Consumer, Left, Source
from orchestrator.channels.telegram_io import (
    TelegramBusy,
    TelegramIO,
    TelegramIOUnavailable,
    TelegramRefused,
)
from orchestrator.core.batches import Line, labelled, message_of, render
from orchestrator.core.consent_desk import Change
from orchestrator.core.dispatch import Dispatcher
from orchestrator.core.replies import Reply
from orchestrator.mesh.errors import ToolCallError
from orchestrator.mesh.registry import Registry
from orchestrator.shutdown import Shutdown

logger = logging.getLogger(__name__)

MAX_NOTICES = 10
MAX_WAIT_S = 25.0  # pending-actions' bound for one long poll

UNREACHABLE = (
    "the assistant cannot reach Telegram right now (its telegram-io service does not answer)"
)
OUR_ERROR = "the assistant failed to show it (an error of its own, in its log)"

# Shows a notice's message to its user: the message id (None: not known). Raises
# NoticeUnsent when it could not go now (try again later) and NoticeRefused when it never will,
# each saying why in words the client that proposed it reads.
Show = Callable[[Notice, Reply], Awaitable[str | None]]


class NoticeUnsent(Exception):
    """The notice's message could not be sent now: tried again after a backoff."""


class NoticeRefused(Exception):
    """The notice's message was refused for good (the chat is not found, the user blocked
    the bot): a show notice's proposals fail with the reason."""


def telegram_show(io: TelegramIO) -> Show:
    """Notices to the user's chat by the agent's bot, once per key (telegram-io)."""

    async def show(notice: Notice, reply: Reply) -> str | None:
        try:
            return await io.deliver(notice.agent, notice.chat_id, reply, notice.key)
        except TelegramIOUnavailable as error:
            raise NoticeUnsent(UNREACHABLE) from error
        except TelegramBusy as error:
            raise NoticeUnsent(str(error)) from error
        except TelegramRefused as error:
            raise NoticeRefused(str(error)) from error

    return show


class ConsentChannel(Source[Notice, str | Undelivered]):
    """pending-actions' notices as a source of the consumer (``consumer``): handled side by
    side, each reported by the next poll (an ack, or undelivered with why)."""

    name = "pending-actions"
    failures = (ToolCallError,)

    def __init__(
        self,
        dispatcher: Dispatcher,
        registry: Registry,
        show: Show,
        *,
        consumer: str = "orchestrator",
        run: str | None = None,
        wait_s: float = 20.0,
        grace_s: float = 20.0,
        allowed_only: bool = True,
        sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
    ) -> None:
        """``allowed_only``: a notice for a user the agent does not talk to (not in its
        ``allowed_user_ids``: the chat's taps would be dropped) is not shown, only logged;
        False for the console, whose user is whoever sits at it."""
        self._allowed_only = allowed_only
        self._dispatcher = dispatcher
        self._registry = registry
        self._show = show
        self._holder = {"consumer": consumer, "run": run or uuid.uuid4().hex[:16]}
        self._wait_s = min(wait_s, MAX_WAIT_S)
        self.server = registry.server_for("pending-actions")
        self._consumer = Consumer(self, max_at_once=MAX_NOTICES, grace_s=grace_s, sleep=sleep)

    async def run(self, shutdown: Shutdown) -> None:
        """Bring notices to their chats until ``shutdown`` is requested."""
        if self.server is not None:
            await self._consumer.run(shutdown)

    async def poll(self, acks: list[str | Undelivered]) -> Batch[Notice]:
        return Batch((await self._next(acks, MAX_NOTICES, self._wait_s)).notices)

    async def flush(self, acks: list[str | Undelivered]) -> None:
        """The reports no poll took, in one last call that waits for nothing new: the next
        run does not show the delivered again, and tries the others when their time comes."""
        await self._next(acks, 1, 0)

    async def _next(self, acks: list[str | Undelivered], most: int, wait_s: float) -> Notices:
        arguments: dict[str, object] = {**self._holder, "max": most, "wait_s": wait_s}
        if done := [ack for ack in acks if isinstance(ack, str)]:
            arguments["ack"] = done
        if failed := [ack.model_dump() for ack in acks if isinstance(ack, Undelivered)]:
            arguments["undelivered"] = failed
        return await self._registry.call_as(self.server or "", "next_notices", arguments, Notices)

    def id(self, item: Notice) -> str:
        return item.key

    async def handle(self, item: Notice) -> str | Undelivered:
        """One notice: its key when it is done, else why not (Left: the confirm tool gave
        no answer; it comes back when its lease runs out, with a fresh approval)."""
        notice = item
        if notice.type == "show" and (why := self._unreachable(notice)):
            return Undelivered(key=notice.key, reason=why, final=True)
        try:
            done = await (self._execute if notice.type == "execute" else self._present)(notice)
        except NoticeUnsent as error:
            logger.warning("notice %s: not sent (%s); tried again later", notice.key, error)
            return Undelivered(key=notice.key, reason=_said(error))
        except NoticeRefused as error:
            logger.warning("notice %s: the message was refused (%s)", notice.key, error)
            if notice.type == "show":  # its proposals fail, saying why
                return Undelivered(key=notice.key, reason=_said(error), final=True)
            done = True  # the change is made and recorded: only its message is lost
        except Exception:
            logger.exception("notice %s: failed; tried again later", notice.key)
            return Undelivered(key=notice.key, reason=OUR_ERROR)
        if not done:
            raise Left("the confirm tool gave no answer")
        logger.info("notice %s (%s from %s) handled", notice.key, notice.type, notice.client)
        return notice.key

    def _unreachable(self, notice: Notice) -> str:
        """Why the notice's user may not be shown it, logged with the fix ("": they may)."""
        runtime = self._dispatcher.agents.get(notice.agent)
        if runtime is None:
            logger.warning("notice %s: agent %s is not in this fleet", notice.key, notice.agent)
            return f"the assistant has no agent {notice.agent} to show it"
        if self._allowed_only and notice.user_id not in runtime.agent.entry.allowed_user_ids:
            logger.warning(
                "notice %s: %s proposed a change for user %s, who is not in agents.%s."
                "allowed_user_ids: not shown (add the user, or bind the client to one who is)",
                notice.key, notice.client, notice.user_id, notice.agent,
            )  # fmt: skip
            return (
                f"user {notice.user_id} is not one {notice.agent} talks to on Telegram (the "
                "operator can add them to its allowed users)"
            )
        return ""

    async def _present(self, notice: Notice) -> bool:
        """A client's proposals, with their buttons, in the user's chat."""
        batch = notice.batch
        if batch is None:
            logger.warning("notice %s: a show without its batch; acked", notice.key)
            return True
        lines = [Line.of(view) for view in batch.actions]
        text = batch.text or f"From {notice.client_label}:"
        await self._show(notice, render(text, batch.batch_id, lines))
        told = [
            f"{notice.client_label} proposed, waiting for the user's tap: {view.summary}"
            for view in batch.actions
        ]
        await self._dispatcher.desk.tell(notice.agent, notice.chat_id, told)
        return True

    async def _execute(self, notice: Notice) -> bool:
        """A client's change its agent's policy or a running grant allows: done, recorded,
        and the user told. False when the confirm tool gave no answer (handed over again)."""
        decision = notice.decision
        if decision is None or not decision.ok:
            logger.warning("notice %s: an execute without an approval; acked", notice.key)
            return True
        desk = self._dispatcher.desk
        by = f"{notice.client_label} proposed it, allowed without a tap,"
        outcome = await desk.execute(decision, by=by)
        if outcome.state == "executing":
            return False
        runtime = self._dispatcher.agents.get(notice.agent)
        zone = runtime.agent.entry.timezone if runtime is not None else "UTC"
        change = Change(
            notice.agent, notice.user_id, notice.client, decision.server or "", decision.kind or ""
        )
        why = await self._dispatcher.consent.allowed(change, None, zone)
        change_line = labelled(decision.server or "", decision.summary or "")
        summary = f"From {notice.client_label}: {change_line}"
        if outcome.state == "done":
            text = f"✅ {summary}: done ({why}) — {message_of(outcome.result)}"
        else:
            text = f"⚠️ {summary} — failed: {outcome.error or 'unknown error'}"
        # Recorded before the user is told: a notice handed over again (its message not
        # sent) finds the action done, and its confirm tool answers with the first result.
        await desk.settled(notice.agent, notice.chat_id, [outcome])
        if not self._unreachable(notice):  # the policy allowed it: done, even where nobody is told
            await self._show(notice, Reply(text))
        return True


def _said(error: Exception) -> str:
    """An exception's words as a reason for a report (``Undelivered.reason``)."""
    return (str(error).strip() or type(error).__name__)[:500]
