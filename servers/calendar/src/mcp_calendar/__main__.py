"""Serve the calendar tools.

    python -m mcp_calendar             Streamable HTTP at /mcp on $MCP_PORT (default 8102;
                                       needs MESH_TOKEN_SHA256)
    python -m mcp_calendar --stdio     stdio, for local MCP clients
    python -m mcp_calendar auth|import|export ...
                                       clawmesh calendar auth|import|export, in the
                                       server's container (commands.py)

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

from collections.abc import Sequence

from mcp_calendar.server import build_server
from mcp_calendar.settings import CalendarSettings
from meshkit.serve import run_server


def main(argv: Sequence[str] | None = None) -> None:
    run_server(
        CalendarSettings,
        build_server,
        name="calendar",
        default_port=8102,
        argv=argv,
        description=__doc__,
        secrets=lambda settings: [settings.relay_credential, settings.caldav_password_file],
        commands=("auth", "import", "export"),
    )


if __name__ == "__main__":
    main()
