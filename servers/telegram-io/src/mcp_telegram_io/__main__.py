"""``python -m mcp_telegram_io [--stdio]``: poll the fleet's bots and serve the inbox tools."""

from __future__ import annotations

import os

from mcp_telegram_io.settings import TelegramIOSettings
from meshkit import lean, load_settings, serve
from meshkit.settings import fail
from meshkit.yaml_config import ConfigError

DEFAULT_PORT = 8106


def main() -> None:
    lean.install()  # before fastmcp, mcp and uvicorn are imported
    from mcp_telegram_io.fleet import load_bots  # noqa: PLC0415
    from mcp_telegram_io.server import build_server  # noqa: PLC0415

    settings = load_settings(TelegramIOSettings)
    try:
        bots = load_bots(settings.agents, os.environ)
        server = build_server(settings)
    except ConfigError as error:
        fail(str(error))
    serve(
        lambda _: server,
        name="telegram-io",
        default_port=DEFAULT_PORT,
        secrets=[bot.token for bot in bots.values()],
    )


if __name__ == "__main__":
    main()
