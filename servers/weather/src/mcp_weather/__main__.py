"""``python -m mcp_weather [--stdio]``: serve the weather tools."""

from __future__ import annotations

from mcp_weather.settings import WeatherSettings
from meshkit import lean, load_settings, serve

DEFAULT_PORT = 8101


def main() -> None:
    lean.install()  # before fastmcp, mcp and uvicorn are imported
    from mcp_weather.server import build_server  # noqa: PLC0415

    weather = load_settings(WeatherSettings)

    serve(lambda _: build_server(weather), name="weather", default_port=DEFAULT_PORT)


if __name__ == "__main__":
    main()
