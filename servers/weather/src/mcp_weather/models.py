"""What the weather tools return. Times are the place's local time (ISO 8601, no offset)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Place(BaseModel):
    name: str = Field(description="Place name, with region and country when known")
    country: str | None
    country_code: str | None
    latitude: float
    longitude: float
    timezone: str = Field(description="IANA timezone of the place; all times are local to it")
    population: int | None = None


class Units(BaseModel):
    system: str = Field(description="metric or imperial")
    temperature: str
    wind_speed: str
    precipitation: str


class Located(BaseModel):
    """Common head of every answer: which place was used and what else matched."""

    place: Place
    alternatives: list[str] = Field(
        default_factory=list,
        description="Other places that matched the name, most populous first; "
        "if the user may have meant one of them, ask",
    )
    units: Units


class CurrentWeather(Located):
    time: str = Field(description="Local time of the observation")
    conditions: str
    weather_code: int | None
    temperature: float | None
    feels_like: float | None
    humidity_percent: float | None
    precipitation: float | None
    wind_speed: float | None
    wind_direction_deg: float | None
    is_day: bool | None


class DailyWeather(BaseModel):
    date: str
    conditions: str
    weather_code: int | None
    temperature_max: float | None
    temperature_min: float | None
    precipitation_sum: float | None
    precipitation_probability_max: float | None
    wind_speed_max: float | None
    sunrise: str | None
    sunset: str | None


class Forecast(Located):
    days: list[DailyWeather]


class HourlyWeather(BaseModel):
    time: str = Field(description="Local time, HH:MM")
    conditions: str
    weather_code: int | None
    temperature: float | None
    precipitation_probability: float | None
    precipitation: float | None
    wind_speed: float | None


class HourlyForecast(Located):
    date: str
    hours: list[HourlyWeather]
