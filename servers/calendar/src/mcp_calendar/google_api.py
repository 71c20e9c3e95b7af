"""Google Calendar v3 through google-api-python-client: credentials, retries, errors.

The client is synchronous (httplib2): every request runs in a worker thread
(``anyio.to_thread``), at most ``CALENDAR_GOOGLE_THREADS`` at once, each on an ``Http`` of
its own (httplib2 is not thread-safe). The service is built from the discovery document
the library ships (``static_discovery``: no network), against ``CALENDAR_GOOGLE_API_URL``.

Credentials are the OAuth client file and the user's token file in
``CALENDAR_CREDENTIALS_DIR`` (``python -m mcp_calendar auth`` writes the token). The
access token is refreshed at ``CALENDAR_GOOGLE_TOKEN_URL`` when it expires or a request
answers 401 (google-auth-httplib2's ``AuthorizedHttp``); the refreshed token is written
back, or, on a read-only mount, kept in memory and said once in the log. A token file
that changes (the operator ran ``auth`` again) is read again at the next request.

Rate limits (429, 403 ``rateLimitExceeded``/``userRateLimitExceeded``), 5xx answers and an
unreachable Google are retried with exponential backoff, then become a one-line error.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import google_auth_httplib2  # type: ignore[import-untyped]
import httplib2  # type: ignore[import-untyped]
from google.auth.exceptions import RefreshError, TransportError
from google.oauth2.credentials import Credentials
from googleapiclient.discovery import build  # type: ignore[import-untyped]
from googleapiclient.errors import HttpError  # type: ignore[import-untyped]

from mcp_calendar.errors import CalendarError
from mcp_calendar.settings import CalendarSettings
from meshkit.health import CheckFailed

logger = logging.getLogger(__name__)

SCOPES = [
    "https://www.googleapis.com/auth/calendar.events",  # read and change events
    "https://www.googleapis.com/auth/calendar.readonly",  # the calendar list, free/busy
]
RUN_AUTH = "the operator must run `python -m mcp_calendar auth`"
RATE_REASONS = frozenset({"rateLimitExceeded", "userRateLimitExceeded"})


class CredentialsInvalid(CalendarError):
    """The token file is missing, unreadable, or Google no longer accepts it."""


class GoogleBusy(CalendarError):
    """Rate-limited or failing after every retry."""


class GoogleUnreachable(CalendarError):
    pass


class ApiFailure(CalendarError):
    """An answer the backend turns into its own error (404, 409, 410, 412, 403...); one it
    does not expect reaches the model as this one line."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(f"Google Calendar refused the request ({status} {reason or 'error'}).")
        self.status = status
        self.reason = reason


Request = Callable[[Any], Any]  # service -> googleapiclient HttpRequest


class GoogleAuth:
    """The user's credentials, read from the token file and refreshed as needed."""

    def __init__(self, settings: CalendarSettings) -> None:
        self._settings = settings
        self._credentials: Credentials | None = None
        self._read_at: float | None = None  # the token file's mtime when it was read
        self._saved: str | None = None  # the access token the file holds
        self._write_failed = False
        self.broken: str | None = None  # why Google refused the credentials

    def credentials(self) -> Credentials:
        path = self._settings.token_file
        try:
            mtime = path.stat().st_mtime
        except OSError:
            raise CredentialsInvalid(
                f"Google Calendar is not authorised yet (no {path}): {RUN_AUTH}."
            ) from None
        if self._credentials is None or mtime != self._read_at:
            self._credentials = self._read(path)
            self._read_at, self._saved, self.broken = mtime, self._credentials.token, None
        if self.broken is not None:
            raise CredentialsInvalid(self.broken)
        return self._credentials

    def _read(self, path: Path) -> Credentials:
        try:
            info = json.loads(path.read_text())
            if "client_id" not in info:  # a token without its client: take the client file's
                client = json.loads(self._settings.client_file.read_text())
                app = client.get("installed") or client.get("web") or {}
                info = {
                    **info,
                    "client_id": app["client_id"],
                    "client_secret": app["client_secret"],
                }
            credentials: Credentials = Credentials.from_authorized_user_info(info)  # type: ignore[no-untyped-call]
        except (OSError, ValueError, KeyError, TypeError):
            raise CredentialsInvalid(
                f"The Google token file {path} cannot be read or is incomplete: {RUN_AUTH}."
            ) from None
        fresh: Credentials = credentials.with_token_uri(self._settings.google_token_url)
        return fresh

    def refused(self) -> CredentialsInvalid:
        """Google refused to refresh: expired or revoked until the operator authorises again."""
        self.broken = f"Google refused the calendar credentials (expired or revoked): {RUN_AUTH}."
        logger.error("calendar: %s", self.broken)
        return CredentialsInvalid(self.broken)

    def save(self) -> None:
        """Write a refreshed access token back to the token file (0600), once per token."""
        credentials = self._credentials
        if credentials is None or credentials.token == self._saved:
            return
        self._saved = credentials.token
        path = self._settings.token_file
        try:
            write_private(path, credentials.to_json())  # type: ignore[no-untyped-call]
            self._read_at = path.stat().st_mtime
        except OSError as error:
            if not self._write_failed:
                self._write_failed = True
                logger.warning(
                    "calendar: cannot write the refreshed Google token to %s (%s): it is kept "
                    "in memory and refreshed again after a restart",
                    path,
                    error.strerror or type(error).__name__,
                )


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole (a temporary file renamed into place), mode 0600."""
    fd, draft = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as out:
            out.write(text)
        os.chmod(draft, 0o600)
        os.replace(draft, path)
    except BaseException:
        Path(draft).unlink(missing_ok=True)
        raise


class GoogleClient:
    def __init__(self, settings: CalendarSettings) -> None:
        self._settings = settings
        self.auth = GoogleAuth(settings)
        self._service: Any = None
        self._limiter: anyio.CapacityLimiter | None = None

    async def call(self, request: Request, *, if_match: str | None = None) -> Any:
        """The request's answer (a dict; None for 204), retried while Google is busy."""
        settings = self._settings
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(settings.google_threads)
        busy = False
        for attempt in range(settings.google_retries + 1):
            if attempt:
                await anyio.sleep(settings.google_backoff_s * 2 ** (attempt - 1))
            try:
                return await anyio.to_thread.run_sync(
                    self._execute, request, if_match, limiter=self._limiter
                )
            except HttpError as error:
                status, reason = error.status_code, _reason(error)
                if not (status == 429 or status >= 500 or reason in RATE_REASONS):
                    if status == 401:
                        raise self.auth.refused() from None
                    raise ApiFailure(status, reason) from None
                busy = True
                logger.info("calendar: Google answered %s %s (try %d)", status, reason, attempt + 1)
            except (httplib2.HttpLib2Error, OSError, TransportError) as error:
                logger.info("calendar: Google unreachable: %s (try %d)", error, attempt + 1)
        if busy:
            raise GoogleBusy(
                "Google Calendar is busy or limiting requests just now: try again in a minute."
            )
        raise GoogleUnreachable(
            "Google Calendar cannot be reached just now (network or DNS): try again in a minute."
        )

    def _execute(self, request: Request, if_match: str | None) -> Any:
        credentials = self.auth.credentials()
        http = google_auth_httplib2.AuthorizedHttp(
            credentials, http=httplib2.Http(timeout=self._settings.google_timeout_s)
        )
        prepared = request(self._api())
        if if_match is not None:
            prepared.headers["If-Match"] = if_match
        try:
            return prepared.execute(http=http)
        except RefreshError:
            raise self.auth.refused() from None
        finally:
            self.auth.save()

    def _api(self) -> Any:
        if self._service is None:
            self._service = build(
                "calendar",
                "v3",
                http=httplib2.Http(timeout=self._settings.google_timeout_s),
                static_discovery=True,
                cache_discovery=False,
                client_options={"api_endpoint": self._settings.google_api_url},
            )
        return self._service

    async def check(self) -> None:
        """Health: the credentials are there and Google still accepts them."""
        try:
            await anyio.to_thread.run_sync(self._fresh)
        except CredentialsInvalid as error:
            raise CheckFailed(str(error)) from None
        except (httplib2.HttpLib2Error, OSError, TransportError):
            raise CheckFailed("Google Calendar cannot be reached") from None

    def _fresh(self) -> None:
        credentials = self.auth.credentials()
        if credentials.valid and credentials.expiry is not None:
            return  # an access token known to be good: Google is not asked
        try:
            credentials.refresh(  # type: ignore[no-untyped-call]
                google_auth_httplib2.Request(httplib2.Http(timeout=self._settings.google_timeout_s))
            )
        except RefreshError:
            raise self.auth.refused() from None
        self.auth.save()


def _reason(error: HttpError) -> str:
    try:
        body = json.loads(error.content)
        return str(body["error"]["errors"][0]["reason"])
    except (ValueError, KeyError, IndexError, TypeError):
        return ""
