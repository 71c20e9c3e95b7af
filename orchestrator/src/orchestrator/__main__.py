"""``python -m orchestrator``: the whole fleet on Telegram (through telegram-io).

``python -m orchestrator chat [--agent ID]``: talk to one agent in this terminal.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence

import anyio
import fastmcp

from meshkit.logs import configure_logging
from meshkit.settings import fail, load_settings
from orchestrator.app import open_app
from orchestrator.channels.console import Console, stdin_lines
from orchestrator.channels.telegram import TelegramChannel
from orchestrator.config import ConfigError, load_fleet, load_registry
from orchestrator.settings import NO_LLM_HELP, OrchestratorSettings

logger = logging.getLogger("orchestrator")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m orchestrator", description=__doc__)
    commands = parser.add_subparsers(dest="command")
    chat = commands.add_parser("chat", help="talk to an agent in this terminal")
    chat.add_argument("--agent", help="agent id from agents.yaml (default: the first)")
    args = parser.parse_args(argv)

    fastmcp.settings.show_server_banner = False
    fastmcp.settings.check_for_updates = "off"
    settings = load_settings(OrchestratorSettings)
    secrets = [s.get_secret_value() for s in (settings.openai_api_key, settings.mesh_token) if s]
    chat = args.command == "chat"
    # In the console the conversation is on the terminal: only warnings go there too.
    quiet = chat and settings.log_level == "INFO"
    configure_logging("WARNING" if quiet else settings.log_level, secrets=secrets)
    if not settings.llm_configured:
        fail(NO_LLM_HELP)
    try:
        if chat:
            anyio.run(_chat, settings, args.agent)
        else:
            anyio.run(_telegram, settings)
    except ConfigError as error:
        fail(str(error))
    except KeyboardInterrupt:
        pass


async def _telegram(settings: OrchestratorSettings) -> None:
    entries = load_registry(settings.registry)
    if not any(entry.role == "telegram-io" for entry in entries.values()):
        raise ConfigError(
            f"{settings.registry}: servers: no server with 'role: telegram-io'; add it (see the "
            "shipped config/mcp_servers.yaml), or use `python -m orchestrator chat` for the console"
        )
    for agent in load_fleet(settings.agents, entries, root=settings.root).values():
        if not agent.entry.allowed_user_ids:
            raise ConfigError(
                f"{settings.agents}: agents.{agent.id}.allowed_user_ids: empty, so nobody may "
                "talk to this agent; set your numeric Telegram user id (TELEGRAM_USER_ID; "
                "@userinfobot tells it)"
            )
    async with open_app(settings) as app:
        logger.info("Telegram channel for %s", ", ".join(sorted(app.dispatcher.agents)))
        await TelegramChannel(app.dispatcher, app.registry).run()


async def _chat(settings: OrchestratorSettings, agent_id: str | None) -> None:
    async with open_app(settings, without=frozenset({"telegram-io"})) as app:
        agents = app.dispatcher.agents
        chosen = agent_id or next(iter(agents))
        if chosen not in agents:
            raise ConfigError(
                f"{settings.agents}: agents: no agent {chosen!r}; choose one of {sorted(agents)}"
            )
        await Console(app.dispatcher, chosen).run(stdin_lines())


if __name__ == "__main__":
    main()
