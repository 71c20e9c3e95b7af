"""Serve the calendar tools.

    python -m mcp_calendar             Streamable HTTP at /mcp on $MCP_PORT (default 8102;
                                       needs MESH_TOKEN_SHA256)
    python -m mcp_calendar --stdio     stdio, for local MCP clients
    python -m mcp_calendar import FILE [--calendar ID] [--read-only]
                                       load an .ics file event by event (each one
                                       skipped is named with its reason; importing it
                                       again changes nothing; events stored in another
                                       calendar move to ID); exit 1 when nothing could be
    python -m mcp_calendar export [FILE] [--calendar ID]
                                       write the calendar(s) as .ics (default: stdout)
    python -m mcp_calendar auth [--headless]
                                       the one-time Google consent: writes the token file
                                       into $CALENDAR_CREDENTIALS_DIR (CALENDAR_BACKEND=google)

Events live in $DATA_DIR/calendar.sqlite3 (CALENDAR_BACKEND=local), in Google
Calendar (CALENDAR_BACKEND=google, CALENDAR_IDS, CALENDAR_CREDENTIALS_DIR), or on a CalDAV
server such as iCloud, Nextcloud or Fastmail (CALENDAR_BACKEND=caldav, CALENDAR_CALDAV_URL,
CALENDAR_CALDAV_USER, CALENDAR_CALDAV_PASSWORD_FILE holding an app password, optionally
CALENDAR_CALDAV_CALENDARS; docs/calendars.md). Times without an
offset are read in the caller's zone, else CALENDAR_TIMEZONE. Approval tokens are checked
with pending-actions' public key: MESH_APPROVAL_PUBLIC_KEY_FILE, else
$DATA_DIR/approval_public_key.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence

from mcp_calendar import ics_command
from mcp_calendar.server import build_server
from mcp_calendar.settings import CalendarSettings
from meshkit.serve import run_server
from meshkit.settings import load_dotenv, load_settings


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["auth"]:
        # The Google consent flow (google-auth-oauthlib, requests) loads for this command only.
        from mcp_calendar import auth  # noqa: PLC0415 (the google backend's own command)

        load_dotenv()
        raise SystemExit(auth.main(args[1:], load_settings(CalendarSettings)))
    if args[:1] in (["import"], ["export"]):
        raise SystemExit(ics_command.main(args[1:], args[0], time.time()))
    run_server(
        CalendarSettings,
        build_server,
        name="calendar",
        default_port=8102,
        argv=args,
        description=__doc__,
        secrets=lambda settings: [settings.relay_credential, settings.caldav_password_file],
    )


if __name__ == "__main__":
    main()
