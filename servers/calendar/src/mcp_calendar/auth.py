"""``python -m mcp_calendar auth``: the one-time Google consent that writes the token file.

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

import argparse
import secrets
import sys
from collections.abc import Callable, Sequence
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


def main(
    argv: Sequence[str],
    settings: CalendarSettings,
    *,
    read: Callable[[str], str] = input,
    say: Callable[[str], None] = print,
) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mcp_calendar auth",
        description="Authorise clawmesh to use your Google Calendar; writes the token file.",
    )
    parser.add_argument(
        "--headless", action="store_true", help="no browser here: open the address elsewhere"
    )
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="the loopback port")
    parser.add_argument("--client", type=Path, default=settings.client_file)
    parser.add_argument("--token", type=Path, default=settings.token_file)
    args = parser.parse_args(list(argv))
    if not 1024 <= args.port <= 65535:
        parser.error("--port takes 1024-65535")
    try:
        flow = _flow(args.client, settings.google_token_url)
        if args.headless:
            credentials = _headless(flow, args.port, read, say)
        else:
            credentials = flow.run_local_server(
                port=args.port, access_type="offline", prompt="consent", open_browser=True
            )
        if not credentials.refresh_token:
            raise AuthFailed(
                "Google gave no refresh token: remove clawmesh's access at "
                "https://myaccount.google.com/permissions and run this again."
            )
        private_dir(args.token.parent)
        write_private(args.token, credentials.to_json())
    except AuthFailed as error:
        print(f"auth: {error}", file=sys.stderr)
        return 1
    except OSError as error:
        print(f"auth: cannot write {args.token}: {error.strerror}", file=sys.stderr)
        return 1
    say(
        f"Wrote {args.token} (mode 600). The calendar server reads it from "
        "CALENDAR_CREDENTIALS_DIR (with the client file) at its next request."
    )
    return 0


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
