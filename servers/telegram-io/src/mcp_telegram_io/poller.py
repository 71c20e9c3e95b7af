"""One long-poll loop per bot: getUpdates → durable inbox → only then the offset moves on.

    state         meaning                                        what the loop does
    starting      not yet answered by Telegram                   getMe, deleteWebhook once
    ok            the last getUpdates answered                   poll again at once
    retrying      network trouble, 5xx or 429                    capped exponential backoff, jitter
    conflict      409: another poller (or a webhook) uses the token   2, 4, 8 … 60 s, jitter
    unauthorized  401: the token was revoked                     stop this bot; the others go on
    parked        the kill-switch file $DATA_DIR/inbox-disabled  poll nothing until it is gone

A 409 means another process holds the token. Only a poll can tell whether it is still there,
and each poll ends the other's long poll (the newer request wins), so the waits start short (a
restarted container's predecessor is gone within seconds) and double while the conflict lasts,
up to ``conflict_backoff_max_s``: two instances left running stop fighting over every update,
and polling resumes within one wait of the other leaving. Each wait is 80-100 % of its step, so
two instances do not stay in step.

An update is confirmed to Telegram only by the next getUpdates, whose offset is
written in the same transaction as the updates: a crash anywhere means Telegram
hands the batch over again and the inbox keeps it once.
"""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import anyio
from telegram import Bot, Update
from telegram.error import Conflict, Forbidden, InvalidToken, RetryAfter, TelegramError

from mcp_telegram_io.fleet import BotConfig
from mcp_telegram_io.store import InboxStore
from meshkit.storage import StorageFailed

logger = logging.getLogger(__name__)

ALLOWED_UPDATES = ("message", "callback_query")
FAILING = frozenset({"conflict", "unauthorized", "parked", "failed"})
STORAGE_RETRY_S = 5.0  # a batch the inbox could not store is fetched again after this


@dataclass
class BotState:
    state: str = "starting"
    detail: str | None = None
    since: float = 0.0
    username: str | None = None  # the bot's @username, once getMe has answered


@dataclass
class PollPolicy:
    timeout_s: int = 25
    backoff_initial_s: float = 1.0
    backoff_max_s: float = 60.0
    conflict_backoff_s: float = 2.0  # the first wait after a 409; doubles while they go on
    conflict_backoff_max_s: float = 60.0
    park_check_s: float = 1.0
    sleep: Callable[[float], Awaitable[None]] = field(default=anyio.sleep, repr=False)


def seconds(value: float | timedelta) -> float:
    """PTB gives ``retry_after`` as int or, with PTB_TIMEDELTA, as a timedelta."""
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


class Poller:
    def __init__(
        self,
        config: BotConfig,
        bot: Bot,
        store: InboxStore,
        *,
        kill_switch: Path,
        policy: PollPolicy,
        clock: Callable[[], float],
        on_arrival: Callable[[str, list[Update]], Awaitable[None]],
    ) -> None:
        self.config = config
        self.status = BotState()
        self._bot = bot
        self._store = store
        self._kill_switch = kill_switch
        self._policy = policy
        self._clock = clock
        self._on_arrival = on_arrival
        self._conflicts = 0  # 409s in a row: the conflict backoff's step

    async def run(self) -> None:
        """Poll until cancelled, or until Telegram says the token is no longer valid.

        The boundary of one bot: a bug stops this bot's poller only, logged in full and
        shown as ``failed`` in /health, instead of being retried as if the network failed.
        """
        try:
            await self._poll()
        except Exception:
            logger.exception("bot %s: the poller stopped on an internal error", self.config.agent)
            self._set("failed", "stopped on an internal error; see the log")

    async def _poll(self) -> None:
        policy = self._policy
        initialized = False
        delay = policy.backoff_initial_s
        offset = await self._store.offset(self.config.bot_id)
        while True:
            if self._kill_switch.exists():
                if self.status.state != "parked":
                    logger.warning(
                        "bot %s: parked (%s exists)", self.config.agent, self._kill_switch
                    )
                self._set("parked", f"{self._kill_switch.name} present")
                await policy.sleep(policy.park_check_s)
                continue
            try:
                if not initialized:
                    await self._bot.initialize()  # getMe: a revoked token shows here
                    self.status.username = self._bot.username
                    await self._bot.delete_webhook(drop_pending_updates=False)
                    initialized = True
                    logger.info("bot %s: polling getUpdates", self.config.agent)
                    self._set("ok", None)
                updates = await self._bot.get_updates(
                    offset=offset,
                    timeout=policy.timeout_s,
                    allowed_updates=list(ALLOWED_UPDATES),
                )
            except TelegramError as error:
                wait = self._failed(error, delay)
                if wait is None:
                    return
                await policy.sleep(wait)
                if self.status.state == "retrying":
                    delay = min(delay * 2, policy.backoff_max_s)
                continue
            delay = policy.backoff_initial_s
            self._conflicts = 0
            if self.status.state != "ok":
                logger.info("bot %s: polling again", self.config.agent)
            self._set("ok", None)
            if updates:
                try:
                    offset = await self._keep(updates)
                except StorageFailed:  # the store has said so; the same updates come again
                    await policy.sleep(STORAGE_RETRY_S)

    def _failed(self, error: TelegramError, delay: float) -> float | None:
        """Log and record a failed call; the wait before the next one (None: stop for good).

        The token's own text is never logged: PTB puts it in InvalidToken's message.
        """
        agent = self.config.agent
        if isinstance(error, InvalidToken | Forbidden):
            status = "401" if isinstance(error, InvalidToken) else "403"
            logger.error("bot %s: Telegram refused the token (%s): this bot stops", agent, status)
            self._set("unauthorized", f"the token was refused ({status}); revoked?")
            return None
        if isinstance(error, Conflict):
            return self._conflicted()
        if isinstance(error, RetryAfter):
            wait = seconds(error.retry_after)
            logger.warning("bot %s: getUpdates rate-limited; waiting %g s", agent, wait)
            self._set("retrying", "rate limited")
            return wait
        # Network trouble, 5xx, an answer PTB cannot read: back off. (A bug is no
        # TelegramError: it ends the poller, see server.run_pollers.)
        logger.warning(
            "bot %s: getUpdates failed (%s); retrying in %.1f s", agent, type(error).__name__, delay
        )
        self._set("retrying", type(error).__name__)
        return delay * random.uniform(0.5, 1.0)  # noqa: S311 (jitter)

    def _conflicted(self) -> float:
        """The wait after a 409: 2, 4, 8 … up to the cap, each 80-100 % of its step."""
        agent, policy = self.config.agent, self._policy
        step: float = min(
            policy.conflict_backoff_s * 2.0**self._conflicts, policy.conflict_backoff_max_s
        )
        wait = step * random.uniform(0.8, 1.0)  # noqa: S311 (jitter)
        if self._conflicts == 0:
            logger.error(
                "bot %s: 409 CONFLICT: another process is polling this bot's token (or a "
                "webhook is set); stop the other instance. Retrying in %.1f s",
                agent,
                wait,
            )
        else:
            logger.warning("bot %s: still in conflict (409); retrying in %.1f s", agent, wait)
        self._conflicts = min(self._conflicts + 1, 30)  # 2**30 steps: far past any cap
        self._set(
            "conflict", f"another poller or a webhook uses this token; next try in {wait:.0f} s"
        )
        return wait

    async def _keep(self, updates: tuple[Update, ...]) -> int:
        """Write the batch and the offset after it; the next getUpdates confirms them."""
        next_offset = max(u.update_id for u in updates) + 1
        rows = [(u.update_id, json.dumps(u.to_dict(), ensure_ascii=False)) for u in updates]
        writers = sorted({str(u.message.chat.id) for u in updates if u.message is not None})
        new = await self._store.record(
            self.config.bot_id, self.config.agent, rows, next_offset, self._clock(), writers
        )
        logger.info("bot %s: %d updates in (%d new)", self.config.agent, len(updates), new)
        await self._on_arrival(self.config.agent, list(updates))
        return next_offset

    def _set(self, state: str, detail: str | None) -> None:
        if self.status.state != state:
            self.status = BotState(state, detail, self._clock(), self.status.username)
        else:
            self.status.detail = detail
