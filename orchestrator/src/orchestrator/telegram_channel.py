"""The Telegram channel: telegram-io's inbox in, dispatch, replies out, then ack.

    next_updates (long poll) ─► gate ─► per-chat queue ─► dispatch ─► send_message ─► ack

- The gate drops, silently and with a log line, anything not from an allowed user
  in a private chat (acked, so it is not handed over again).
- Turns are serial within a chat and concurrent across chats and agents; ``/stop``
  skips the queue and cancels the chat's running turn. "typing…" shows from 0.3 s
  into a turn, refreshed every 4 s.
- An update is acked only after its reply was sent. A crash before that means
  telegram-io hands it over again when its lease runs out; the reply's idempotency
  key (the update id) makes sure it is delivered once.
- An update handed over again while this process still works on it is ignored;
  one it has finished is acked again.
- After a batch, the next long poll waits until the batch is handled, or
  ``repoll_after_s`` (50 ms) at the latest. Updates come at human pace, so it rarely
  has anything to fetch that soon; on a small machine its work (here and in
  telegram-io) would otherwise compete for the CPU with the replies and taps just
  started. A turn that runs longer (a model thinking) does not hold it back.
"""

from __future__ import annotations

import logging
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from orchestrator.dispatch import Dispatcher, Reply
from orchestrator.registry import Registry
from orchestrator.turn import AgentRuntime

logger = logging.getLogger(__name__)

TELEGRAM_IO = "telegram_io"
MEDIA_REPLY = (
    "I can only read text for now: photos, voice notes, stickers and files are not "
    "supported. Tell me in words what you need."
)
DONE_MEMORY = 10_000  # update ids remembered as finished, to ack their redeliveries

Update = dict[str, Any]


class TelegramIOFailed(Exception):
    """A call to telegram-io did not succeed."""


class TelegramIOUnavailable(TelegramIOFailed):
    """telegram-io did not answer (down, restarting, lost call): try again later."""


class TelegramRefused(TelegramIOFailed):
    """telegram-io answered with an error (blocked user, bad request): trying again won't help."""


class TelegramChannel:
    def __init__(
        self,
        dispatcher: Dispatcher,
        registry: Registry,
        *,
        batch: int = 20,
        wait_s: float = 20.0,
        typing_after_s: float = 0.3,
        typing_every_s: float = 4.0,
        repoll_after_s: float = 0.05,
        max_turns: int = 16,
        sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
    ) -> None:
        self._dispatcher = dispatcher
        self._registry = registry
        self._batch = batch
        self._wait_s = wait_s
        self._typing_after_s = typing_after_s
        self._typing_every_s = typing_every_s
        self._repoll_after_s = repoll_after_s
        self._turns = anyio.CapacityLimiter(max_turns)
        self._sleep = sleep
        self._queues: dict[tuple[str, str], deque[Update]] = {}
        self._active: set[str] = set()
        self._finished = anyio.Event()  # set (and replaced) whenever an update is let go
        self._done: OrderedDict[str, None] = OrderedDict()

    async def run(self) -> None:
        """Poll telegram-io and dispatch until cancelled."""
        dispatcher = self._dispatcher
        dispatcher.status_probes.append(self._status_lines)
        delay = 0.5
        async with anyio.create_task_group() as tasks:
            while True:
                try:
                    updates = await self._call(
                        "next_updates", {"max": self._batch, "wait_s": self._wait_s}
                    )
                except TelegramIOFailed as error:
                    logger.warning("telegram-io: next_updates failed (%s); retrying", error)
                    await self._sleep(delay)
                    delay = min(delay * 2, 10.0)
                    continue
                delay = 0.5
                batch = updates.get("updates", [])
                for update in batch:
                    await self._accept(update, tasks)
                if batch:
                    await self._settle({str(u.get("id")) for u in batch})

    async def _settle(self, uids: set[str]) -> None:
        """Until none of ``uids`` is being handled, ``repoll_after_s`` at the latest."""
        with anyio.move_on_after(self._repoll_after_s):
            while not uids.isdisjoint(self._active):
                await self._finished.wait()

    async def _accept(self, update: Update, tasks: anyio.abc.TaskGroup) -> None:
        uid = str(update.get("id"))
        if uid in self._active:
            return  # a redelivery of what is being answered right now
        if uid in self._done:
            await self._ack(uid)
            return
        runtime = self._dispatcher.agents.get(str(update.get("agent")))
        if runtime is None or not _allowed(runtime, update):
            logger.info(
                "dropped update %s: agent=%s user=%s chat_type=%s (not allowed)",
                uid,
                update.get("agent"),
                update.get("user_id"),
                update.get("chat_type"),
            )
            await self._finish(uid)
            return
        chat = str(update["chat_id"])
        self._active.add(uid)
        if update.get("kind") == "callback" or (
            update.get("kind") == "text" and _command(update) == "/stop"
        ):
            # Not behind the chat's queue: /stop must reach the running turn, and a tap is
            # answered at once even while a turn runs (pending-actions keeps taps atomic).
            tasks.start_soon(self._handle_now, runtime, update)
            return
        key = (runtime.id, chat)
        queue = self._queues.get(key)
        if queue is not None:
            queue.append(update)  # its worker is running and takes it in turn
            return
        self._queues[key] = deque([update])
        tasks.start_soon(self._work, key, name=f"chat:{runtime.id}:{chat}")

    async def _work(self, key: tuple[str, str]) -> None:
        queue = self._queues[key]
        try:
            while queue:
                update = queue[0]
                async with self._turns:
                    await self._handle_now(self._dispatcher.agents[key[0]], update)
                queue.popleft()
        finally:
            del self._queues[key]

    async def _handle_now(self, runtime: AgentRuntime, update: Update) -> None:
        """Answer an accepted update (in ``_active`` since ``_accept``), then let it go."""
        uid = str(update["id"])
        try:
            reply = await self._answer(runtime, update)
            if reply is not None and reply.text:
                await self._send(runtime.id, update, reply)
            await self._finish(uid)
        except TelegramIOUnavailable as error:
            # Not acked: telegram-io hands it over again when the lease runs out.
            logger.warning("update %s: telegram-io failed (%s); left for redelivery", uid, error)
        except TelegramRefused as error:
            logger.warning("update %s: the reply was refused (%s); acked", uid, error)
            await self._finish(uid)
        except Exception:
            logger.exception("update %s: failed; acked so it does not come back forever", uid)
            await self._finish(uid)
        finally:
            self._active.discard(uid)
            self._finished.set()
            self._finished = anyio.Event()

    async def _answer(self, runtime: AgentRuntime, update: Update) -> Reply | None:
        agent, chat, kind = runtime.id, str(update["chat_id"]), update.get("kind")
        if kind == "callback":
            await self._tap(agent, chat, update)
            return None
        if kind == "media":
            return Reply(MEDIA_REPLY)
        if kind != "text":
            return None
        typing = anyio.CancelScope()

        async def keep_typing() -> None:
            with typing:
                await self._keep_typing(agent, chat)

        async def deliver(reply: Reply) -> None:
            typing.cancel()  # the answer is here: no more "typing…"
            await self._send(agent, update, reply)

        failed: TelegramIOFailed | None = None
        async with anyio.create_task_group() as turn:
            turn.start_soon(keep_typing)
            try:
                await self._dispatcher.on_text(
                    agent,
                    chat,
                    str(update.get("text") or ""),
                    message_id=str(update["id"]),
                    user_id=str(update.get("user_id")),
                    deliver=deliver,
                )
            except TelegramIOFailed as error:
                failed = error  # raised below, as itself rather than in an exception group
            finally:
                typing.cancel()
        if failed is not None:
            raise failed
        return None  # delivered already

    async def _tap(self, agent: str, chat: str, update: Update) -> None:
        """A button tap never reaches the model: answered, done once, its message edited."""
        answered = False

        async def answer(text: str) -> None:
            nonlocal answered
            answered = True
            await self._best_effort(
                "answer_callback", agent=agent, callback_id=update["callback_id"], text=text
            )

        async def edit(reply: Reply) -> None:
            message_id = update.get("message_id")
            if not reply.text or message_id is None:
                return
            rows = [[{"label": b.label, "data": b.data} for b in row] for row in reply.buttons]
            arguments: dict[str, Any] = {
                "agent": agent,
                "chat_id": chat,
                "message_id": message_id,
                "text": reply.text[:4096],
            }
            if rows:
                arguments["buttons"] = rows
            try:
                await self._call("edit_message", arguments)
            except TelegramIOFailed as error:  # done is done: the notice told the user
                logger.warning("update %s: the message could not be edited (%s)", uid, error)

        uid = update["id"]
        user, data = str(update.get("user_id")), str(update.get("callback_data") or "")
        await self._dispatcher.on_callback(agent, chat, user, data, answer, edit)
        if not answered:
            await answer("")

    async def _keep_typing(self, agent: str, chat: str) -> None:
        """ "typing…" from a moment into the turn until it ends (Telegram shows it ~5 s).

        Not at once: an answer within ``typing_after_s`` (commands, a fast model) needs
        no indicator, and each chat action is a Bot API call competing with the turn.
        """
        await self._sleep(self._typing_after_s)
        while True:
            await self._best_effort("send_chat_action", agent=agent, chat_id=chat)
            await self._sleep(self._typing_every_s)

    async def _send(self, agent: str, update: Update, reply: Reply) -> None:
        buttons = [[{"label": b.label, "data": b.data} for b in row] for row in reply.buttons]
        arguments: dict[str, Any] = {
            "agent": agent,
            "chat_id": str(update["chat_id"]),
            "text": reply.text,
            "idempotency_key": f"reply:{update['id']}",
        }
        if buttons:
            arguments["buttons"] = buttons
        try:
            await self._call("send_message", arguments)
        except TelegramIOUnavailable:
            # The key makes a second try safe: parts already delivered are not sent again.
            await self._call("send_message", arguments)

    async def _finish(self, uid: str) -> None:
        await self._ack(uid)
        self._done[uid] = None
        while len(self._done) > DONE_MEMORY:
            self._done.popitem(last=False)

    async def _ack(self, uid: str) -> None:
        try:
            await self._call("ack", {"ids": [uid]})
        except TelegramIOFailed as error:
            logger.warning("ack %s failed (%s); it will be handed over and acked again", uid, error)

    async def _status_lines(self) -> list[str]:
        try:
            status = await self._call("status", {})
        except TelegramIOFailed:
            return ["Telegram inbox: unavailable"]
        bots = ", ".join(f"{b['agent']} {b['state']}" for b in status.get("bots", []))
        parked = " · PARKED (kill switch)" if status.get("parked") else ""
        return [f"Telegram inbox: {status.get('pending', 0)} waiting · bots: {bots}{parked}"]

    async def _best_effort(self, tool: str, **arguments: Any) -> None:
        try:
            await self._call(tool, arguments)
        except TelegramIOFailed as error:
            logger.info("%s failed: %s", tool, error)

    async def _call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        tool = self._registry.find(TELEGRAM_IO, name)
        if tool is None:
            raise TelegramIOUnavailable(f"{TELEGRAM_IO}.{name} is not available (server down?)")
        outcome = await self._registry.call(tool, arguments)
        if not outcome.ok:
            error = TelegramIOUnavailable if not outcome.answered else TelegramRefused
            raise error(outcome.output[:300])
        return outcome.structured or {}


def _allowed(runtime: AgentRuntime, update: Update) -> bool:
    entry = runtime.agent.entry
    return (
        update.get("chat_type") == "private"
        and update.get("chat_id") is not None
        and str(update.get("user_id")) in entry.allowed_user_ids
    )


def _command(update: Update) -> str:
    text = str(update.get("text") or "").strip()
    return text.split(maxsplit=1)[0].split("@", 1)[0].lower() if text.startswith("/") else ""
