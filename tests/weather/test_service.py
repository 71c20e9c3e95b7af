"""WeatherService against the fake Open-Meteo: places, dates, units, failures, caching."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, date, datetime, timedelta

import httpx2
import pytest

from fakes.open_meteo import FakeOpenMeteo, Fault
from fakes.serving import serving
from mcp_weather.errors import InvalidRequest, UnknownLocation, UpstreamUnavailable
from mcp_weather.models import Units
from mcp_weather.open_meteo import OpenMeteo
from mcp_weather.service import WeatherService
from mcp_weather.settings import WeatherSettings
from mcp_weather.wmo import WMO_CODES, describe

pytestmark = pytest.mark.anyio

TODAY = date(2026, 11, 22)  # the fake's today
NOON = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
# 23:30 UTC: already tomorrow in Zürich (UTC+1), still the afternoon in Oregon (UTC-8).
LATE = datetime(2026, 11, 22, 23, 30, tzinfo=UTC)
TRY_LATER = "Weather data is temporarily unavailable ({}); try again in a minute."
SPRINGFIELDS = [
    "Springfield, Missouri, United States",
    "Springfield, Massachusetts, United States",
    "Springfield, Illinois, United States",
    "Springfield, Oregon, United States",
]


class SteppingClock:
    """A monotonic clock that moves only when the test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@asynccontextmanager
async def weather_service(
    settings: WeatherSettings,
    transport: httpx2.AsyncBaseTransport,
    *,
    now: datetime = NOON,
    clock: SteppingClock | None = None,
) -> AsyncIterator[WeatherService]:
    upstream = OpenMeteo(timeout_s=settings.timeout_s, transport=transport)
    try:
        yield WeatherService(
            settings, upstream, now=lambda: now, monotonic=clock or SteppingClock()
        )
    finally:
        await upstream.aclose()


@pytest.fixture
def clock() -> SteppingClock:
    return SteppingClock()


@pytest.fixture
async def service(
    fake: FakeOpenMeteo, settings: WeatherSettings, clock: SteppingClock
) -> AsyncIterator[WeatherService]:
    async with weather_service(settings, fake.transport(), clock=clock) as service:
        yield service


# Places


async def test_the_most_populous_match_wins_and_the_others_are_alternatives(
    service: WeatherService,
) -> None:
    weather = await service.current("Springfield")

    assert weather.place.name == SPRINGFIELDS[0]
    assert weather.place.population == 169176
    assert weather.place.timezone == "America/Chicago"
    assert weather.alternatives == SPRINGFIELDS[1:]


@pytest.mark.parametrize(
    ("location", "place"),
    [
        ("Springfield, IL", "Springfield, Illinois, United States"),
        ("springfield, or", "Springfield, Oregon, United States"),
        ("Springfield, Massachusetts, US", "Springfield, Massachusetts, United States"),
        ("Paris", "Paris, Île-de-France, France"),
        ("Paris, Texas", "Paris, Texas, United States"),
        ("Paris, US", "Paris, Texas, United States"),
        ("Paris, USA", "Paris, Texas, United States"),
        ("London", "London, England, United Kingdom"),
        ("London, UK", "London, England, United Kingdom"),
        ("London, Ontario", "London, Ontario, Canada"),
        ("London, CA", "London, Ontario, Canada"),
    ],
)
async def test_a_region_or_country_after_the_comma_picks_among_the_matches(
    service: WeatherService, location: str, place: str
) -> None:
    weather = await service.current(location)

    assert weather.place.name == place


async def test_a_narrowed_match_lists_no_alternatives(service: WeatherService) -> None:
    weather = await service.current("Springfield, IL")

    assert weather.alternatives == []
    assert (weather.place.latitude, weather.place.longitude) == (39.80172, -89.64371)


@pytest.mark.parametrize("location", ["Zürich", "Zurich", "ZURICH", "zürich, Switzerland"])
async def test_accents_and_case_do_not_matter(service: WeatherService, location: str) -> None:
    weather = await service.current(location)

    assert weather.place.name == "Zürich, Zurich, Switzerland"
    assert weather.place.timezone == "Europe/Zurich"


async def test_the_geocoder_is_asked_for_ten_results_in_the_configured_language(
    service: WeatherService, fake: FakeOpenMeteo
) -> None:
    await service.current("Springfield, IL")

    assert fake.requests[0] == (
        "/v1/search",
        {"name": "Springfield", "count": "10", "language": "en", "format": "json"},
    )


async def test_coordinates_skip_geocoding_and_take_the_timezone_from_the_forecast(
    service: WeatherService, fake: FakeOpenMeteo
) -> None:
    weather = await service.current("48.85, 2.35")

    assert fake.paths() == ["/v1/forecast"]
    _, params = fake.requests[0]
    assert (params["latitude"], params["longitude"], params["timezone"]) == (
        "48.85",
        "2.35",
        "auto",
    )
    assert weather.place.name == "48.8500,2.3500"
    assert weather.place.timezone == "Europe/Paris"
    assert weather.alternatives == []


async def test_an_unknown_place_asks_for_the_country(service: WeatherService) -> None:
    with pytest.raises(UnknownLocation) as raised:
        await service.current("Atlantis")

    assert str(raised.value) == (
        "No place called 'Atlantis'; try adding the country (e.g. 'Atlantis, France') "
        "or give coordinates as 'lat,lon'."
    )


async def test_a_qualifier_that_matches_nothing_lists_the_places_with_that_name(
    service: WeatherService,
) -> None:
    with pytest.raises(UnknownLocation) as raised:
        await service.current("Springfield, Texas")

    assert str(raised.value) == (
        f"No place called 'Springfield' in 'Texas'. Places with that name: "
        f"{'; '.join(SPRINGFIELDS)}."
    )


@pytest.mark.parametrize("location", ["   ", "91,200"])
async def test_text_that_names_no_place_is_refused_without_a_request(
    service: WeatherService, fake: FakeOpenMeteo, location: str
) -> None:
    with pytest.raises(UnknownLocation, match="is not a place"):
        await service.current(location)

    assert fake.requests == []


# Current weather and daily forecasts


async def test_current_weather_is_the_latest_observation_at_the_place(
    service: WeatherService, fake: FakeOpenMeteo
) -> None:
    weather = await service.current("Zürich")

    assert weather.time == "2026-11-22T14:00"
    assert weather.weather_code in WMO_CODES
    assert weather.conditions == describe(weather.weather_code)
    assert weather.temperature is not None
    assert weather.is_day is True
    assert weather.units == Units(
        system="metric", temperature="°C", wind_speed="km/h", precipitation="mm"
    )
    _, params = fake.requests[-1]
    assert "temperature_unit" not in params


@pytest.mark.parametrize("days", [0, 17, -1])
async def test_days_outside_1_to_16_are_refused_before_any_request(
    service: WeatherService, fake: FakeOpenMeteo, days: int
) -> None:
    with pytest.raises(InvalidRequest) as raised:
        await service.forecast("Paris", days)

    assert str(raised.value) == f"days must be between 1 and 16, not {days}."
    assert fake.requests == []


@pytest.mark.parametrize("days", [1, 16])
async def test_a_forecast_has_one_day_per_day_asked_from_today(
    service: WeatherService, fake: FakeOpenMeteo, days: int
) -> None:
    forecast = await service.forecast("Paris", days)

    assert [day.date for day in forecast.days] == [
        (TODAY + timedelta(days=i)).isoformat() for i in range(days)
    ]
    assert fake.requests[-1][1]["forecast_days"] == str(days)
    for day in forecast.days:
        assert day.weather_code in WMO_CODES
        assert day.conditions == describe(day.weather_code)
        assert day.temperature_min is not None
        assert day.temperature_max is not None
        assert day.temperature_min <= day.temperature_max
        assert day.sunrise is not None
        assert day.sunset is not None
        assert day.date < day.sunrise < day.sunset


# Hourly forecasts and dates


@pytest.mark.parametrize(
    ("location", "day", "date"),
    [
        ("Zürich", "today", "2026-11-23"),
        ("Zürich", "tomorrow", "2026-11-24"),
        ("Springfield, OR", "today", "2026-11-22"),
        ("Springfield, OR", " Tomorrow ", "2026-11-23"),
        ("Springfield, OR", "2026-11-30", "2026-11-30"),
    ],
)
async def test_today_and_tomorrow_are_dates_at_the_place(
    fake: FakeOpenMeteo, settings: WeatherSettings, location: str, day: str, date: str
) -> None:
    async with weather_service(settings, fake.transport(), now=LATE) as service:
        hourly = await service.hourly(location, day)

    assert hourly.date == date
    _, params = fake.requests[-1]
    assert (params["start_date"], params["end_date"]) == (date, date)
    assert [hour.time for hour in hourly.hours] == [f"{h:02d}:00" for h in range(24)]
    assert all(hour.conditions == describe(hour.weather_code) for hour in hourly.hours)


@pytest.mark.parametrize(
    ("location", "now", "date"),
    [
        ("47.37,8.55", LATE, "2026-11-23"),  # Zürich, already past midnight
        ("44.05,-123.02", datetime(2026, 11, 23, 3, 30, tzinfo=UTC), "2026-11-22"),  # Oregon
    ],
)
async def test_today_at_coordinates_is_the_date_in_the_timezone_there(
    fake: FakeOpenMeteo, settings: WeatherSettings, location: str, now: datetime, date: str
) -> None:
    async with weather_service(settings, fake.transport(), now=now) as service:
        hourly = await service.hourly(location, "today")

    assert hourly.date == date
    # One answer for no variables gives the timezone, then the day is asked for.
    assert fake.paths() == ["/v1/forecast", "/v1/forecast"]
    assert {"current", "daily", "hourly"}.isdisjoint(fake.requests[0][1])
    assert fake.requests[1][1]["start_date"] == date


async def test_a_date_that_is_not_a_date_is_refused_before_the_forecast_request(
    service: WeatherService, fake: FakeOpenMeteo
) -> None:
    with pytest.raises(InvalidRequest) as raised:
        await service.hourly("Paris", "next friday")

    assert str(raised.value) == (
        "date must be YYYY-MM-DD, 'today' or 'tomorrow', not 'next friday'."
    )
    assert "/v1/forecast" not in fake.paths()


@pytest.mark.parametrize("day", ["2026-12-08", "2026-08-21"])
async def test_a_date_outside_the_forecast_range_is_refused(
    service: WeatherService, fake: FakeOpenMeteo, day: str
) -> None:
    with pytest.raises(InvalidRequest) as raised:
        await service.hourly("Zürich", day)

    assert str(raised.value) == (
        f"No hourly forecast for {day}: the date must be between 2026-08-22 and 2026-12-07 "
        "(today in Europe/Zurich is 2026-11-22)."
    )
    assert "/v1/forecast" not in fake.paths()


@pytest.mark.parametrize("day", ["2026-12-07", "2026-08-22"])
async def test_the_first_and_last_days_open_meteo_serves_are_accepted(
    service: WeatherService, day: str
) -> None:
    hourly = await service.hourly("Zürich", day)

    assert hourly.date == day
    assert len(hourly.hours) == 24


# Units


async def test_imperial_units_change_the_request_and_the_units(
    fake: FakeOpenMeteo, settings: WeatherSettings
) -> None:
    imperial = settings.model_copy(update={"units": "imperial"})
    async with weather_service(imperial, fake.transport()) as service:
        weather = await service.current("Paris")

    _, params = fake.requests[-1]
    assert {
        key: params[key] for key in ("temperature_unit", "wind_speed_unit", "precipitation_unit")
    } == {
        "temperature_unit": "fahrenheit",
        "wind_speed_unit": "mph",
        "precipitation_unit": "inch",
    }
    # The unit strings are Open-Meteo's own, as it sends them.
    assert weather.units == Units(
        system="imperial", temperature="°F", wind_speed="mp/h", precipitation="inch"
    )


async def test_imperial_values_are_the_metric_values_converted(
    fake: FakeOpenMeteo, settings: WeatherSettings
) -> None:
    imperial = settings.model_copy(update={"units": "imperial"})
    async with weather_service(settings, fake.transport()) as metric_service:
        metric = await metric_service.forecast("Paris", 5)
    async with weather_service(imperial, fake.transport()) as imperial_service:
        american = await imperial_service.forecast("Paris", 5)

    assert american.units.temperature == "°F"
    for celsius, fahrenheit in zip(metric.days, american.days, strict=True):
        assert celsius.temperature_max is not None
        assert fahrenheit.temperature_max is not None
        assert fahrenheit.temperature_max == pytest.approx(
            celsius.temperature_max * 1.8 + 32, abs=0.2
        )
        assert celsius.weather_code == fahrenheit.weather_code


# Upstream failures


@pytest.mark.parametrize(
    ("fault", "why"),
    [
        (429, "Open-Meteo is rate limiting"),
        (500, "Open-Meteo answered 500"),
        (503, "Open-Meteo answered 503"),
        ("malformed", "Open-Meteo sent a malformed answer"),
    ],
)
async def test_an_upstream_failure_says_to_try_again_in_a_minute(
    service: WeatherService, fake: FakeOpenMeteo, fault: Fault, why: str
) -> None:
    fake.fail_with(fault)

    with pytest.raises(UpstreamUnavailable) as raised:
        await service.forecast("Paris", 3)

    assert str(raised.value) == TRY_LATER.format(why)


async def test_a_failing_forecast_after_a_good_geocoding_says_to_try_again(
    service: WeatherService, fake: FakeOpenMeteo
) -> None:
    await service.current("Paris")
    fake.fail_with(503)

    with pytest.raises(UpstreamUnavailable, match="try again in a minute"):
        await service.forecast("Paris", 3)

    assert fake.paths() == ["/v1/search", "/v1/forecast", "/v1/forecast"]


async def test_a_silent_upstream_times_out_after_the_configured_seconds(
    fake: FakeOpenMeteo, settings: WeatherSettings
) -> None:
    fake.fail_with("timeout")
    impatient = settings.model_copy(update={"timeout_s": 0.2})

    async with weather_service(impatient, fake.transport()) as service:
        with pytest.raises(UpstreamUnavailable) as raised:
            await service.current("Paris")
    fake.release()

    assert str(raised.value) == TRY_LATER.format("Open-Meteo did not answer within 0.2 s")


async def test_a_silent_upstream_times_out_over_real_http(
    fake: FakeOpenMeteo, settings: WeatherSettings
) -> None:
    fake.fail_with("timeout")
    async with serving(fake.app) as base_url:
        real = settings.model_copy(
            update={
                "timeout_s": 1,  # the second call must succeed within it: not too short
                "geocoding_url": f"{base_url}/v1/search",
                "forecast_url": f"{base_url}/v1/forecast",
            }
        )
        upstream = OpenMeteo(timeout_s=real.timeout_s)
        service = WeatherService(real, upstream, now=lambda: NOON)
        try:
            with pytest.raises(UpstreamUnavailable, match=r"did not answer within 1 s"):
                await service.current("Paris")
            fake.release()
            fake.clear_fault()
            weather = await service.current("Paris")
        finally:
            await upstream.aclose()

    assert weather.place.name == "Paris, Île-de-France, France"


async def test_an_unreachable_upstream_says_to_try_again(settings: WeatherSettings) -> None:
    def refuse(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("connection refused", request=request)

    async with weather_service(settings, httpx2.MockTransport(refuse)) as service:
        with pytest.raises(UpstreamUnavailable) as raised:
            await service.current("Paris")

    assert str(raised.value) == TRY_LATER.format("Open-Meteo is unreachable")


async def test_a_refusal_from_open_meteo_passes_its_reason_on(
    fake: FakeOpenMeteo, settings: WeatherSettings
) -> None:
    # Our clock says 22 November, Open-Meteo's says 1 November: it refuses the 30th.
    skewed = FakeOpenMeteo(today=date(2026, 11, 1))
    async with weather_service(settings, skewed.transport()) as service:
        with pytest.raises(InvalidRequest) as raised:
            await service.hourly("Paris", "2026-11-30")

    assert str(raised.value) == (
        "Open-Meteo refused the request: "
        "Parameter 'start_date' is out of allowed range from 2026-08-01 to 2026-11-16"
    )


async def test_a_json_answer_of_the_wrong_shape_is_a_malformed_answer(
    settings: WeatherSettings,
) -> None:
    def odd(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, json={"results": [{"name": "Paris"}]})

    async with weather_service(settings, httpx2.MockTransport(odd)) as service:
        with pytest.raises(UpstreamUnavailable) as raised:
            await service.current("Paris")

    assert str(raised.value) == TRY_LATER.format("Open-Meteo sent a malformed answer")


async def test_a_failure_is_not_cached(service: WeatherService, fake: FakeOpenMeteo) -> None:
    fake.fail_with(503)
    with pytest.raises(UpstreamUnavailable):
        await service.current("Paris")
    fake.clear_fault()

    weather = await service.current("Paris")

    assert weather.place.name == "Paris, Île-de-France, France"


# Caching


async def test_a_repeated_question_is_answered_from_the_cache(
    service: WeatherService, fake: FakeOpenMeteo
) -> None:
    first = await service.current("Paris")
    second = await service.current("Paris")

    assert second == first
    assert fake.paths() == ["/v1/search", "/v1/forecast"]


async def test_spellings_of_one_name_share_the_geocoding_cache(
    service: WeatherService, fake: FakeOpenMeteo
) -> None:
    await service.current("Zürich")
    await service.forecast("ZURICH", 3)

    assert fake.paths() == ["/v1/search", "/v1/forecast", "/v1/forecast"]


async def test_forecasts_expire_after_ten_minutes_and_places_after_a_day(
    service: WeatherService, fake: FakeOpenMeteo, clock: SteppingClock
) -> None:
    await service.current("Paris")

    clock.advance(10 * 60 - 1)
    await service.current("Paris")
    assert fake.paths() == ["/v1/search", "/v1/forecast"]

    clock.advance(1)
    await service.current("Paris")
    assert fake.paths() == ["/v1/search", "/v1/forecast", "/v1/forecast"]

    clock.advance(24 * 3600)
    await service.current("Paris")
    assert fake.paths() == [
        "/v1/search",
        "/v1/forecast",
        "/v1/forecast",
        "/v1/search",
        "/v1/forecast",
    ]


async def test_each_kind_of_forecast_is_cached_on_its_own(
    service: WeatherService, fake: FakeOpenMeteo
) -> None:
    await service.current("Paris")
    await service.forecast("Paris", 3)
    await service.forecast("Paris", 5)
    await service.hourly("Paris", "today")
    await service.hourly("Paris", "tomorrow")
    await service.forecast("Paris", 3)

    assert fake.paths() == ["/v1/search"] + ["/v1/forecast"] * 5
