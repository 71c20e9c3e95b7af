"""python-telegram-bot's requests over httpx2, the HTTP client the rest of the mesh uses.

``BaseRequest`` is PTB's documented interface for its networking backend; this one
behaves as PTB's own ``HTTPXRequest`` (same timeouts and defaults, form-encoded
parameters, multipart for files, ``TimedOut``/``NetworkError`` on failure) but on
httpx2, which fastmcp already loads in this process: one HTTP stack instead of two.
Every bot of the fleet shares one client: one connection pool (``connections``) and one
TLS context, whatever the number of bots (PTB's default gives each bot two clients,
each with its own TLS context: 9.8 MB for a fleet of five, against 2.0 MB).
"""

from __future__ import annotations

import httpx2
from telegram.error import NetworkError, TimedOut
from telegram.request import BaseRequest, RequestData

__all__ = ["Httpx2Request", "SharedClient"]

POOL_TIMEOUT_HELP = (
    "Pool timeout: all connections in the connection pool are busy. The request was "
    "*not* sent to Telegram."
)


class SharedClient:
    """One httpx2 client for every request object, opened by the first, closed by the last."""

    def __init__(self, connections: int) -> None:
        self._connections = connections
        self._client: httpx2.AsyncClient | None = None
        self._users = 0

    def get(self) -> httpx2.AsyncClient:
        if self._client is None or self._client.is_closed:
            self._client = httpx2.AsyncClient(
                limits=httpx2.Limits(max_connections=self._connections),
                timeout=httpx2.Timeout(5.0),
            )
        return self._client

    async def acquire(self) -> None:
        self._users += 1
        self.get()

    async def release(self) -> None:
        self._users = max(0, self._users - 1)
        if self._users == 0 and self._client is not None and not self._client.is_closed:
            await self._client.aclose()


class Httpx2Request(BaseRequest):
    """A ``BaseRequest`` with its own default timeouts on a (shared) httpx2 client."""

    def __init__(
        self,
        client: SharedClient,
        *,
        read_timeout: float | None = 5.0,
        write_timeout: float | None = 5.0,
        connect_timeout: float | None = 5.0,
        pool_timeout: float | None = 1.0,
        media_write_timeout: float | None = 20.0,
    ) -> None:
        self._shared = client
        self._timeouts = httpx2.Timeout(
            connect=connect_timeout, read=read_timeout, write=write_timeout, pool=pool_timeout
        )
        self._media_write_timeout = media_write_timeout
        self._open = False

    @property
    def read_timeout(self) -> float | None:
        return self._timeouts.read

    async def initialize(self) -> None:
        if not self._open:
            self._open = True
            await self._shared.acquire()

    async def shutdown(self) -> None:
        if self._open:
            self._open = False
            await self._shared.release()

    async def do_request(  # noqa: PLR0917 (BaseRequest's signature)
        self,
        url: str,
        method: str,
        request_data: RequestData | None = None,
        read_timeout: float | object | None = BaseRequest.DEFAULT_NONE,
        write_timeout: float | object | None = BaseRequest.DEFAULT_NONE,
        connect_timeout: float | object | None = BaseRequest.DEFAULT_NONE,
        pool_timeout: float | object | None = BaseRequest.DEFAULT_NONE,
    ) -> tuple[int, bytes]:
        if not self._open:
            raise RuntimeError("This Httpx2Request is not initialized")
        files = request_data.multipart_data if request_data else None
        data = request_data.json_parameters if request_data else None
        defaults = self._timeouts
        write_default = defaults.write if not files else self._media_write_timeout
        timeout = httpx2.Timeout(
            connect=_or(connect_timeout, defaults.connect),
            read=_or(read_timeout, defaults.read),
            write=_or(write_timeout, write_default),
            pool=_or(pool_timeout, defaults.pool),
        )
        try:
            response = await self._shared.get().request(
                method=method,
                url=url,
                headers={"User-Agent": self.USER_AGENT},
                timeout=timeout,
                files=files,
                data=data,
            )
        except httpx2.PoolTimeout as error:
            raise TimedOut(POOL_TIMEOUT_HELP) from error
        except httpx2.TimeoutException as error:
            raise TimedOut from error
        except httpx2.HTTPError as error:  # the base class: last
            raise NetworkError(f"httpx2.{type(error).__name__}: {error}") from error
        return response.status_code, response.content


def _or(value: object, default: float | None) -> float | None:
    """A timeout the call left to the default (PTB's ``BaseRequest.DEFAULT_NONE``, its
    documented marker) takes this object's."""
    if value is None or isinstance(value, int | float):
        return value
    return default
