"""The two Open-Meteo endpoints we call, with their failures mapped to WeatherErrors."""

from __future__ import annotations

import logging
from typing import Any

import httpx2

from mcp_weather.errors import InvalidRequest, UpstreamUnavailable

logger = logging.getLogger(__name__)

TRY_LATER = "Weather data is temporarily unavailable ({why}); try again in a minute."


class OpenMeteo:
    """GETs JSON from Open-Meteo; one client, opened lazily, closed by the server's lifespan."""

    def __init__(
        self,
        *,
        timeout_s: float,
        transport: httpx2.AsyncBaseTransport | None = None,
    ) -> None:
        self._timeout_s = timeout_s
        self._transport = transport
        self._client: httpx2.AsyncClient | None = None

    def _http(self) -> httpx2.AsyncClient:
        if self._client is None or self._client.is_closed:
            self._client = httpx2.AsyncClient(
                timeout=self._timeout_s,
                transport=self._transport,
                headers={"user-agent": "clawmesh-weather (+https://github.com/clawmesh)"},
            )
        return self._client

    @property
    def is_open(self) -> bool:
        return self._client is None or not self._client.is_closed

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()

    async def get(self, url: str, params: dict[str, Any]) -> dict[str, Any]:
        try:
            response = await self._http().get(url, params=params)
        except httpx2.TimeoutException as error:
            logger.warning("open-meteo timeout: %s", type(error).__name__)
            raise UpstreamUnavailable(
                TRY_LATER.format(why=f"Open-Meteo did not answer within {self._timeout_s:g} s")
            ) from error
        except httpx2.TransportError as error:
            logger.warning("open-meteo unreachable: %s", type(error).__name__)
            raise UpstreamUnavailable(TRY_LATER.format(why="Open-Meteo is unreachable")) from error
        if response.status_code == 429:
            raise UpstreamUnavailable(TRY_LATER.format(why="Open-Meteo is rate limiting"))
        if response.status_code >= 500:
            logger.warning("open-meteo answered %d", response.status_code)
            raise UpstreamUnavailable(
                TRY_LATER.format(why=f"Open-Meteo answered {response.status_code}")
            )
        body = _json(response)
        if response.status_code >= 400 or body.get("error"):
            reason = str(body.get("reason") or f"HTTP {response.status_code}")
            raise InvalidRequest(f"Open-Meteo refused the request: {reason}")
        return body


def _json(response: httpx2.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError as error:
        logger.warning("open-meteo sent non-JSON (status %d)", response.status_code)
        raise UpstreamUnavailable(
            TRY_LATER.format(why="Open-Meteo sent a malformed answer")
        ) from error
    if not isinstance(body, dict):
        raise UpstreamUnavailable(TRY_LATER.format(why="Open-Meteo sent a malformed answer"))
    return body
