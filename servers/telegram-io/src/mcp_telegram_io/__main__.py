"""``python -m mcp_telegram_io [--stdio]``: poll the fleet's bots and serve the inbox tools."""

from __future__ import annotations

from mcp_telegram_io.fleet import bot_tokens
from mcp_telegram_io.server import build_server
from mcp_telegram_io.settings import TelegramIOSettings
from meshkit.serve import run_server
from meshkit.stopping import Stopping


def main() -> None:
    stopping = Stopping()  # ends open long polls at once on SIGTERM
    run_server(
        TelegramIOSettings,
        lambda settings: build_server(settings, stopping=stopping),
        name="telegram-io",
        default_port=8106,
        secrets=bot_tokens,
        stopping=stopping,
    )


if __name__ == "__main__":
    main()
