"""The telegram-io MCP surface: internal tools over the inbox, the sender and media files.

Every tool is ``internal``: only the orchestrator calls them, the model never
sees them. The pollers run in the server's lifespan, one per bot of the fleet.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from importlib.metadata import version
from typing import Annotated, Any, TypeVar

import anyio
from fastmcp import FastMCP
from pydantic import Field
from telegram import Bot

from mcp_telegram_io.fleet import BotConfig, fleet_bots
from mcp_telegram_io.media import Media
from mcp_telegram_io.media_tools import add_media_tools
from mcp_telegram_io.models import (
    Acked,
    BotCommand,
    Button,
    Done,
    Extended,
    Sent,
    Status,
    Updates,
)
from mcp_telegram_io.pacer import Pacer
from mcp_telegram_io.poller import Poller, PollPolicy
from mcp_telegram_io.request import Httpx2Request, SharedClient
from mcp_telegram_io.sender import ButtonSpec, Sender
from mcp_telegram_io.service import BadHolder, Inbox
from mcp_telegram_io.settings import TelegramIOSettings
from mcp_telegram_io.store import InboxStore
from meshkit.params import IntegerId
from meshkit.queue import Holder
from meshkit.server import create_server
from meshkit.settings import load_settings
from meshkit.stopping import Stopping
from meshkit.tool_classes import internal
from meshkit.wire.pause import Paused
from meshkit.yaml_config import ConfigError

logger = logging.getLogger(__name__)

SEND_CONNECTIONS = 16
Delivered = TypeVar("Delivered", Sent, Done)
INSTRUCTIONS = (
    "Telegram I/O for the clawmesh orchestrator: a durable inbox of the bots' updates "
    "(next_updates leases them, extend_leases keeps them while working, ack after the reply "
    "is sent, or send_message's ack with it), sending with Telegram "
    "formatting, pacing and idempotency, and the files of media updates (download_media)."
)

Agent = Annotated[str, Field(min_length=1, max_length=200, description="agent id (its bot)")]
ChatId = Annotated[str, Field(min_length=1, max_length=64, description="Telegram chat id")]
Consumer = Annotated[
    str | None,
    Field(
        pattern=r"^[A-Za-z0-9_.-]{1,64}$",
        max_length=64,
        description="who consumes the inbox (a stable name); needs run",
    ),
]
Run = Annotated[
    str | None,
    Field(
        pattern=r"^[A-Za-z0-9_.-]{1,64}$",
        max_length=64,
        description="this run of the consumer (new at each start): a new run releases "
        "what the consumer's earlier runs held",
    ),
]
Buttons = Annotated[
    list[Annotated[list[Button], Field(max_length=8)]] | None,
    Field(
        max_length=100,  # Telegram's limits: 8 buttons a row, 100 in all
        description="inline keyboard: rows of buttons, under the (last) message",
    ),
]
CallbackId = Annotated[str, Field(min_length=1, max_length=200, description="the tap's id")]
Notice = Annotated[str | None, Field(max_length=1000, description="a short notice")]
AckIds = Annotated[
    list[Annotated[str, Field(max_length=100)]] | None,
    Field(max_length=1000, description="'id' fields of updates this call finishes: acked"),
]
UpdateIds = Annotated[
    list[Annotated[str, Field(max_length=100)]],
    Field(max_length=1000, description="'id' fields of updates"),
]


def no_bots_help(path: object) -> str:
    return (
        f"{path}: no agent has a bot token. Create a bot with @BotFather, then set the "
        "variable its bot_token_env names in .env, e.g. TELEGRAM_BOT_TOKEN=123456:ABC... "
        "(in containers, make up copies it into secrets/bot_tokens)"
    )


def build_server(
    settings: TelegramIOSettings | None = None,
    *,
    clock: Callable[[], float] = time.time,
    policy: PollPolicy | None = None,
    stopping: Stopping | None = None,
    polling: bool = True,
) -> FastMCP[Any]:
    """The telegram-io server; ``settings`` default to the environment (embedded mode).

    ``stopping`` (served mode) ends open long polls as soon as the process is asked to stop.
    ``polling=False``: the inbox and the sender without the bots' pollers, for a second
    process on the database of a running one (the operator's ``clawmesh`` in embedded
    mode): two pollers of one token would fight over it (409).
    """
    settings = settings or load_settings(TelegramIOSettings)
    configs = fleet_bots(settings)
    if not configs:
        raise ConfigError(no_bots_help(settings.agents))
    store = InboxStore(settings.db_path, max_bytes=settings.max_db_bytes, clock=clock)
    # One HTTP client for the fleet: a connection for each bot's long poll, 16 for sends.
    client = SharedClient(connections=SEND_CONNECTIONS + len(configs))
    bots = {agent: _bot(config, settings, client) for agent, config in configs.items()}
    sender = Sender(
        bots,
        store,
        Pacer(settings.pace_s, settings.pace_burst, time.monotonic),
        clock,
        max_retry_after_s=settings.max_retry_after_s,
    )
    inbox = Inbox(settings, store, clock=clock, sent_under=sender.sent_under)
    if stopping is not None:
        stopping.on_stop(inbox.stop_waiting)
    policy = policy or PollPolicy(
        timeout_s=settings.poll_timeout_s,
        backoff_max_s=settings.backoff_max_s,
        conflict_backoff_s=settings.conflict_backoff_s,
        conflict_backoff_max_s=settings.conflict_backoff_max_s,
    )

    async def run_pollers() -> None:
        async with anyio.create_task_group() as tasks:
            for agent, config in configs.items():
                poller = Poller(
                    config,
                    bots[agent],
                    store,
                    kill_switch=settings.kill_switch,
                    policy=policy,
                    clock=clock,
                    on_arrival=inbox.arrived,
                )
                inbox.pollers[agent] = poller
                tasks.start_soon(poller.run, name=f"poll:{agent}")
            tasks.start_soon(inbox.prune_forever, name="prune")

    @asynccontextmanager
    async def lifespan(_: FastMCP[Any]) -> AsyncIterator[None]:
        # A task of its own, not a task group around the yield: fastmcp closes lifespans
        # inside a shielded cancel scope, which a task group opened here cannot exit from.
        loop = asyncio.get_running_loop()
        runner = loop.create_task(run_pollers(), name="telegram-pollers") if polling else None
        try:
            yield
        finally:
            if runner is not None:
                runner.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await runner
            for bot in bots.values():
                await _shutdown(bot)

    mcp = create_server(
        "telegram-io",
        version=version("mcp-telegram-io"),
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        checks={"database": store.ping, "bots": inbox.check_bots},
        stores=[store],
    )

    @mcp.tool(**internal(title="Next updates"))
    async def next_updates(
        max: Annotated[int, Field(ge=1, le=100, description="most updates to return")] = 20,
        wait_s: Annotated[
            float, Field(ge=0, le=50, description="long-poll: wait this long for one to arrive")
        ] = 0,
        consumer: Consumer = None,
        run: Run = None,
    ) -> Updates:
        """Lease the oldest waiting updates of every bot (messages and button taps).

        Each is handed to no one else for the lease time (``lease_s``); extend the leases
        while working on them, ack each once handled, or it is handed out again when its
        lease runs out. The first call of a new run of a consumer releases what its earlier
        runs held.
        """
        return await inbox.next_updates(max, wait_s, _holder(consumer, run))

    @mcp.tool(**internal(title="Extend leases", idempotent=True))
    async def extend_leases(
        ids: UpdateIds,
        consumer: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$", max_length=64)],
        run: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$", max_length=64)],
    ) -> Extended:
        """Keep the updates this run is still working on for another lease time."""
        return Extended(extended=await inbox.extend(ids, Holder(consumer, run)))

    @mcp.tool(**internal(title="Acknowledge updates", idempotent=True))
    async def ack(
        ids: UpdateIds,
    ) -> Acked:
        """Mark updates as handled: they are never handed out again."""
        return Acked(acked=await inbox.ack(ids))

    @mcp.tool(**internal(title="Send a message"))
    async def send_message(  # noqa: PLR0917 (a tool's parameters are its schema)
        agent: Agent,
        chat_id: ChatId,
        text: Annotated[str, Field(min_length=1, max_length=1_000_000, description="Markdown")],
        buttons: Buttons = None,
        reply_to: Annotated[IntegerId | None, Field(description="message id to reply to")] = None,
        idempotency_key: Annotated[
            str | None,
            Field(max_length=200, description="the same key again never delivers twice"),
        ] = None,
        ack: Annotated[
            list[Annotated[str, Field(max_length=100)]] | None,
            Field(
                max_length=1000,
                description="'id' fields of updates this message answers: acked once it is "
                "sent (or was, under this idempotency_key), as ack does",
            ),
        ] = None,
        replace: Annotated[
            IntegerId | None,
            Field(
                description="a message of the bot this one takes the place of (a streamed "
                "reply's placeholder): the first part is that message, edited"
            ),
        ] = None,
    ) -> Sent:
        """Send Markdown as Telegram-formatted messages, split at 4096 characters.

        At most 5 messages: a longer text ends with a line saying it was cut. With ``ack``,
        the updates it answers are acked once it is sent: no separate ack call.
        """
        return await _acked_after(
            sender.send_message(
                agent,
                chat_id,
                text,
                buttons=_buttons(buttons),
                reply_to=reply_to,
                key=idempotency_key,
                replace=replace,
            ),
            inbox,
            ack or [],
        )

    @mcp.tool(**internal(title="Edit a message", idempotent=True))
    async def edit_message(  # noqa: PLR0917 (a tool's parameters are its schema)
        agent: Agent,
        chat_id: ChatId,
        message_id: IntegerId,
        text: Annotated[str, Field(min_length=1, max_length=4096, description="Markdown")],
        buttons: Buttons = None,
        callback_id: CallbackId | None = None,
        notice: Notice = None,
        ack: AckIds = None,
    ) -> Done:
        """Replace a sent message's text and buttons (no buttons: they are removed).

        With ``callback_id``, the tap on it is answered first (``notice``, as
        answer_callback does); with ``ack``, the updates are acked once the edit is made
        (as ack does): a tap's outcome in one call.
        """
        return await _acked_after(
            sender.edit_message(
                agent,
                chat_id,
                message_id,
                text,
                _buttons(buttons),
                callback_id=callback_id,
                notice=notice,
            ),
            inbox,
            ack or [],
        )

    @mcp.tool(**internal(title="Answer a button tap", idempotent=True))
    async def answer_callback(
        agent: Agent,
        callback_id: CallbackId,
        text: Notice = None,
        alert: bool = False,
        ack: AckIds = None,
    ) -> Done:
        """Stop the button's spinner, with an optional notice (200 characters at most).

        With ``ack``, the updates are acked too (as ack does), whether Telegram still took
        the answer or not: a tap that changes nothing, in one call.
        """
        return await _acked_after(
            sender.answer_callback(agent, callback_id, text, alert), inbox, ack or []
        )

    @mcp.tool(**internal(title="Publish the bot's commands", idempotent=True))
    async def set_commands(
        agent: Agent,
        commands: Annotated[list[BotCommand], Field(min_length=1, max_length=100)],
    ) -> Done:
        """Set the bot's command menu (what Telegram lists when the user types "/")."""
        return await sender.set_commands(agent, [(c.command, c.description) for c in commands])

    _add_progress_tools(mcp, sender)
    _add_fleet_tools(mcp, inbox)
    media = Media(
        bots,
        store,
        max_file_bytes=settings.max_file_bytes,
        photo_max_side=settings.photo_max_side,
        keep_s=settings.keep_s,
    )
    add_media_tools(mcp, media)
    return mcp


def _add_progress_tools(mcp: FastMCP[Any], sender: Sender) -> None:
    """What a chat shows while a reply is on its way: "typing…", the reply as it is written."""

    @mcp.tool(**internal(title="Show a chat action", idempotent=True))
    async def send_chat_action(
        agent: Agent,
        chat_id: ChatId,
        action: Annotated[str, Field(pattern=r"^[a-z_]{1,32}$", max_length=32)] = "typing",
    ) -> Done:
        """Show 'typing…' (or another action) in the chat for about 5 seconds."""
        return await sender.send_chat_action(agent, chat_id, action)

    @mcp.tool(**internal(title="Show a draft", idempotent=True))
    async def send_draft(
        agent: Agent,
        chat_id: ChatId,
        draft_id: Annotated[
            int,
            Field(ge=1, le=2**31 - 1, description="the draft: one per reply, its changes animated"),
        ],
        text: Annotated[
            str, Field(max_length=4096, description="Markdown: the reply so far; '' thinking")
        ] = "",
    ) -> Done:
        """Show a reply still being written in a private chat (Telegram's message draft,
        a preview that lasts 30 s unless shown again); send_message then keeps the whole.

        Fails at once, never waiting: "Try again later: ..." when Telegram would not take it
        now, any other error when it refuses drafts here (show the reply another way).
        """
        return await sender.send_draft(agent, chat_id, draft_id, text)


def _add_fleet_tools(mcp: FastMCP[Any], inbox: Inbox) -> None:
    """The tools about the fleet as a whole: pausing an agent, the inbox's status."""

    @mcp.tool(**internal(title="Pause or resume an agent", idempotent=True))
    async def set_paused(
        agent: Agent,
        paused: Annotated[bool, Field(description="true: pause; false: resume")],
    ) -> Paused:
        """Pause an agent (the operator's ``clawmesh agent stop``): its updates are still
        received and kept, and handed to no one, until it is resumed; then they are handed
        out oldest first. Durable: a restart keeps it paused."""
        return await inbox.set_paused(agent, paused)

    @mcp.tool(**internal(title="Inbox status", read_only=True, idempotent=True))
    async def status() -> Status:
        """Each bot's polling state, the updates waiting, and whether the kill switch is on."""
        return await inbox.status()


def _holder(consumer: str | None, run: str | None) -> Holder | None:
    if consumer is None and run is None:
        return None
    if consumer is None or run is None:
        raise BadHolder("pass consumer and run together (or neither)")
    return Holder(consumer, run)


def _bot(config: BotConfig, settings: TelegramIOSettings, client: SharedClient) -> Bot:
    token = config.token.get_secret_value()
    api_base = settings.api_base.rstrip("/")
    return Bot(
        token,
        base_url=f"{api_base}/bot",
        base_file_url=f"{api_base}/file/bot",  # where download_media fetches files
        request=Httpx2Request(client, read_timeout=15, write_timeout=15),
        # Its own request object (PTB adds the long poll's timeout to its read timeout).
        get_updates_request=Httpx2Request(client, read_timeout=10),
    )


async def _acked_after(sending: Awaitable[Delivered], inbox: Inbox, ids: list[str]) -> Delivered:
    """A send (an edit, a tap's answer), then the updates it answers acked: only once it
    succeeded (a failed send acks nothing), and again each time it is repeated (under its
    key: sending nothing)."""
    sent = await sending
    if ids:
        sent.acked = await inbox.ack(ids)
    return sent


async def _shutdown(bot: Bot) -> None:
    try:
        await bot.shutdown()
    except Exception:  # closing connections at exit: nothing left to do about a failure
        logger.debug("bot shutdown failed", exc_info=True)


def _buttons(rows: list[list[Button]] | None) -> list[list[ButtonSpec]]:
    return [[ButtonSpec(b.label, b.data) for b in row] for row in rows or []]
