"""Weather server settings (env prefix ``WEATHER_``). Open-Meteo needs no key."""

from __future__ import annotations

from typing import Literal

from pydantic import AnyHttpUrl, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

Units = Literal["metric", "imperial"]


class WeatherSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="WEATHER_", extra="ignore", env_ignore_empty=True)

    units: Units = "metric"
    forecast_url: AnyHttpUrl = AnyHttpUrl("https://api.open-meteo.com/v1/forecast")
    geocoding_url: AnyHttpUrl = AnyHttpUrl("https://geocoding-api.open-meteo.com/v1/search")
    timeout_s: float = Field(default=5.0, gt=0, le=60)
    language: str = Field(default="en", pattern=r"^[a-z]{2}$")
