"""``python -m mcp_weather [--stdio]``: serve the weather tools."""

from __future__ import annotations

from mcp_weather.server import build_server
from mcp_weather.settings import WeatherSettings
from meshkit.serve import run_server


def main() -> None:
    run_server(WeatherSettings, build_server, name="weather", default_port=8101)


if __name__ == "__main__":
    main()
