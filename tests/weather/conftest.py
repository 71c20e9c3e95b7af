from collections.abc import Iterator

import pytest

from fakes.open_meteo import FakeOpenMeteo
from mcp_weather.settings import WeatherSettings

OPEN_METEO = "http://open-meteo.test"


@pytest.fixture
def fake() -> Iterator[FakeOpenMeteo]:
    fake = FakeOpenMeteo()
    yield fake
    fake.close()


@pytest.fixture
def settings() -> WeatherSettings:
    """Every field explicit, so WEATHER_* variables in the environment change nothing."""
    return WeatherSettings(
        units="metric",
        geocoding_url=f"{OPEN_METEO}/v1/search",
        forecast_url=f"{OPEN_METEO}/v1/forecast",
        timeout_s=5.0,
        language="en",
    )
