"""The one-time Google consent that writes the token file (``clawmesh calendar auth``).

    auth                 on a machine with a browser: it opens Google's consent page and
                         takes the answer on a loopback port (google-auth-oauthlib's
                         InstalledAppFlow.run_local_server)
    auth --headless      on a Pi without a browser: prints the address to open on another
                         device; after consenting, that browser lands on an address that does
                         not load (http://localhost:PORT/?...code=...): paste it back here

Reads the OAuth client file (``CALENDAR_CREDENTIALS_DIR/client_secret.json``, or
``--client``) and writes the token (``token.json`` beside it, or ``--token``) with mode
0600. The server never serves OAuth routes: it only reads this file. The code is exchanged
at ``CALENDAR_GOOGLE_TOKEN_URL`` (Google's unless a test points it elsewhere).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from google_auth_oauthlib.flow import InstalledAppFlow  # type: ignore[import-untyped]
from oauthlib.oauth2.rfc6749.errors import OAuth2Error  # type: ignore[import-untyped]
from requests import RequestException

from mcp_calendar.google_api import SCOPES, write_private
from mcp_calendar.settings import CalendarSettings
from meshkit.private import private_dir

DEFAULT_PORT = 8765


class AuthFailed(Exception):
    """One line for the operator: what went wrong and what to do."""


def authorize(
    settings: CalendarSettings,
    *,
    headless: bool = False,
    port: int = DEFAULT_PORT,
    client: Path | None = None,
    token: Path | None = None,
    read: Callable[[str], str] = input,
    say: Callable[[str], None] = print,
) -> Path:
    """Google's consent, and the token file written (0600); AuthFailed saying what to do."""
    if not 1024 <= port <= 65535:
        raise AuthFailed(f"--port {port}: take a port of 1024-65535")
    token = token or settings.token_file
    flow = _flow(client or settings.client_file, settings.google_token_url)
    if headless:
        credentials = _headless(flow, port, read, say)
    else:
        credentials = flow.run_local_server(
            port=port, access_type="offline", prompt="consent", open_browser=True
        )
    if not credentials.refresh_token:
        raise AuthFailed(
            "Google gave no refresh token: remove clawmesh's access at "
            "https://myaccount.google.com/permissions and run this again."
        )
    try:
        private_dir(token.parent)
        write_private(token, credentials.to_json())
    except OSError as error:
        raise AuthFailed(f"cannot write {token}: {error.strerror}") from None
    say(
        f"Wrote {token} (mode 600). The calendar server reads it from "
        "CALENDAR_CREDENTIALS_DIR (with the client file) at its next request."
    )
    return token


def _flow(client: Path, token_url: str) -> Any:
    try:
        flow = InstalledAppFlow.from_client_secrets_file(str(client), scopes=SCOPES)
    except FileNotFoundError:
        raise AuthFailed(
            f"no OAuth client file at {client}: create a Desktop app OAuth client in Google "
            "Cloud Console and download its JSON there (docs/servers.md: Google Calendar)."
        ) from None
    except (ValueError, KeyError):
        raise AuthFailed(
            f"{client} is not an OAuth client file: download the Desktop app client's JSON "
            "again from Google Cloud Console."
        ) from None
    flow.client_config["token_uri"] = token_url
    return flow


def _headless(flow: Any, port: int, read: Callable[[str], str], say: Callable[[str], None]) -> Any:
    flow.redirect_uri = f"http://localhost:{port}/"
    state = secrets.token_urlsafe(16)
    url, _ = flow.authorization_url(access_type="offline", prompt="consent", state=state)
    say("Open this address on any device with a browser and allow access:")
    say(url)
    say(
        f"Google then sends that browser to http://localhost:{port}/?... which will not load: "
        "copy that whole address from its address bar."
    )
    answer = read("Paste the address here: ").strip()
    code = _code(answer, state)
    try:
        flow.fetch_token(code=code)
    except OAuth2Error as error:
        raise AuthFailed(
            f"Google refused the code ({error.error}): run this again and paste the new address "
            "within a few minutes."
        ) from None
    except Warning as warning:  # oauthlib: the scopes granted are not those asked for
        raise AuthFailed(
            f"Google granted other permissions than asked ({warning}): run this again and "
            "allow every box on the consent screen."
        ) from None
    except RequestException:
        raise AuthFailed("cannot reach Google's token endpoint: check the network.") from None
    return flow.credentials


def _code(answer: str, state: str) -> str:
    if not answer:
        raise AuthFailed("nothing was pasted: run this again.")
    if "://" not in answer:
        return answer  # the code alone
    query = parse_qs(urlsplit(answer).query)
    if "error" in query:
        raise AuthFailed(f"Google said {query['error'][0]}: access was not granted.")
    if query.get("state", [""])[0] != state:
        raise AuthFailed(
            "that address belongs to another attempt: paste the one this run's address led to."
        )
    if "code" not in query:
        raise AuthFailed("that address holds no code: copy the whole address bar.")
    return query["code"][0]
