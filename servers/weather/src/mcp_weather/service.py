"""Weather from Open-Meteo: resolve a place, fetch, cache, and shape the answer."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cachetools import TTLCache

from mcp_weather import places
from mcp_weather.errors import InvalidRequest, UnknownLocation, UpstreamUnavailable
from mcp_weather.models import (
    CurrentWeather,
    DailyWeather,
    Forecast,
    HourlyForecast,
    HourlyWeather,
    Place,
    Units,
)
from mcp_weather.open_meteo import TRY_LATER, OpenMeteo
from mcp_weather.settings import WeatherSettings
from mcp_weather.wmo import describe

logger = logging.getLogger(__name__)

MAX_DAYS = 16
PAST_DAYS = 92  # how far back Open-Meteo's forecast API serves hourly data
GEOCODE_TTL_S = 24 * 3600
FORECAST_TTL_S = 10 * 60
_IMPERIAL = {
    "temperature_unit": "fahrenheit",
    "wind_speed_unit": "mph",
    "precipitation_unit": "inch",
}
_CURRENT = (
    "temperature_2m,relative_humidity_2m,apparent_temperature,is_day,precipitation,"
    "weather_code,wind_speed_10m,wind_direction_10m"
)
_DAILY = (
    "weather_code,temperature_2m_max,temperature_2m_min,precipitation_sum,"
    "precipitation_probability_max,wind_speed_10m_max,sunrise,sunset"
)
_HOURLY = "temperature_2m,precipitation_probability,precipitation,weather_code,wind_speed_10m"
MAX_ALTERNATIVES = 4


class WeatherService:
    def __init__(
        self,
        settings: WeatherSettings,
        upstream: OpenMeteo,
        *,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._settings = settings
        self._upstream = upstream
        self._now = now
        # Least recently used out past maxsize; an entry expires ttl seconds after it was put.
        self._geocodes: TTLCache[str, list[dict[str, Any]]] = TTLCache(
            1024, GEOCODE_TTL_S, monotonic
        )
        self._forecasts: TTLCache[tuple[Any, ...], dict[str, Any]] = TTLCache(
            256, FORECAST_TTL_S, monotonic
        )

    async def current(self, location: str) -> CurrentWeather:
        place, alternatives = await self._resolve(location)
        body = await self._forecast(place, ("current",), {"current": _CURRENT})
        try:
            now = body["current"]
            return CurrentWeather(
                **self._head(place, alternatives, body, "current_units"),
                time=str(now["time"]),
                conditions=describe(now.get("weather_code")),
                weather_code=now.get("weather_code"),
                temperature=now.get("temperature_2m"),
                feels_like=now.get("apparent_temperature"),
                humidity_percent=now.get("relative_humidity_2m"),
                precipitation=now.get("precipitation"),
                wind_speed=now.get("wind_speed_10m"),
                wind_direction_deg=now.get("wind_direction_10m"),
                is_day=None if now.get("is_day") is None else bool(now["is_day"]),
            )
        except (KeyError, TypeError, ValueError) as error:
            raise _malformed(error) from error

    async def forecast(self, location: str, days: int) -> Forecast:
        if not 1 <= days <= MAX_DAYS:
            raise InvalidRequest(f"days must be between 1 and {MAX_DAYS}, not {days}.")
        place, alternatives = await self._resolve(location)
        body = await self._forecast(
            place, ("daily", days), {"daily": _DAILY, "forecast_days": days}
        )
        try:
            daily = body["daily"]
            return Forecast(
                **self._head(place, alternatives, body, "daily_units"),
                days=[_day(daily, i) for i in range(len(daily["time"]))],
            )
        except (KeyError, TypeError, ValueError, IndexError) as error:
            raise _malformed(error) from error

    async def hourly(self, location: str, day: str) -> HourlyForecast:
        place, alternatives = await self._resolve(location, need_timezone=True)
        wanted = self._parse_day(day, place.timezone)
        iso = wanted.isoformat()
        body = await self._forecast(
            place, ("hourly", iso), {"hourly": _HOURLY, "start_date": iso, "end_date": iso}
        )
        try:
            hourly = body["hourly"]
            return HourlyForecast(
                **self._head(place, alternatives, body, "hourly_units"),
                date=iso,
                hours=[_hour(hourly, i) for i in range(len(hourly["time"]))],
            )
        except (KeyError, TypeError, ValueError, IndexError) as error:
            raise _malformed(error) from error

    async def check(self) -> None:
        """Health: the outbound client is usable (Open-Meteo itself is not probed)."""
        if not self._upstream.is_open:
            raise RuntimeError("the Open-Meteo client is closed")

    def _parse_day(self, day: str, timezone: str) -> date:
        today = self._now().astimezone(_zone(timezone)).date()
        text = day.strip().lower()
        if text == "today":
            return today
        if text == "tomorrow":
            return today + timedelta(days=1)
        try:
            wanted = date.fromisoformat(text)
        except ValueError:
            raise InvalidRequest(
                f"date must be YYYY-MM-DD, 'today' or 'tomorrow', not {day!r}."
            ) from None
        first, last = today - timedelta(days=PAST_DAYS), today + timedelta(days=MAX_DAYS - 1)
        if not first <= wanted <= last:
            raise InvalidRequest(
                f"No hourly forecast for {wanted}: the date must be between {first} and {last} "
                f"(today in {timezone} is {today})."
            )
        return wanted

    async def _resolve(
        self, location: str, *, need_timezone: bool = False
    ) -> tuple[Place, list[str]]:
        query = places.parse(location)
        if query is None:
            raise UnknownLocation(
                f"{location!r} is not a place. Give a city name (add the country if ambiguous) "
                "or coordinates as 'lat,lon', e.g. '48.85,2.35'."
            )
        if query.coordinates is not None:
            latitude, longitude = query.coordinates
            place = Place(
                name=query.name,
                country=None,
                country_code=None,
                latitude=latitude,
                longitude=longitude,
                timezone="GMT",
            )
            if need_timezone:
                # "today" at coordinates is the date in their timezone, which only Open-Meteo knows.
                place = place.model_copy(update={"timezone": await self._timezone_at(place)})
            return place, []
        results = await self._geocode(query.name)
        found = places.by_population([r for r in results if places.matches(r, query.qualifiers)])
        if not found:
            if results and query.qualifiers:
                known = "; ".join(places.display_name(r) for r in places.by_population(results)[:5])
                raise UnknownLocation(
                    f"No place called {query.name!r} in {', '.join(query.qualifiers)!r}. "
                    f"Places with that name: {known}."
                )
            raise UnknownLocation(
                f"No place called {query.name!r}; try adding the country (e.g. "
                f"'{query.name}, France') or give coordinates as 'lat,lon'."
            )
        alternatives = [places.display_name(r) for r in found[1 : 1 + MAX_ALTERNATIVES]]
        return places.to_place(found[0]), alternatives

    async def _geocode(self, name: str) -> list[dict[str, Any]]:
        key = places.fold(name)
        cached = self._geocodes.get(key)
        if cached is not None:
            return cached
        body = await self._upstream.get(
            str(self._settings.geocoding_url),
            {"name": name, "count": 10, "language": self._settings.language, "format": "json"},
        )
        results = body.get("results", [])
        if not isinstance(results, list) or not all(
            isinstance(r, dict) and {"name", "latitude", "longitude"} <= r.keys() for r in results
        ):
            raise _malformed(ValueError("geocoding results"))
        self._geocodes[key] = results
        return results

    async def _timezone_at(self, place: Place) -> str:
        """The IANA timezone Open-Meteo gives the coordinates (a request for no variables)."""
        body = await self._forecast(place, ("timezone",), {})
        return str(body.get("timezone") or place.timezone)

    async def _forecast(
        self, place: Place, kind: tuple[Any, ...], params: dict[str, Any]
    ) -> dict[str, Any]:
        key = (*kind, round(place.latitude, 4), round(place.longitude, 4))
        cached = self._forecasts.get(key)
        if cached is not None:
            return cached
        query = {
            "latitude": place.latitude,
            "longitude": place.longitude,
            "timezone": "auto",
            **params,
        }
        if self._settings.units == "imperial":
            query.update(_IMPERIAL)
        body = await self._upstream.get(str(self._settings.forecast_url), query)
        self._forecasts[key] = body
        return body

    def _head(
        self, place: Place, alternatives: list[str], body: dict[str, Any], units_key: str
    ) -> dict[str, Any]:
        units = body.get(units_key, {})
        metric = self._settings.units == "metric"
        return {
            "place": place.model_copy(
                update={"timezone": str(body.get("timezone") or place.timezone)}
            ),
            "alternatives": alternatives,
            "units": Units(
                system=self._settings.units,
                temperature=units.get(
                    "temperature_2m", units.get("temperature_2m_max", "°C" if metric else "°F")
                ),
                wind_speed=units.get(
                    "wind_speed_10m", units.get("wind_speed_10m_max", "km/h" if metric else "mph")
                ),
                precipitation=units.get(
                    "precipitation", units.get("precipitation_sum", "mm" if metric else "inch")
                ),
            ),
        }


def _day(daily: dict[str, Any], i: int) -> DailyWeather:
    code = _at(daily, "weather_code", i)
    return DailyWeather(
        date=str(daily["time"][i]),
        conditions=describe(code),
        weather_code=code,
        temperature_max=_at(daily, "temperature_2m_max", i),
        temperature_min=_at(daily, "temperature_2m_min", i),
        precipitation_sum=_at(daily, "precipitation_sum", i),
        precipitation_probability_max=_at(daily, "precipitation_probability_max", i),
        wind_speed_max=_at(daily, "wind_speed_10m_max", i),
        sunrise=_at(daily, "sunrise", i),
        sunset=_at(daily, "sunset", i),
    )


def _hour(hourly: dict[str, Any], i: int) -> HourlyWeather:
    code = _at(hourly, "weather_code", i)
    return HourlyWeather(
        time=str(hourly["time"][i])[11:16],
        conditions=describe(code),
        weather_code=code,
        temperature=_at(hourly, "temperature_2m", i),
        precipitation_probability=_at(hourly, "precipitation_probability", i),
        precipitation=_at(hourly, "precipitation", i),
        wind_speed=_at(hourly, "wind_speed_10m", i),
    )


def _at(series: dict[str, Any], key: str, i: int) -> Any:
    values = series.get(key)
    return values[i] if isinstance(values, list) and i < len(values) else None


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


def _malformed(error: Exception) -> UpstreamUnavailable:
    logger.warning("open-meteo answer had an unexpected shape: %r", error)
    return UpstreamUnavailable(TRY_LATER.format(why="Open-Meteo sent a malformed answer"))
