"""Going live on Telegram: say which bots listen, publish their commands, stop if none can.

Once telegram-io's pollers have heard from Telegram (getMe), each bot is announced with its
@username and a link to open a chat; its commands go to Telegram's "/" menu. A bot whose
token Telegram refused is named with the fix; when no bot of the fleet can run, there is
nothing to do: :class:`NoBotCanRun` stops the start (exit 2). Bots still starting or
retrying (network trouble) are waited for a while, then reported and left to go on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

import anyio

from meshkit.wire.telegram_io import BotCommand, BotStatus
from orchestrator.channels.telegram_io import TelegramIO, TelegramIOFailed
from orchestrator.core.runtime import AgentRuntime

logger = logging.getLogger(__name__)

REFUSED = "{name} ({agent}): Telegram refused the token: check it with @BotFather"
READY = "{name} is listening as @{username} — open https://t.me/{username} and say hello"
NOT_YET = "{name} ({agent}): cannot reach Telegram yet ({detail}); it keeps trying"


class NoBotCanRun(Exception):
    """Every bot of the fleet was refused by Telegram: the lines say which and what to do."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


def menu(commands: Mapping[str, str]) -> list[BotCommand]:
    """The commands for Telegram's "/" menu."""
    return [BotCommand(command=c.lstrip("/"), description=d) for c, d in commands.items()]


async def go_live(
    io: TelegramIO,
    agents: Mapping[str, AgentRuntime],
    say: Callable[[str], None],
    commands: Mapping[str, str],
    *,
    wait_s: float = 20.0,
    every_s: float = 0.2,
) -> None:
    """Announce the fleet once telegram-io knows how each bot stands (``wait_s`` at most)."""
    bots = await _settled(io, set(agents), wait_s, every_s)
    refused = [
        REFUSED.format(name=agents[b.agent].agent.entry.name, agent=b.agent)
        for b in bots
        if b.state == "unauthorized"
    ]
    if refused and len(refused) == len(agents):
        raise NoBotCanRun(refused)
    for line in refused:
        say(line)
    for bot in bots:
        name = agents[bot.agent].agent.entry.name if bot.agent in agents else bot.agent
        if bot.state == "ok" and bot.username:
            say(READY.format(name=name, username=bot.username))
            try:
                await io.set_commands(bot.agent, menu(commands))
            except TelegramIOFailed as error:  # the "/" menu is a convenience: go on
                logger.warning("commands of %s not published: %s", bot.agent, error)
        elif bot.state in ("starting", "retrying"):
            say(NOT_YET.format(name=name, agent=bot.agent, detail=bot.detail or bot.state))


async def _settled(
    io: TelegramIO, agents: set[str], wait_s: float, every_s: float
) -> list[BotStatus]:
    """The bots' states, once none is starting (or after ``wait_s``)."""
    bots: list[BotStatus] = []
    with anyio.move_on_after(wait_s):
        while True:
            try:
                bots = [b for b in (await io.status()).bots if b.agent in agents]
            except TelegramIOFailed as error:
                logger.info("telegram-io status: %s", error)
            if bots and all(b.state not in ("starting", "retrying") for b in bots):
                break
            await anyio.sleep(every_s)  # telegram-io's state, in another component: polled
    return bots
