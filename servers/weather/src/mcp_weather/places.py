"""Free text to a place: "Paris", "Springfield, IL", "Zürich", or "48.85,2.35".

The part before the first comma is searched with Open-Meteo geocoding; the
parts after it (region, state, country, or a US state code) narrow the matches.
Of what remains, the most populous place wins and the others are reported as
alternatives, so the model can ask when the choice was not obvious.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from mcp_weather.models import Place

_COORDINATES = re.compile(r"^\s*([-+]?\d{1,3}(?:\.\d+)?)\s*[,;\s]\s*([-+]?\d{1,3}(?:\.\d+)?)\s*$")

US_STATES = {
    "AL": "Alabama",
    "AK": "Alaska",
    "AZ": "Arizona",
    "AR": "Arkansas",
    "CA": "California",
    "CO": "Colorado",
    "CT": "Connecticut",
    "DE": "Delaware",
    "DC": "District of Columbia",
    "FL": "Florida",
    "GA": "Georgia",
    "HI": "Hawaii",
    "ID": "Idaho",
    "IL": "Illinois",
    "IN": "Indiana",
    "IA": "Iowa",
    "KS": "Kansas",
    "KY": "Kentucky",
    "LA": "Louisiana",
    "ME": "Maine",
    "MD": "Maryland",
    "MA": "Massachusetts",
    "MI": "Michigan",
    "MN": "Minnesota",
    "MS": "Mississippi",
    "MO": "Missouri",
    "MT": "Montana",
    "NE": "Nebraska",
    "NV": "Nevada",
    "NH": "New Hampshire",
    "NJ": "New Jersey",
    "NM": "New Mexico",
    "NY": "New York",
    "NC": "North Carolina",
    "ND": "North Dakota",
    "OH": "Ohio",
    "OK": "Oklahoma",
    "OR": "Oregon",
    "PA": "Pennsylvania",
    "RI": "Rhode Island",
    "SC": "South Carolina",
    "SD": "South Dakota",
    "TN": "Tennessee",
    "TX": "Texas",
    "UT": "Utah",
    "VT": "Vermont",
    "VA": "Virginia",
    "WA": "Washington",
    "WV": "West Virginia",
    "WI": "Wisconsin",
    "WY": "Wyoming",
}
_COUNTRY_ALIASES = {
    "usa": "us",
    "united states of america": "us",
    "uk": "gb",
    "england": "gb",
    "great britain": "gb",
}


@dataclass(frozen=True)
class Query:
    """A parsed location: either coordinates or a name with qualifiers."""

    name: str
    qualifiers: tuple[str, ...] = ()
    coordinates: tuple[float, float] | None = None


def parse(location: str) -> Query | None:
    """None when there is nothing to look up."""
    text = " ".join(location.split())
    if not text:
        return None
    match = _COORDINATES.match(text)
    if match:
        lat, lon = float(match[1]), float(match[2])
        if -90 <= lat <= 90 and -180 <= lon <= 180:
            return Query(name=f"{lat:.4f},{lon:.4f}", coordinates=(lat, lon))
        return None
    name, *rest = (part.strip() for part in text.split(","))
    return Query(name=name, qualifiers=tuple(q for q in rest if q))


def fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c)).strip()


def _labels(result: dict[str, Any]) -> set[str]:
    labels = {
        fold(str(result[key]))
        for key in ("country", "country_code", "admin1", "admin2", "admin3", "admin4")
        if result.get(key)
    }
    if result.get("country_code") == "US":
        labels |= {
            fold(code)
            for code, state in US_STATES.items()
            if fold(state) == fold(str(result.get("admin1", "")))
        }
    return labels


def matches(result: dict[str, Any], qualifiers: tuple[str, ...]) -> bool:
    labels = _labels(result)
    for qualifier in qualifiers:
        q = fold(qualifier)
        if q not in labels and _COUNTRY_ALIASES.get(q) not in labels:
            return False
    return True


def display_name(result: dict[str, Any]) -> str:
    parts = [str(result["name"])]
    for key in ("admin1", "country"):
        value = result.get(key)
        if value and value not in parts:
            parts.append(str(value))
    return ", ".join(parts)


def to_place(result: dict[str, Any]) -> Place:
    return Place(
        name=display_name(result),
        country=result.get("country"),
        country_code=result.get("country_code"),
        latitude=float(result["latitude"]),
        longitude=float(result["longitude"]),
        timezone=str(result.get("timezone") or "GMT"),
        population=result.get("population"),
    )


def by_population(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Most populous first; the geocoder's own (relevance) order breaks ties."""
    return sorted(results, key=lambda r: -(r.get("population") or 0))
