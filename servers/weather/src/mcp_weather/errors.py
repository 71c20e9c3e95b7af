"""Weather errors, each written for the model.

WeatherError (meshkit ModelError)
 ├── UnknownLocation       no place by that name: add the country, or give lat,lon
 ├── InvalidRequest        days or date out of range, or refused upstream
 └── UpstreamUnavailable   Open-Meteo timed out, failed (5xx) or rate limited (429)
"""

from __future__ import annotations

from meshkit.errors import ModelError


class WeatherError(ModelError):
    pass


class UnknownLocation(WeatherError):
    pass


class InvalidRequest(WeatherError):
    pass


class UpstreamUnavailable(WeatherError):
    pass
