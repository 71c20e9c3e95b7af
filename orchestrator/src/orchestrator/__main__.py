"""``python -m orchestrator chat [--agent ID]``: talk to an agent in the terminal.

Without arguments the Telegram channel runs the whole fleet (coming with the
Telegram issue).
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
from orchestrator.config import ConfigError
from orchestrator.console import Console, stdin_lines
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
    if args.command != "chat":
        fail("the Telegram channel is not built yet; use `python -m orchestrator chat`")
    # The console is the conversation: only warnings go to the terminal.
    configure_logging(
        "WARNING" if settings.log_level == "INFO" else settings.log_level, secrets=secrets
    )
    if not settings.llm_configured:
        fail(NO_LLM_HELP)
    try:
        anyio.run(_chat, settings, args.agent)
    except ConfigError as error:
        fail(str(error))
    except KeyboardInterrupt:
        pass


async def _chat(settings: OrchestratorSettings, agent_id: str | None) -> None:
    async with open_app(settings) as app:
        agents = app.dispatcher.agents
        chosen = agent_id or next(iter(agents))
        if chosen not in agents:
            raise ConfigError(
                f"{settings.agents}: agents: no agent {chosen!r}; choose one of {sorted(agents)}"
            )
        await Console(app.dispatcher, chosen).run(stdin_lines())


if __name__ == "__main__":
    main()
