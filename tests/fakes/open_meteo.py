"""A fake Open-Meteo (geocoding and forecast) that follows the real API contract.

    GET /v1/search?name=&count=&language=&format=json
    GET /v1/forecast?latitude=&longitude=&timezone=auto&current=|hourly=|daily=
        &forecast_days=&past_days=&start_date=&end_date=
        &temperature_unit=&wind_speed_unit=&precipitation_unit=

Answers have the real shapes: geocoding omits ``results`` when nothing matches; a
forecast carries only the sections and variables asked for, with unit strings that
follow the unit parameters; bad parameters get ``400 {"error": true, "reason": ...}``.
Weather is deterministic (a function of coordinates, date and hour) and consistent
across sections: ``current`` is the 14:00 hour of today, a day's maximum is the
maximum of its hours. "Today" is ``FakeOpenMeteo(today=...)``, whatever the clock says.

It is a Starlette app: in process through :meth:`FakeOpenMeteo.transport`, or served
by uvicorn (``fakes.serving.serving(fake.app)``). ``fail_with`` injects the upstream
failures a client must survive: 429, 500, 503, a silent server ("timeout": requests
hang until ``release()``), and a 200 whose body is not JSON ("malformed").
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import unicodedata
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import anyio
import httpx2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

Fault = Literal[429, 500, 503, "timeout", "malformed"]
Params = dict[str, str]

TODAY = dt.date(2026, 11, 22)
CURRENT_HOUR = 14  # ``current`` is today at 14:00 local time
MAX_FORECAST_DAYS = 16
MAX_PAST_DAYS = 92


def _place(**fields: Any) -> dict[str, Any]:
    return fields


# Real GeoNames records, as Open-Meteo geocoding returns them (ids, admin ids included).
GAZETTEER: tuple[dict[str, Any], ...] = (
    _place(id=2988507, name="Paris", latitude=48.85341, longitude=2.3488, elevation=42.0,
           feature_code="PPLC", country_code="FR", admin1_id=3012874, admin2_id=2968815,
           timezone="Europe/Paris", population=2138551, country_id=3017382, country="France",
           admin1="Île-de-France", admin2="Paris"),
    _place(id=4717560, name="Paris", latitude=33.66094, longitude=-95.55551, elevation=183.0,
           feature_code="PPLA2", country_code="US", admin1_id=4736286, admin2_id=4705086,
           timezone="America/Chicago", population=24782, postcodes=["75460", "75461"],
           country_id=6252001, country="United States", admin1="Texas", admin2="Lamar"),
    _place(id=4409896, name="Springfield", latitude=37.21533, longitude=-93.29824,
           elevation=396.0, feature_code="PPLA2", country_code="US", admin1_id=4398678,
           admin2_id=4391812, timezone="America/Chicago", population=169176,
           postcodes=["65801", "65802"], country_id=6252001, country="United States",
           admin1="Missouri", admin2="Greene"),
    _place(id=4951788, name="Springfield", latitude=42.10148, longitude=-72.58981,
           elevation=21.0, feature_code="PPLA2", country_code="US", admin1_id=6254926,
           admin2_id=4938757, timezone="America/New_York", population=155929,
           postcodes=["01101", "01102"], country_id=6252001, country="United States",
           admin1="Massachusetts", admin2="Hampden"),
    _place(id=4250542, name="Springfield", latitude=39.80172, longitude=-89.64371,
           elevation=182.0, feature_code="PPLA", country_code="US", admin1_id=4896861,
           admin2_id=4250542, timezone="America/Chicago", population=114230,
           postcodes=["62701", "62702"], country_id=6252001, country="United States",
           admin1="Illinois", admin2="Sangamon"),
    _place(id=5754005, name="Springfield", latitude=44.04624, longitude=-123.02203,
           elevation=140.0, feature_code="PPL", country_code="US", admin1_id=5744337,
           admin2_id=5735238, timezone="America/Los_Angeles", population=62256,
           postcodes=["97477", "97478"], country_id=6252001, country="United States",
           admin1="Oregon", admin2="Lane"),
    _place(id=2657896, name="Zürich", latitude=47.36667, longitude=8.55, elevation=429.0,
           feature_code="PPLA", country_code="CH", admin1_id=2657895, admin2_id=6458798,
           admin3_id=7287650, timezone="Europe/Zurich", population=341730,
           postcodes=["8000", "8001"], country_id=2658434, country="Switzerland",
           admin1="Zurich", admin2="Bezirk Zürich", admin3="Zürich"),
    _place(id=2643743, name="London", latitude=51.50853, longitude=-0.12574, elevation=25.0,
           feature_code="PPLC", country_code="GB", admin1_id=6269131, admin2_id=2648110,
           timezone="Europe/London", population=8961989, country_id=2635167,
           country="United Kingdom", admin1="England", admin2="Greater London"),
    _place(id=6058560, name="London", latitude=42.98339, longitude=-81.23304, elevation=251.0,
           feature_code="PPL", country_code="CA", admin1_id=6093943, admin2_id=6073256,
           timezone="America/Toronto", population=346765, country_id=6251999,
           country="Canada", admin1="Ontario", admin2="Middlesex"),
)  # fmt: skip

# Variable -> kind of unit, per section (the subset of the real catalogue a client may ask).
_VARIABLES: dict[str, str] = {
    "temperature_2m": "temperature",
    "apparent_temperature": "temperature",
    "relative_humidity_2m": "percent",
    "precipitation": "precipitation",
    "precipitation_probability": "percent",
    "weather_code": "wmo",
    "cloud_cover": "percent",
    "wind_speed_10m": "wind",
    "wind_direction_10m": "degrees",
    "is_day": "flag",
}
_DAILY_VARIABLES: dict[str, str] = {
    "weather_code": "wmo",
    "temperature_2m_max": "temperature",
    "temperature_2m_min": "temperature",
    "precipitation_sum": "precipitation",
    "precipitation_probability_max": "percent",
    "wind_speed_10m_max": "wind",
    "sunrise": "iso8601",
    "sunset": "iso8601",
}
_UNITS: dict[str, dict[str, str]] = {
    "temperature_unit": {"celsius": "°C", "fahrenheit": "°F"},
    "wind_speed_unit": {"kmh": "km/h", "ms": "m/s", "mph": "mp/h", "kn": "kn"},
    "precipitation_unit": {"mm": "mm", "inch": "inch"},
}
_FIXED_UNITS = {"percent": "%", "wmo": "wmo code", "degrees": "°", "flag": "", "iso8601": "iso8601"}
_WIND_FACTOR = {"kmh": 1.0, "ms": 1 / 3.6, "mph": 1 / 1.609344, "kn": 1 / 1.852}
_PRECIPITATING = {51: (0.1, 0.3), 61: (0.2, 1.0), 63: (1.0, 3.0), 80: (0.5, 2.0), 95: (2.0, 6.0)}
_SNOW = {51: 71, 61: 71, 63: 73, 80: 85, 95: 75}


class BadRequest(Exception):
    """Answered as 400 with the reason, like the real API."""


class FakeOpenMeteo:
    """Both Open-Meteo hosts as one app; ``requests`` records (path, query) of every request."""

    def __init__(self, today: dt.date = TODAY) -> None:
        self.today = today
        self.requests: list[tuple[str, Params]] = []
        self._fault: Fault | None = None
        self._released: anyio.Event | None = None
        self._closed = False
        self.app = Starlette(
            routes=[
                Route("/v1/search", self._endpoint(self._search)),
                Route("/v1/forecast", self._endpoint(self._forecast)),
            ]
        )

    def transport(self) -> httpx2.ASGITransport:
        return _TimedASGITransport(app=self.app)

    def fail_with(self, fault: Fault) -> None:
        """Every following request fails this way until ``clear_fault()``."""
        self._fault = fault

    def clear_fault(self) -> None:
        self._fault = None
        self.release()

    def release(self) -> None:
        """Let the requests hanging under the "timeout" fault go on (they then answer).

        Call it from the event loop that serves the app (the test's own, in process).
        """
        if self._released is not None:
            self._released.set()
            self._released = None

    def close(self) -> None:
        """Release everything that hangs; nothing hangs afterwards."""
        self._closed = True
        self.release()

    def paths(self) -> list[str]:
        return [path for path, _ in self.requests]

    def _endpoint(
        self, answer: Callable[[Params], dict[str, Any]]
    ) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            params = dict(request.query_params)
            self.requests.append((request.url.path, params))
            if self._fault == "timeout" and not self._closed:
                if self._released is None:
                    self._released = anyio.Event()
                await self._released.wait()
            elif self._fault is not None:
                return _faulty(self._fault)
            try:
                return JSONResponse(answer(params))
            except BadRequest as error:
                return JSONResponse({"error": True, "reason": str(error)}, status_code=400)

        return endpoint

    def _search(self, params: Params) -> dict[str, Any]:
        name = _fold(params.get("name", ""))
        count = _integer(params, "count", default=10, low=1, high=100)
        if len(name) < 2:
            found: list[dict[str, Any]] = []
        else:
            # Two letters match exactly; longer names match as prefixes (like the real one).
            found = [
                place
                for place in GAZETTEER
                if _fold(place["name"]) == name
                or (len(name) >= 3 and _fold(place["name"]).startswith(name))
            ]
        found.sort(key=lambda p: (_fold(p["name"]) != name, -p["population"]))
        body: dict[str, Any] = {"generationtime_ms": 0.7}
        if found:
            body["results"] = [dict(place) for place in found[:count]]
        return body

    def _forecast(self, params: Params) -> dict[str, Any]:
        latitude = _coordinate(params, "latitude", 90)
        longitude = _coordinate(params, "longitude", 180)
        zone_name = _zone_name(params.get("timezone", "GMT"), latitude, longitude)
        zone = ZoneInfo(zone_name)
        units = {key: params.get(key, next(iter(options))) for key, options in _UNITS.items()}
        for key, value in units.items():
            if value not in _UNITS[key]:
                raise BadRequest(
                    f"Cannot initialize {_camel(key)} from invalid String value {value}."
                )
        first, last = self._dates(params)
        noon = dt.datetime.combine(self.today, dt.time(CURRENT_HOUR), zone)
        offset = noon.utcoffset() or dt.timedelta()
        place = _nearest(latitude, longitude, within_deg=0.25)
        body: dict[str, Any] = {
            "latitude": _snap(latitude),
            "longitude": _snap(longitude),
            "generationtime_ms": 0.05,
            "utc_offset_seconds": int(offset.total_seconds()),
            "timezone": zone_name,
            "timezone_abbreviation": noon.tzname() or zone_name,
            "elevation": place["elevation"] if place else float(round(_noise(latitude) * 900)),
        }
        weather = _Weather(latitude, longitude, offset, units)
        if "current" in params:
            names = _variables(params["current"], _VARIABLES, "current")
            hour = weather.hour(self.today, CURRENT_HOUR)
            body["current_units"] = {"time": "iso8601", "interval": "seconds"} | _unit_strings(
                names, _VARIABLES, units
            )
            body["current"] = {
                "time": f"{self.today}T{CURRENT_HOUR:02d}:00",
                "interval": 900,
            } | {name: hour[name] for name in names}
        days = [first + dt.timedelta(days=i) for i in range((last - first).days + 1)]
        if "hourly" in params:
            names = _variables(params["hourly"], _VARIABLES, "hourly")
            hours = [(day, h, weather.hour(day, h)) for day in days for h in range(24)]
            body["hourly_units"] = {"time": "iso8601"} | _unit_strings(names, _VARIABLES, units)
            body["hourly"] = {"time": [f"{d}T{h:02d}:00" for d, h, _ in hours]} | {
                name: [values[name] for _, _, values in hours] for name in names
            }
        if "daily" in params:
            names = _variables(params["daily"], _DAILY_VARIABLES, "daily")
            daily = [weather.day(day) for day in days]
            body["daily_units"] = {"time": "iso8601"} | _unit_strings(
                names, _DAILY_VARIABLES, units
            )
            body["daily"] = {"time": [day.isoformat() for day in days]} | {
                name: [values[name] for values in daily] for name in names
            }
        return body

    def _dates(self, params: Params) -> tuple[dt.date, dt.date]:
        earliest = self.today - dt.timedelta(days=MAX_PAST_DAYS)
        latest = self.today + dt.timedelta(days=MAX_FORECAST_DAYS - 1)
        if "start_date" in params or "end_date" in params:
            if "start_date" not in params or "end_date" not in params:
                raise BadRequest("Parameter 'start_date' and 'end_date' must both be set.")
            start, end = _date(params, "start_date"), _date(params, "end_date")
            for key, value in (("start_date", start), ("end_date", end)):
                if not earliest <= value <= latest:
                    raise BadRequest(
                        f"Parameter '{key}' is out of allowed range from {earliest} to {latest}"
                    )
            if end < start:
                raise BadRequest("End-date must be larger or equal than start-date")
            return start, end
        past = _integer(params, "past_days", default=0, low=0, high=MAX_PAST_DAYS)
        days = _integer(params, "forecast_days", default=7, low=0, high=MAX_FORECAST_DAYS)
        return self.today - dt.timedelta(days=past), self.today + dt.timedelta(days=days - 1)


class _TimedASGITransport(httpx2.ASGITransport):
    """An ASGITransport that honours the read timeout, as a network transport does.

    httpx's ASGITransport ignores timeouts, so a fake that hangs would hang the test;
    here it raises ``ReadTimeout`` like a real silent server would.
    """

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        timeouts = request.extensions.get("timeout", {})
        read = timeouts.get("read")
        with anyio.move_on_after(math.inf if read is None else read):
            return await super().handle_async_request(request)
        raise httpx2.ReadTimeout("the fake Open-Meteo did not answer in time", request=request)


@dataclass(frozen=True)
class _Weather:
    """Deterministic, plausible weather at one grid point, in the requested units."""

    latitude: float
    longitude: float
    utc_offset: dt.timedelta
    units: Params

    def hour(self, day: dt.date, hour: int) -> dict[str, Any]:
        return self._convert(self._metric_hour(day, hour))

    def day(self, day: dt.date) -> dict[str, Any]:
        hours = [self._metric_hour(day, h) for h in range(24)]
        sunrise, sunset = self.sun(day)
        return {
            # Open-Meteo's daily code is the most severe of the day; WMO codes rise with it.
            "weather_code": max(h["weather_code"] for h in hours),
            "temperature_2m_max": self._temperature(max(h["temperature_2m"] for h in hours)),
            "temperature_2m_min": self._temperature(min(h["temperature_2m"] for h in hours)),
            "precipitation_sum": self._precipitation(sum(h["precipitation"] for h in hours)),
            "precipitation_probability_max": max(h["precipitation_probability"] for h in hours),
            "wind_speed_10m_max": self._wind(max(h["wind_speed_10m"] for h in hours)),
            "sunrise": sunrise.isoformat(timespec="minutes"),
            "sunset": sunset.isoformat(timespec="minutes"),
        }

    def _metric_hour(self, day: dt.date, hour: int) -> dict[str, Any]:
        key = (round(self.latitude, 2), round(self.longitude, 2), day.isoformat())
        north = 1 if self.latitude >= 0 else -1
        season = math.cos(2 * math.pi * (day.timetuple().tm_yday - 200) / 365.25)
        mean = 27 - 0.4 * abs(self.latitude) + north * 0.25 * abs(self.latitude) * season
        celsius = mean + 6 * (_noise(*key, "t") - 0.5) + 4 * math.sin(math.pi * (hour - 9) / 12)
        code = self._code(day, hour, celsius)
        low, high = _PRECIPITATING.get(_rain_of(code), (0.0, 0.0))
        wet = high > 0
        wind_kmh = 3 + 30 * _noise(*key, "w") + 6 * _noise(*key, hour, "w")
        sunrise, sunset = self.sun(day)
        moment = dt.datetime.combine(day, dt.time(hour))
        return {
            "temperature_2m": celsius,
            "apparent_temperature": celsius - wind_kmh / 10,
            "relative_humidity_2m": round(
                85 + 14 * _noise(*key, "h") if wet else 55 + 40 * _noise(*key, hour, "h")
            ),
            "precipitation": low + (high - low) * _noise(*key, hour, "p") if wet else 0.0,
            "precipitation_probability": round(
                60 + 35 * _noise(*key, "pp") if wet else 25 * _noise(*key, hour, "pp")
            ),
            "weather_code": code,
            "cloud_cover": {0: 5, 1: 20, 2: 50}.get(code, 100),
            "wind_speed_10m": wind_kmh,
            "wind_direction_10m": round(360 * _noise(*key, hour, "d")) % 360,
            "is_day": int(sunrise <= moment < sunset),
        }

    def _convert(self, metric: dict[str, Any]) -> dict[str, Any]:
        converters: dict[str, Callable[[float], float]] = {
            "temperature": self._temperature,
            "wind": self._wind,
            "precipitation": self._precipitation,
        }
        return {
            name: converters[_VARIABLES[name]](value) if _VARIABLES[name] in converters else value
            for name, value in metric.items()
        }

    def sun(self, day: dt.date) -> tuple[dt.datetime, dt.datetime]:
        """Sunrise and sunset in local time (the standard sunrise equation)."""
        declination = -23.44 * math.cos(2 * math.pi * (day.timetuple().tm_yday + 10) / 365)
        cos_angle = -math.tan(math.radians(self.latitude)) * math.tan(math.radians(declination))
        half_day_h = math.degrees(math.acos(max(-1.0, min(1.0, cos_angle)))) / 15
        noon_h = 12 - self.longitude / 15 + self.utc_offset.total_seconds() / 3600
        midnight = dt.datetime.combine(day, dt.time())
        rise = midnight + dt.timedelta(hours=max(0.0, noon_h - half_day_h))
        setting = midnight + dt.timedelta(hours=min(23 + 59 / 60, noon_h + half_day_h))
        return rise.replace(second=0, microsecond=0), setting.replace(second=0, microsecond=0)

    def _code(self, day: dt.date, hour: int, celsius: float) -> int:
        regime = (0, 1, 2, 3, 45, 51, 61, 63, 80, 95)[int(10 * _noise(self.latitude, day, "c"))]
        if regime in _PRECIPITATING and _noise(self.longitude, day, hour, "c") < 0.5:
            code = 3  # showers come and go: overcast between them
        elif regime < 3:
            code = max(0, regime - int(2 * _noise(day, hour, "c")))
        else:
            code = regime
        return _SNOW[code] if code in _SNOW and celsius < 0.5 else code

    def _temperature(self, celsius: float) -> float:
        if self.units["temperature_unit"] == "fahrenheit":
            return round(celsius * 9 / 5 + 32, 1)
        return round(celsius, 1)

    def _wind(self, kmh: float) -> float:
        return round(kmh * _WIND_FACTOR[self.units["wind_speed_unit"]], 1)

    def _precipitation(self, mm: float) -> float:
        if self.units["precipitation_unit"] == "inch":
            return round(mm / 25.4, 3)
        return round(mm, 1)


def _faulty(fault: Fault) -> Response:
    if fault == 429:
        reason = "Minutely API request limit exceeded. Please try again in one minute."
        return JSONResponse({"error": True, "reason": reason}, status_code=429)
    if fault == 503:  # the load balancer answers, in HTML
        html = "<html><body><h1>503 Service Temporarily Unavailable</h1></body></html>"
        return Response(html, status_code=503, media_type="text/html")
    if fault == "malformed":  # a body cut short
        return Response('{"latitude":52.52,"longitude":', media_type="application/json")
    return JSONResponse({"error": True, "reason": "Internal Server Error"}, status_code=500)


def _rain_of(code: int) -> int:
    """The rain code a snow code stands for, so snow precipitates as much as rain."""
    return next((rain for rain, snow in _SNOW.items() if snow == code), code)


def _variables(text: str, known: dict[str, str], section: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    for name in names:
        if name not in known:
            kind = {"current": "Current", "hourly": "Hourly", "daily": "Daily"}[section]
            raise BadRequest(
                f"Cannot initialize ForecastVariable{kind} from invalid String value {name}."
            )
    return names


def _unit_strings(names: Iterable[str], known: dict[str, str], units: Params) -> Params:
    by_kind = {
        "temperature": _UNITS["temperature_unit"][units["temperature_unit"]],
        "wind": _UNITS["wind_speed_unit"][units["wind_speed_unit"]],
        "precipitation": _UNITS["precipitation_unit"][units["precipitation_unit"]],
        **_FIXED_UNITS,
    }
    return {name: by_kind[known[name]] for name in names}


def _coordinate(params: Params, key: str, limit: int) -> float:
    try:
        value = float(params[key])
    except KeyError:
        raise BadRequest(f"Parameter '{key}' is required.") from None
    except ValueError:
        raise BadRequest(f"Parameter '{key}' must be a number.") from None
    if not -limit <= value <= limit:
        raise BadRequest(
            f"{key.capitalize()} must be in range of -{limit} to {limit}°. Given: {value}."
        )
    return value


def _integer(params: Params, key: str, *, default: int, low: int, high: int) -> int:
    try:
        value = int(params.get(key, default))
    except ValueError:
        raise BadRequest(f"Parameter '{key}' must be an integer.") from None
    if not low <= value <= high:
        label = key.replace("_", " ").capitalize()
        raise BadRequest(f"{label} is invalid. Allowed range {low} to {high}.")
    return value


def _date(params: Params, key: str) -> dt.date:
    try:
        return dt.date.fromisoformat(params[key])
    except ValueError:
        raise BadRequest(f"Parameter '{key}' must be a date as YYYY-MM-DD.") from None


def _zone_name(requested: str, latitude: float, longitude: float) -> str:
    if requested.lower() == "auto":
        place = _nearest(latitude, longitude, within_deg=5.0)
        return str(place["timezone"]) if place else "GMT"
    try:
        ZoneInfo(requested)
    except (ZoneInfoNotFoundError, ValueError):
        raise BadRequest("Invalid timezone") from None
    return requested


def _nearest(latitude: float, longitude: float, *, within_deg: float) -> dict[str, Any] | None:
    def distance(place: dict[str, Any]) -> float:
        return math.hypot(place["latitude"] - latitude, place["longitude"] - longitude)

    place = min(GAZETTEER, key=distance)
    return place if distance(place) <= within_deg else None


def _snap(degrees: float) -> float:
    """Open-Meteo answers with the coordinates of the grid cell it used."""
    return round(round(degrees / 0.025) * 0.025, 4)


def _fold(text: str) -> str:
    """Case- and accent-insensitive form, so "zurich" finds Zürich as the real geocoder does."""
    decomposed = unicodedata.normalize("NFKD", text.casefold().strip())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def _camel(key: str) -> str:
    return "".join(part.capitalize() for part in key.split("_"))


def _noise(*parts: object) -> float:
    """A stable pseudo-random number in [0, 1) (``hash()`` changes between runs)."""
    digest = hashlib.blake2b(repr(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64
