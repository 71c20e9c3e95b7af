"""``python -m orchestrator``: the whole fleet on Telegram (through telegram-io).
SIGTERM or Ctrl-C stops it gracefully: running turns finish (SHUTDOWN_GRACE_S), exit 0.

``python -m orchestrator chat [--agent ID]``: talk to one agent in this terminal.

The operator's commands are ``clawmesh``'s (cli/main.py).
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from pathlib import Path

import anyio
import fastmcp

from meshkit.exception_groups import as_itself
from meshkit.logs import configure_logging
from meshkit.settings import environment, fail, fail_all, load_dotenv
from meshkit.yaml_config import ConfigError
from orchestrator import preflight
from orchestrator.app import open_app
from orchestrator.channels.consent import ConsentChannel, telegram_show
from orchestrator.channels.console import GOODBYE, Console, stdin_lines
from orchestrator.channels.scheduled import ScheduledChannel
from orchestrator.channels.telegram import TelegramChannel
from orchestrator.channels.telegram_io import TelegramIO
from orchestrator.channels.telegram_media import MediaLimits
from orchestrator.channels.telegram_ready import NoBotCanRun
from orchestrator.health_http import serving_health
from orchestrator.settings import OrchestratorSettings
from orchestrator.shutdown import Shutdown, on_signals

logger = logging.getLogger("orchestrator")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m orchestrator", description=__doc__)
    commands = parser.add_subparsers(dest="command")
    chat = commands.add_parser("chat", help="talk to an agent in this terminal")
    chat.add_argument("--agent", help="agent id from agents.yaml (default: the first)")
    chat.add_argument(
        "--verbose", action="store_true", help="logs on the terminal, not in data/logs/chat.log"
    )
    args = parser.parse_args(argv)

    fastmcp.settings.show_server_banner = False
    fastmcp.settings.check_for_updates = "off"
    # Nothing here exports OpenTelemetry: fastmcp's spans (no-ops without an SDK) and the
    # trace context it handles on every call cost 5-10 % of an in-process call's CPU.
    fastmcp.settings.telemetry_mode = "off"
    load_dotenv()
    chat = args.command == "chat"
    agent = getattr(args, "agent", None)  # chat only
    settings, problems = preflight.check("chat" if chat else "telegram", agent, environment())
    if settings is None or problems:
        fail_all(problems)
    secrets = settings.secrets()
    # In the console the conversation is on the terminal: the logs go to a file.
    logs = settings.data_dir / "logs" / "chat.log" if chat and not args.verbose else None
    try:
        configure_logging(settings.log_level, secrets=secrets, path=logs)
    except OSError as error:
        fail(
            f"cannot write the log file {logs} ({error.strerror}): make DATA_DIR writable, "
            "or add --verbose to log on the terminal"
        )
    try:
        if chat:
            anyio.run(_chat, settings, agent, logs)
        else:
            refused = anyio.run(_telegram, settings)
            if refused:
                fail_all(refused)
    except ConfigError as error:
        fail(str(error))
    except KeyboardInterrupt:
        if chat:
            print(f"\n{GOODBYE}", flush=True)


async def _telegram(settings: OrchestratorSettings) -> list[str]:
    """Serve the fleet until SIGTERM or SIGINT; what Telegram refused, when no bot can run."""
    shutdown = Shutdown()
    refused: list[str] = []
    # A ConfigError or SystemExit (meshkit fail(), its line said) is raised as itself.
    async with as_itself(), anyio.create_task_group() as signals:
        await signals.start(on_signals, shutdown)
        try:
            refused = await _serve(settings, shutdown)
        finally:
            signals.cancel_scope.cancel()
    return refused


async def _serve(settings: OrchestratorSettings, shutdown: Shutdown) -> list[str]:
    async with open_app(settings) as app, serving_health(settings.health_port):
        logger.info("Telegram channel for %s", ", ".join(sorted(app.dispatcher.agents)))
        channel = TelegramChannel(
            app.dispatcher,
            app.registry,
            consumer=settings.inbox_consumer,
            grace_s=settings.shutdown_grace_s,
            tap_answer_within_s=settings.tap_answer_within_s,
            transcriber=app.transcriber,
            media=MediaLimits(
                voice_max_s=settings.voice_max_s,
                voice_max_bytes=settings.voice_max_bytes,
                text_max_chars=settings.text_file_max_chars,
            ),
        )
        scheduled = ScheduledChannel(
            app.proactive,
            app.registry,
            consumer=settings.inbox_consumer,
            grace_s=settings.shutdown_grace_s,
        )
        io = TelegramIO(app.registry, consumer=settings.inbox_consumer, run="consent")
        consent = ConsentChannel(
            app.dispatcher,
            app.registry,
            telegram_show(io),
            consumer=settings.inbox_consumer,
            grace_s=settings.shutdown_grace_s,
        )
        refused: list[str] = []
        async with anyio.create_task_group() as channels:
            channels.start_soon(scheduled.run, shutdown, name="scheduled")
            channels.start_soon(consent.run, shutdown, name="consent")
            try:
                await channel.run(shutdown)
            except NoBotCanRun as error:  # here, before a task group wraps it
                refused = error.lines
                channels.cancel_scope.cancel()
        if refused:
            return refused
    logger.info("stopped; MCP sessions closed")
    return []


async def _chat(settings: OrchestratorSettings, agent_id: str | None, logs: Path | None) -> None:
    async with open_app(settings, without=frozenset({"telegram-io"})) as app:
        agents = app.dispatcher.agents
        chosen = agent_id or next(iter(agents))  # preflight checked agent_id
        shown = str(logs) if logs else None
        console = Console(app.dispatcher, chosen, logs=shown)
        # What other clients propose shows here too (a consumer of its own: a Telegram
        # orchestrator running beside it keeps its notices).
        consent = ConsentChannel(
            app.dispatcher, app.registry, console.notice, consumer="console", allowed_only=False
        )
        shutdown = Shutdown()
        async with anyio.create_task_group() as channels:
            channels.start_soon(consent.run, shutdown, name="consent")
            await console.run(stdin_lines())
            shutdown.request()
            shutdown.request()  # hurried: nobody is left to see what a notice would show


if __name__ == "__main__":
    main()
