"""The ``caldav`` backend: the user's calendars on a CalDAV server (RFC 4791: iCloud,
Nextcloud, Fastmail, Radicale…) through the ``caldav`` library.

The calendars are discovered from the account's principal (CALENDAR_CALDAV_CALENDARS keeps
some of them); a calendar's id is the last part of its address, and it is read-only when
the server says the account may not write it (RFC 3744's current-user-privilege-set).
A read asks the server for the objects that overlap the range (a ``calendar-query`` with a
``time-range``: the server evaluates recurrence) and expands them here with the local
backend's expansion (``expansion.py``), so a series reads the same on both backends, under
the same bounds: a series whose rules are refused is shown once; an object whose custom
time zone is refused (``zone_rules.py``; its times are put in the object's own VTIMEZONEs,
else in the calendar's zone, as an import does), or that cannot be expanded, is left out
and counted for ``/health``; a read stops at MAX_OCCURRENCES or EXPAND_BUDGET_S of
expanding. Parsing and expanding run in a worker thread of their own, one read at a time,
so the event loop (``/health`` included) keeps answering. Each calendar's objects of the
last range read are kept with the calendar's sync-token (or CTag): a read within that range
asks for the token only, and reads again when it changed, so an edit made in another client
shows at the next read.

An event is one calendar object: the master VEVENT and its changed occurrences, plus the
VTIMEZONEs they use. A change is ``edits.py``'s edit of those components, written back
with ``If-Match`` on the ETag the change was proposed against: when the object changed
since, the server answers 412 and nothing is changed (:class:`~mcp_calendar.errors.Stale`).
"following" writes a second object (UID ``<uid>_R<start>``, as the local backend names it);
a new object is written with ``If-None-Match: *``, so a replay never adds it twice.
Confirm-once is ``records.py``'s, as for Google.

The library is synchronous: its calls run in a worker thread, one at a time (the client
and its HTTP session are shared), apart from the parsing and expanding.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta, tzinfo
from functools import partial
from typing import Any, ClassVar, TypeVar
from urllib.parse import quote, unquote, urlsplit
from zoneinfo import ZoneInfo

import anyio
from caldav.calendarobjectresource import Event as DavEvent
from caldav.davclient import DAVClient
from caldav.elements import dav
from caldav.elements.base import BaseElement
from caldav.lib import error
from icalendar import Calendar, Event, Timezone

from mcp_calendar import edits, expansion, times, zones
from mcp_calendar.backend import (
    Add,
    CalendarInfo,
    Cancel,
    Change,
    Moment,
    Move,
    Occurrence,
)
from mcp_calendar.errors import CalendarError, InvalidRequest, NotFound, NotWritable, Stale
from mcp_calendar.expansion import Budget
from mcp_calendar.records import ConfirmationRecords
from mcp_calendar.settings import CalendarSettings
from meshkit.proposals import Approval, Confirmed

logger = logging.getLogger(__name__)

T = TypeVar("T")

CALENDARS_TTL_S = 600.0  # names and the calendar list change rarely: asked again after this
WINDOW_MARGIN = timedelta(days=1)  # around a range read, for the lookups that follow it
MAX_WINDOW = timedelta(days=800)  # a kept range grows to cover later ones up to this
PRODID = "-//clawmesh//calendar//EN"
# RFC 3744 privileges that let the account change a calendar's events (unsaid: writable).
WRITE_PRIVILEGES = {"{DAV:}all", "{DAV:}write", "{DAV:}write-content", "{DAV:}bind"}


class _CTag(BaseElement):
    """CalendarServer's collection tag: servers without sync-tokens still change it. caldav
    has no element for it; its BaseElement is how its own are made (pinned by
    tests/meshkit/test_library_seams.py)."""

    tag: ClassVar[str] = "{http://calendarserver.org/ns/}getctag"


@dataclass(frozen=True)
class DavCalendar:
    info: CalendarInfo
    remote: Any  # caldav.Calendar


@dataclass(frozen=True)
class DavObject:
    """One calendar object as read: where it is, its ETag, and what it holds."""

    url: str
    etag: str
    calendar: str
    uid: str
    events: list[Event]  # the master first, then its changed occurrences
    timezones: list[Timezone]
    fault: Exception | None = None  # why its events' times cannot be read (a zone refused)

    @property
    def version(self) -> str:
        return self.etag


@dataclass(frozen=True)
class Window:
    """A calendar's objects overlapping [start, end), as of its sync-token (or CTag)."""

    state: str | None
    start: datetime
    end: datetime
    objects: list[DavObject]


class CalDAVBackend:
    def __init__(
        self,
        settings: CalendarSettings,
        records: ConfirmationRecords,
        client: Callable[[], Any] | None = None,
    ) -> None:
        self._settings = settings
        self._records = records
        self._connect = client or partial(_client, settings)
        self._client: Any = None
        self._limiter: anyio.CapacityLimiter | None = None
        self._cpu: anyio.CapacityLimiter | None = None
        self._skipped = expansion.Skipped()
        self._calendars: tuple[float, list[DavCalendar]] | None = None
        self._windows: dict[str, Window] = {}
        self._unreadable: set[tuple[str, str]] = set()  # (url, etag) logged once

    async def _run(self, work: Callable[..., T], *args: Any) -> T:
        """``work(client, *args)`` in the worker thread; the server's failures as one line."""
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(1)

        def call() -> T:
            if self._client is None:
                self._client = self._connect()
            return work(self._client, *args)

        try:
            return await anyio.to_thread.run_sync(call, limiter=self._limiter)
        except error.AuthorizationError:
            raise CalendarError(
                "The CalDAV server refused the account (CALENDAR_CALDAV_USER and its app "
                "password): the operator should check them."
            ) from None
        except (error.DAVError, OSError) as failure:
            raise CalendarError(
                f"The CalDAV server did not answer as expected ({_reason(failure)}): try again "
                "later."
            ) from None

    async def _work(self, work: Callable[..., T], *args: Any) -> T:
        """``work(*args)`` (parsing, expanding) in a worker thread, one at a time, beside
        the library's calls."""
        if self._cpu is None:
            self._cpu = anyio.CapacityLimiter(1)
        return await anyio.to_thread.run_sync(work, *args, limiter=self._cpu)

    # --- calendars ----------------------------------------------------------------------

    async def calendars(self) -> list[CalendarInfo]:
        return [c.info for c in await self._known()]

    async def _known(self) -> list[DavCalendar]:
        if self._calendars is not None and time.monotonic() - self._calendars[0] < CALENDARS_TTL_S:
            return self._calendars[1]
        found = await self._run(_discover)
        wanted = self._settings.caldav_calendars
        if wanted:
            by_id = {c.info.id: c for c in found}
            missing = [w for w in wanted if w not in by_id]
            if missing:
                listed = ", ".join(sorted(by_id)) or "none"
                raise NotFound(
                    f"The CalDAV calendar {missing[0]!r} (CALENDAR_CALDAV_CALENDARS) is not "
                    f"in this account; its calendars are: {listed}. The operator should fix "
                    "CALENDAR_CALDAV_CALENDARS."
                )
            found = [by_id[w] for w in wanted]
        self._calendars = (time.monotonic(), found)
        return found

    async def _calendar(self, calendar_id: str) -> DavCalendar:
        for calendar in await self._known():
            if calendar.info.id == calendar_id:
                return calendar
        raise NotWritable(f"There is no calendar {calendar_id!r}: nothing was changed.")

    # --- reads --------------------------------------------------------------------------

    async def occurrences(self, start: datetime, end: datetime) -> list[Occurrence]:
        objects = []
        for calendar in await self._known():
            objects += (await self._window(calendar, start, end)).objects
        return await self._work(self._expand_all, objects, start, end)

    def _expand_all(
        self, objects: list[DavObject], start: datetime, end: datetime
    ) -> list[Occurrence]:
        budget = Budget(start, end)
        found: list[Occurrence] = []
        for item in objects:
            found += self._expand(item, start, end, budget)
        zone = ZoneInfo(self._settings.timezone)
        return sorted(found, key=lambda o: (_instant(o.start, zone), o.title))

    async def _window(self, calendar: DavCalendar, start: datetime, end: datetime) -> Window:
        """The calendar's objects over a range holding [start, end), read again only when
        the calendar's token changed (or the range is not the one kept)."""
        state = await self._run(_state, calendar.remote)
        kept = self._windows.get(calendar.info.id)
        if kept is None or state is None or kept.state != state:
            kept = None  # nothing kept, or the calendar changed since
        if kept is not None and kept.start <= start and end <= kept.end:
            return kept
        low, high = start - WINDOW_MARGIN, end + WINDOW_MARGIN
        if kept is not None and max(high, kept.end) - min(low, kept.start) <= MAX_WINDOW:
            low, high = min(low, kept.start), max(high, kept.end)
        objects = await self._run(_between, calendar.remote, low, high)
        read = await self._work(self._read_all, calendar.info.id, objects)
        window = Window(state, low, high, [o for o in read if o.events])
        self._windows[calendar.info.id] = window
        return window

    def _read_all(self, calendar_id: str, objects: list[Any]) -> list[DavObject]:
        return [self._read(calendar_id, o) for o in objects]

    def _read(self, calendar_id: str, remote: Any) -> DavObject:
        url, etag = str(remote.url), str(remote.etag or "")
        try:
            parsed = Calendar.from_ical(remote.data)
        except ValueError as failure:
            self._unreadable_once(url, etag, f"not iCalendar ({failure})")
            return DavObject(url, etag, calendar_id, "", [], [])
        found = [c for c in parsed.subcomponents if isinstance(c, Event)]
        if len(found) == 1 and "RECURRENCE-ID" in found[0]:
            # One occurrence of someone else's series (an invitation to it alone): a
            # single event here, as import reads it; a change writes it back as one.
            found[0].pop("RECURRENCE-ID")
        found = edits.deduplicate(found)
        masters = [c for c in found if "RECURRENCE-ID" not in c]
        if len(masters) != 1 or "UID" not in masters[0]:
            if found:
                self._unreadable_once(url, etag, "no single master event with a UID")
            return DavObject(url, etag, calendar_id, "", [], [])
        events = masters + [c for c in found if c is not masters[0]]
        given = [c for c in parsed.subcomponents if isinstance(c, Timezone)]
        uid = str(masters[0]["UID"])
        try:
            _own_zones(events, given, ZoneInfo(self._settings.timezone))
        except Exception as fault:  # this object's fault (a zone refused): counted, not raised
            return DavObject(url, etag, calendar_id, uid, events, given, fault)
        return DavObject(url, etag, calendar_id, uid, events, given)

    def _unreadable_once(self, url: str, etag: str, why: str) -> None:
        if (url, etag) not in self._unreadable:
            self._unreadable.add((url, etag))
            logger.warning("caldav object %s is not read: %s", url, why)

    def _expand(
        self, item: DavObject, start: datetime, end: datetime, budget: Budget
    ) -> list[Occurrence]:
        if item.fault is not None:
            self._skipped.left_out(item.uid, item.etag, item.fault)
            return []
        found = expansion.expand(
            item, item.events, start, end, skipped=self._skipped, budget=budget
        )
        master = item.events[0]
        series = "RRULE" in master or "RDATE" in master
        return [
            replace(o, version=item.etag, recurrence_id=o.recurrence_id if series else None)
            for o in found
        ]

    async def occurrence(self, uid: str, recurrence_id: Moment | None) -> Occurrence | None:
        found = await self._find(uid)
        if found is None:
            return None
        return await self._work(self._occurrence, found[1], recurrence_id)

    def _occurrence(self, item: DavObject, recurrence_id: Moment | None) -> Occurrence | None:
        master = item.events[0]
        if recurrence_id is None or "RRULE" not in master:
            return self._near(item, master.start, None)
        wanted = edits.rid_key(recurrence_id)
        for component in item.events[1:]:
            if edits.rid_key(component.decoded("RECURRENCE-ID")) == wanted:
                return self._near(item, component.start, wanted)
        return self._near(item, recurrence_id, wanted)

    def _near(self, item: DavObject, moment: Moment, rid: str | None) -> Occurrence | None:
        """The occurrence (of recurrence id ``rid``; None: the first) expanded around ``moment``."""
        at = _instant(moment, ZoneInfo(self._settings.timezone))
        low, high = at - WINDOW_MARGIN, at + WINDOW_MARGIN * 2
        for found in self._expand(item, low, high, Budget(low, high)):
            if rid is None or (
                found.recurrence_id is not None and edits.rid_key(found.recurrence_id) == rid
            ):
                return found
        return None

    async def _find(self, uid: str) -> tuple[DavCalendar, DavObject] | None:
        """The event's object as the server holds it now (asked by UID), and its calendar."""
        for calendar in await self._known():
            remote = await self._run(_by_uid, calendar.remote, uid)
            if remote is not None:
                item = await self._work(self._read, calendar.info.id, remote)
                return (calendar, item) if item.events and item.fault is None else None
        return None

    # --- changes ------------------------------------------------------------------------

    async def perform(
        self, approval: Approval, change: Change, result: dict[str, Any], at: float
    ) -> Confirmed:
        now = datetime.fromtimestamp(at, UTC)
        return await self._records.once(approval, result, at, partial(self._apply, change, now))

    async def _apply(self, change: Change, now: datetime) -> None:
        if isinstance(change, Add):
            calendar = await self._calendar(change.event.calendar)
            body = _text(edits.new_components(change.event), [], now)
            await self._write(partial(_create, calendar.remote, change.event.uid, body))
            return
        target = change.target
        found = await self._find(target.uid)
        if found is None:
            raise Stale("The event is gone.")
        calendar, item = found
        if item.etag != target.version:
            raise Stale("The event changed.")
        if isinstance(change, Move):
            edited = edits.move(
                item.events, target.recurrence_id, target.scope, change.start, change.end
            )
        else:
            assert isinstance(change, Cancel)
            edited = edits.cancel(item.events, target.recurrence_id, target.scope)
        if edited.kept:
            body = _text(edited.kept, item.timezones, now)
            await self._write(partial(_replace, item.url, item.etag, body))
        else:
            await self._write(partial(_delete, item.url, item.etag))
        if edited.split:
            assert target.recurrence_id is not None
            uid = f"{target.uid}_R{edits.rid_key(target.recurrence_id)}"
            body = _text(edits.rename(edited.split, uid), item.timezones, now)
            await self._write(partial(_create, calendar.remote, uid, body))

    async def _write(self, work: Callable[[Any], None]) -> None:
        try:
            await self._run(_refusals(work))
        finally:
            self._windows.clear()  # whatever happened, the next read asks the server

    async def check(self) -> str | None:
        """The server answers for the account, and the calendars named are in it; a line
        for ``/health``'s details while reads leave an event out."""
        await self._run(_principal)
        await self._known()
        return self._skipped.detail()


# --- the library's calls (in the worker thread) ---------------------------------------------


def _client(settings: CalendarSettings) -> Any:
    return DAVClient(
        url=settings.caldav_url,
        username=settings.caldav_user,
        password=settings.caldav_password.get_secret_value(),
        timeout=settings.caldav_timeout_s,
    )


def _principal(client: Any) -> Any:
    return client.principal()


def _discover(client: Any) -> list[DavCalendar]:
    """The principal's calendars that hold events (task lists are left out)."""
    found = []
    for remote in client.principal().calendars():
        try:
            kinds = remote.get_supported_components()
        except error.DAVError:
            kinds = ["VEVENT"]  # not said: RFC 4791 lets it hold any component
        if kinds and "VEVENT" not in kinds:
            continue
        calendar_id = _calendar_id(str(remote.url))
        said = remote.get_properties([dav.DisplayName(), dav.CurrentUserPrivilegeSet()])
        name = said.get(dav.DisplayName.tag) or calendar_id
        privileges = said.get(dav.CurrentUserPrivilegeSet.tag)
        writable = privileges is None or bool(WRITE_PRIVILEGES & set(privileges))
        found.append(DavCalendar(CalendarInfo(calendar_id, str(name), writable), remote))
    return found


def _calendar_id(url: str) -> str:
    return unquote(urlsplit(url).path.rstrip("/").rsplit("/", 1)[-1])


def _state(_: Any, remote: Any) -> str | None:
    """The calendar's sync-token (RFC 6578), else its CTag; None when it has neither."""
    found = remote.get_properties([dav.SyncToken(), _CTag()])
    value = found.get(dav.SyncToken.tag) or found.get(_CTag.tag)
    return None if value is None else str(value)


def _between(_: Any, remote: Any, start: datetime, end: datetime) -> list[Any]:
    """The event objects overlapping [start, end), as the server finds them (not expanded).
    The library's own filter after the query (``post_filter``) is off: it expands every
    series itself, unbounded (seconds of CPU for one ``FREQ=SECONDLY`` object), where the
    window's margins and the bounded expansion here already do its work."""
    return list(remote.search(start=start, end=end, event=True, expand=False, post_filter=False))


def _by_uid(_: Any, remote: Any, uid: str) -> Any:
    try:
        return remote.get_event_by_uid(uid)
    except error.NotFoundError:
        return None


def _create(remote: Any, uid: str, body: bytes, client: Any) -> None:
    url = remote.url.join(f"{quote(uid, safe='@')}.ics")
    item = DavEvent(client, url=url, parent=remote)
    item.save(raw_data=body, no_overwrite=True)


def _replace(url: str, etag: str, body: bytes, client: Any) -> None:
    item = DavEvent(client, url=url, props={dav.GetEtag.tag: etag})
    item.save(raw_data=body, precondition="etag")


def _delete(url: str, etag: str, client: Any) -> None:
    DavEvent(client, url=url).delete(if_match=etag)


def _refusals(work: Callable[[Any], None]) -> Callable[[Any], None]:
    """``work`` with the server's refusals of a write as the errors the user reads."""

    def write(client: Any) -> None:
        try:
            work(client)
        except (error.ETagMismatchError, error.ScheduleTagMismatchError):
            raise Stale("The event changed.") from None
        except (error.ConsistencyError, error.UidConflictError):
            raise Stale("This event was added already: nothing was added twice.") from None
        except error.NotFoundError:
            raise Stale("The event is gone.") from None
        except error.AuthorizationError:
            raise NotWritable(
                "The CalDAV server does not let this account change that calendar: nothing "
                "was changed."
            ) from None
        except error.DAVError as failure:
            raise InvalidRequest(
                f"The CalDAV server refused the change ({_reason(failure)}): nothing was changed."
            ) from None

    return write


def _own_zones(events: list[Event], given: list[Timezone], fallback: tzinfo) -> None:
    """Times in a custom zone put in the object's own VTIMEZONE of that TZID, or in
    ``fallback`` (the calendar's zone) when it gives none, as an import reads them: never in
    the zone icalendar keeps for that TZID process-wide (another object's, maybe refused).
    ZoneRefused when the object's own is refused."""
    if all(zones.iana(t) is not None for t in zones.tzids(events)):
        return
    find = zones.lookup(zone.to_ical().decode() for zone in given)
    for event in events:
        zones.retime(event, find, fallback)


def _text(events: list[Event], given: list[Timezone], now: datetime) -> bytes:
    """A calendar object: the events (each with the DTSTAMP RFC 5545 requires) and the
    VTIMEZONEs they use (kept as read, else made)."""
    calendar = Calendar()
    calendar.add("prodid", PRODID)
    calendar.add("version", "2.0")
    for zone in given:
        calendar.add_component(zone)
    for event in events:
        if "DTSTAMP" not in event:
            event.add("dtstamp", now)
        calendar.add_component(event)
    calendar.add_missing_timezones()
    text: bytes = calendar.to_ical()
    return text


def _instant(moment: Moment, zone: ZoneInfo) -> datetime:
    """A moment as an instant: a date, or a floating time, in the user's zone."""
    found = times.instant(moment, zone)
    return found if found.tzinfo is not None else found.replace(tzinfo=zone)


def _reason(failure: Exception) -> str:
    status = getattr(failure, "status", None)
    reason = getattr(failure, "reason", None) or type(failure).__name__
    text = f"{status} {reason}" if status else str(reason)
    return text if len(text) <= 120 else f"{text[:117]}…"
