"""The weather MCP surface: three read tools over WeatherService."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from importlib.metadata import version
from typing import Annotated, Any

import httpx2
from fastmcp import FastMCP
from pydantic import Field

from mcp_weather.models import CurrentWeather, Forecast, HourlyForecast
from mcp_weather.open_meteo import OpenMeteo
from mcp_weather.service import MAX_DAYS, WeatherService
from mcp_weather.settings import WeatherSettings
from meshkit.server import create_server
from meshkit.settings import load_settings
from meshkit.tool_classes import read

INSTRUCTIONS = (
    "Weather for any place on Earth from Open-Meteo. Locations are free text "
    "('Paris', 'Springfield, IL', 'Zürich') or 'lat,lon'. When several places match, "
    "the most populous is used and the others are listed in `alternatives`."
)

Location = Annotated[
    str,
    Field(
        description="A place, with its region if ambiguous ('Springfield, IL'), or 'lat,lon'",
        min_length=1,
        max_length=200,
    ),
]


def build_server(
    settings: WeatherSettings | None = None,
    *,
    transport: httpx2.AsyncBaseTransport | None = None,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> FastMCP[Any]:
    """The weather server; ``settings`` default to the environment (embedded mode)."""
    settings = settings or load_settings(WeatherSettings)
    upstream = OpenMeteo(timeout_s=settings.timeout_s, transport=transport)
    service = WeatherService(settings, upstream, now=now)

    @asynccontextmanager
    async def lifespan(_: FastMCP[Any]) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await upstream.aclose()

    mcp = create_server(
        "weather",
        version=version("mcp-weather"),
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        checks={"open_meteo_client": service.check},
    )

    @mcp.tool(**read(title="Current weather", open_world=True))
    async def get_current_weather(location: Location) -> CurrentWeather:
        """Current weather at a place: temperature, feels-like, wind, rain."""
        return await service.current(location)

    @mcp.tool(**read(title="Daily forecast", open_world=True))
    async def get_forecast(
        location: Location,
        days: Annotated[int, Field(ge=1, le=MAX_DAYS, description="Days from today")] = 3,
    ) -> Forecast:
        """Daily forecast at a place: conditions, high/low, rain, wind."""
        return await service.forecast(location, days)

    @mcp.tool(**read(title="Hourly forecast", open_world=True))
    async def get_hourly_forecast(
        location: Location,
        date: Annotated[
            str,
            Field(
                description="YYYY-MM-DD, 'today' or 'tomorrow' (the place's)",
                max_length=20,
            ),
        ],
    ) -> HourlyForecast:
        """Hour-by-hour forecast of one day at a place, in its local time."""
        return await service.hourly(location, date)

    return mcp
