"""The weather MCP surface, through an in-memory MCP client against the fake Open-Meteo."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, date, datetime
from typing import Any

import httpx2
import pytest
from fastmcp import Client

from fakes.open_meteo import FakeOpenMeteo, Fault
from fakes.tool_calls import text_of
from mcp_weather.server import build_server
from mcp_weather.settings import WeatherSettings
from mcp_weather.wmo import WMO_CODES

pytestmark = pytest.mark.anyio

NOON = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
TOOLS = {"get_current_weather", "get_forecast", "get_hourly_forecast"}
TRY_LATER = "Weather data is temporarily unavailable ({}); try again in a minute."


@asynccontextmanager
async def connect(
    settings: WeatherSettings, transport: httpx2.AsyncBaseTransport
) -> AsyncIterator[Client[Any]]:
    async with Client(build_server(settings, transport=transport, now=lambda: NOON)) as client:
        yield client


@pytest.fixture
async def client(fake: FakeOpenMeteo, settings: WeatherSettings) -> AsyncIterator[Client[Any]]:
    async with connect(settings, fake.transport()) as client:
        yield client


# The tool list


async def test_the_server_offers_exactly_the_three_weather_tools(client: Client[Any]) -> None:
    tools = await client.list_tools()

    assert {tool.name for tool in tools} == TOOLS


async def test_every_tool_is_an_idempotent_open_world_read(client: Client[Any]) -> None:
    for tool in await client.list_tools():
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is True
        assert tool.annotations.destructive_hint is False
        assert tool.annotations.idempotent_hint is True
        assert tool.annotations.open_world_hint is True
        assert tool.meta is not None
        assert tool.meta["fastmcp"]["tags"] == ["read"]
        assert tool.description


async def test_the_forecast_schema_bounds_the_days(client: Client[Any]) -> None:
    [forecast] = [tool for tool in await client.list_tools() if tool.name == "get_forecast"]

    days = forecast.input_schema["properties"]["days"]
    assert (days["minimum"], days["maximum"], days["default"]) == (1, 16, 3)
    assert forecast.input_schema["required"] == ["location"]


# Answers


async def test_current_weather_comes_back_as_structured_content(client: Client[Any]) -> None:
    result = await client.call_tool("get_current_weather", {"location": "Paris"})

    weather = result.structured_content
    assert weather is not None
    assert weather["place"]["name"] == "Paris, Île-de-France, France"
    assert weather["place"]["timezone"] == "Europe/Paris"
    assert weather["alternatives"] == ["Paris, Texas, United States"]
    assert weather["units"] == {
        "system": "metric",
        "temperature": "°C",
        "wind_speed": "km/h",
        "precipitation": "mm",
    }
    assert weather["time"] == "2026-11-22T14:00"
    assert weather["weather_code"] in WMO_CODES
    assert isinstance(weather["temperature"], float)


async def test_the_forecast_defaults_to_three_days_from_today(client: Client[Any]) -> None:
    result = await client.call_tool("get_forecast", {"location": "Springfield, IL"})

    forecast = result.structured_content
    assert forecast is not None
    assert forecast["place"]["name"] == "Springfield, Illinois, United States"
    assert [day["date"] for day in forecast["days"]] == ["2026-11-22", "2026-11-23", "2026-11-24"]
    assert all(day["weather_code"] in WMO_CODES for day in forecast["days"])


async def test_the_hourly_forecast_has_the_24_local_hours_of_the_day(client: Client[Any]) -> None:
    result = await client.call_tool(
        "get_hourly_forecast", {"location": "Zurich", "date": "tomorrow"}
    )

    hourly = result.structured_content
    assert hourly is not None
    assert hourly["date"] == "2026-11-23"
    assert [hour["time"] for hour in hourly["hours"]] == [f"{h:02d}:00" for h in range(24)]


async def test_imperial_settings_reach_the_tools(
    fake: FakeOpenMeteo, settings: WeatherSettings
) -> None:
    imperial = settings.model_copy(update={"units": "imperial"})
    async with connect(imperial, fake.transport()) as client:
        result = await client.call_tool("get_forecast", {"location": "London", "days": 2})

    assert result.structured_content is not None
    assert result.structured_content["units"]["temperature"] == "°F"
    assert fake.requests[-1][1]["temperature_unit"] == "fahrenheit"


# Errors reach the model verbatim


@pytest.mark.parametrize(
    ("tool", "arguments", "fault", "message"),
    [
        pytest.param(
            "get_current_weather",
            {"location": "Atlantis"},
            None,
            "No place called 'Atlantis'; try adding the country (e.g. 'Atlantis, France') "
            "or give coordinates as 'lat,lon'.",
            id="unknown-place",
        ),
        pytest.param(
            "get_forecast",
            {"location": "London, France"},
            None,
            "No place called 'London' in 'France'. Places with that name: "
            "London, England, United Kingdom; London, Ontario, Canada.",
            id="qualifier-matches-nothing",
        ),
        pytest.param(
            "get_hourly_forecast",
            {"location": "Paris", "date": "someday"},
            None,
            "date must be YYYY-MM-DD, 'today' or 'tomorrow', not 'someday'.",
            id="date-not-a-date",
        ),
        pytest.param(
            "get_hourly_forecast",
            {"location": "Paris", "date": "2027-01-01"},
            None,
            "No hourly forecast for 2027-01-01: the date must be between 2026-08-22 and "
            "2026-12-07 (today in Europe/Paris is 2026-11-22).",
            id="date-out-of-range",
        ),
        pytest.param(
            "get_current_weather",
            {"location": "Paris"},
            429,
            TRY_LATER.format("Open-Meteo is rate limiting"),
            id="rate-limited",
        ),
        pytest.param(
            "get_forecast",
            {"location": "Paris"},
            500,
            TRY_LATER.format("Open-Meteo answered 500"),
            id="server-error",
        ),
        pytest.param(
            "get_hourly_forecast",
            {"location": "Paris", "date": "today"},
            503,
            TRY_LATER.format("Open-Meteo answered 503"),
            id="unavailable",
        ),
        pytest.param(
            "get_forecast",
            {"location": "48.85,2.35"},
            "malformed",
            TRY_LATER.format("Open-Meteo sent a malformed answer"),
            id="malformed",
        ),
    ],
)
async def test_a_service_error_reaches_the_client_verbatim(
    client: Client[Any],
    fake: FakeOpenMeteo,
    tool: str,
    arguments: dict[str, Any],
    fault: Fault | None,
    message: str,
) -> None:
    if fault is not None:
        fake.fail_with(fault)

    result = await client.call_tool(tool, arguments, raise_on_error=False)

    assert result.is_error
    assert text_of(result) == message


async def test_a_timeout_reaches_the_client_as_try_again(
    fake: FakeOpenMeteo, settings: WeatherSettings
) -> None:
    fake.fail_with("timeout")
    impatient = settings.model_copy(update={"timeout_s": 0.2})
    async with connect(impatient, fake.transport()) as client:
        result = await client.call_tool(
            "get_current_weather", {"location": "Paris"}, raise_on_error=False
        )
    fake.release()

    assert result.is_error
    assert text_of(result) == TRY_LATER.format("Open-Meteo did not answer within 0.2 s")


async def test_a_refusal_from_open_meteo_reaches_the_client_with_its_reason(
    settings: WeatherSettings,
) -> None:
    skewed = FakeOpenMeteo(today=date(2026, 11, 1))  # its clock is three weeks behind ours
    async with connect(settings, skewed.transport()) as client:
        result = await client.call_tool(
            "get_hourly_forecast", {"location": "Paris", "date": "2026-11-30"}, raise_on_error=False
        )

    assert result.is_error
    assert text_of(result) == (
        "Open-Meteo refused the request: "
        "Parameter 'start_date' is out of allowed range from 2026-08-01 to 2026-11-16"
    )


async def test_an_unexpected_failure_is_masked(settings: WeatherSettings) -> None:
    def broken(request: httpx2.Request) -> httpx2.Response:
        raise RuntimeError("secret-internal-detail")

    async with connect(settings, httpx2.MockTransport(broken)) as client:
        result = await client.call_tool(
            "get_current_weather", {"location": "Paris"}, raise_on_error=False
        )

    assert result.is_error
    assert "secret-internal-detail" not in text_of(result)
    assert "RuntimeError" not in text_of(result)


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("get_forecast", {"location": "Paris", "days": 0}),
        ("get_forecast", {"location": "Paris", "days": 17}),
        ("get_current_weather", {"location": ""}),
        ("get_current_weather", {"location": "x" * 201}),
        ("get_hourly_forecast", {"location": "Paris"}),
        ("get_hourly_forecast", {"location": "Paris", "date": "the day after tomorrow"}),
    ],
)
async def test_the_schema_rejects_bad_arguments_before_any_request(
    client: Client[Any], fake: FakeOpenMeteo, tool: str, arguments: dict[str, Any]
) -> None:
    result = await client.call_tool(tool, arguments, raise_on_error=False)

    assert result.is_error
    assert fake.requests == []
