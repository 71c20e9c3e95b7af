"""The calendar MCP surface, whatever the backend: read and producer tools over
CalendarService and Proposals (``tools``), the orchestrator's ``stage_import`` for a calendar
file sent in chat (``import_tools``; the local backend imports, the others say why not), and
the change kinds (``changes``, ``imports``) with their confirm tools from the consent kernel.
The backend is built here: local (SQLite), google or caldav, each optional one's library
imported only when it is the one configured."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from importlib.metadata import version
from typing import Any

from fastmcp import FastMCP

from mcp_calendar.backend import Backend
from mcp_calendar.changes import change_kinds
from mcp_calendar.import_tools import add_import_tools
from mcp_calendar.imports import Imports, import_kind
from mcp_calendar.local import LocalBackend, default_calendar
from mcp_calendar.models import SERVER
from mcp_calendar.proposals import Proposals
from mcp_calendar.records import ConfirmationRecords
from mcp_calendar.service import CalendarService
from mcp_calendar.settings import CalendarSettings
from mcp_calendar.store import CalendarStore
from mcp_calendar.tools import add_producer_tools, add_read_tools
from meshkit.consent import Consent
from meshkit.server import create_server
from meshkit.settings import load_settings

INSTRUCTIONS = (
    "The user's calendar. Times without an offset are the user's local time; every answer "
    "names its zone. Find an event with search_events or get_events before changing it. "
    "Changes are proposals the user confirms with a tap; recurring events take a scope "
    "(this occurrence, this and following, or the whole series)."
)
GOOGLE_DB_FILE = "calendar_google.sqlite3"  # the google backend's confirm-once record
CALDAV_DB_FILE = "calendar_caldav.sqlite3"  # the caldav backend's confirm-once record


def build_server(
    settings: CalendarSettings | None = None, *, clock: Callable[[], float] = time.time
) -> FastMCP[Any]:
    """The calendar server; ``settings`` default to the environment (embedded mode)."""
    settings = settings or load_settings(CalendarSettings)
    store: CalendarStore | ConfirmationRecords
    backend: Backend
    if settings.backend == "google":
        store, backend = _google_backend(settings, clock)
    elif settings.backend == "caldav":
        store, backend = _caldav_backend(settings, clock)
    else:
        store = CalendarStore(settings.db_path, max_bytes=settings.max_db_bytes, clock=clock)
        backend = LocalBackend(store)
    service = CalendarService(settings, backend, clock=clock)
    proposals = Proposals(settings, backend, service)
    local = store if isinstance(store, CalendarStore) else None
    imports = Imports(settings, backend, local, clock=clock)

    @asynccontextmanager
    async def lifespan(_: FastMCP[Any]) -> AsyncIterator[None]:
        if isinstance(store, CalendarStore):
            await store.ensure_calendar(default_calendar(settings.default_calendar))
        yield

    mcp = create_server(
        SERVER,
        version=version("mcp-calendar"),
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        checks={"calendar": service.check},
        stores=[store],
    )
    consent = Consent.from_settings(mcp, SERVER, settings, clock=clock)
    consent.declare(*change_kinds(backend, clock), import_kind(imports))
    add_read_tools(mcp, service, settings.timezone)
    add_producer_tools(mcp, proposals, consent, settings.timezone)
    add_import_tools(mcp, imports, consent, settings.timezone)
    return mcp


def _google_backend(
    settings: CalendarSettings, clock: Callable[[], float]
) -> tuple[ConfirmationRecords, Backend]:
    """The Google backend and its confirm-once record. Google's client libraries
    (google-api-python-client, google-auth, httplib2: about 250 modules and 15 MiB) are
    imported here, where this backend is built, so a local calendar never loads them."""
    from mcp_calendar.google import GoogleBackend  # noqa: PLC0415 (an optional backend)
    from mcp_calendar.google_api import GoogleClient  # noqa: PLC0415 (an optional backend)

    records = ConfirmationRecords(
        settings.data_dir / GOOGLE_DB_FILE, max_bytes=settings.max_db_bytes, clock=clock
    )
    return records, GoogleBackend(settings.ids, GoogleClient(settings), records)


def _caldav_backend(
    settings: CalendarSettings, clock: Callable[[], float]
) -> tuple[ConfirmationRecords, Backend]:
    """The CalDAV backend and its confirm-once record. The caldav library and its HTTP
    stack (niquests, lxml, vobject's kin) are imported here, where this backend is built,
    so a local calendar never loads them."""
    from mcp_calendar.dav import CalDAVBackend  # noqa: PLC0415 (an optional backend)

    records = ConfirmationRecords(
        settings.data_dir / CALDAV_DB_FILE, max_bytes=settings.max_db_bytes, clock=clock
    )
    return records, CalDAVBackend(settings, records)
