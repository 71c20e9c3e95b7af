"""``python -m mcp_weather [--stdio]``: serve the weather tools."""

from __future__ import annotations

from mcp_weather.server import build_server
from mcp_weather.settings import WeatherSettings
from meshkit import load_settings, serve

DEFAULT_PORT = 8101


def main() -> None:
    weather = load_settings(WeatherSettings)

    serve(lambda _: build_server(weather), name="weather", default_port=DEFAULT_PORT)


if __name__ == "__main__":
    main()
