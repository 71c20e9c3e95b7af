"""The ``google`` backend: the user's Google calendars (``CALENDAR_IDS``) through the v3 API.

Reads list each calendar's events with ``singleEvents`` (Google expands series, in their
own zone), page by page. A change is made with ``If-Match`` on the ETag captured when it
was proposed: when the event changed since, Google answers 412 and nothing is changed
(:class:`~mcp_calendar.errors.Stale`); a change to a series first checks that the chosen
occurrence is as proposed, then edits the series under its own ETag and writes its
changed occurrences again where they moved (``google_events.py`` says how each scope maps
to Google's model). Confirm-once is ``records.py``'s.
"""

from __future__ import annotations

import math
import time
from datetime import datetime
from functools import partial
from typing import Any
from zoneinfo import ZoneInfo

import anyio

from mcp_calendar import google_events, times
from mcp_calendar.backend import (
    Add,
    CalendarInfo,
    Cancel,
    Change,
    Moment,
    Move,
    Occurrence,
    Target,
)
from mcp_calendar.errors import InvalidRequest, NotFound, NotWritable, Stale
from mcp_calendar.expansion import Budget
from mcp_calendar.google_api import ApiFailure, GoogleClient
from mcp_calendar.google_events import Redo, Resource
from mcp_calendar.records import ConfirmationRecords
from meshkit.proposals import Approval, Confirmed

PAGE = 2500  # the most events.list gives a page
MAX_PAGES = 20  # of a series' exceptions, when a change writes them again
CALENDARS_TTL_S = 600.0  # names and access change rarely: asked again after this
GONE = (404, 410)
MAX_RULES = 2_000  # series rules remembered


class GoogleBackend:
    def __init__(self, ids: list[str], client: GoogleClient, records: ConfirmationRecords) -> None:
        self._ids = ids
        self._client = client
        self._records = records
        self._calendars: tuple[float, list[CalendarInfo], dict[str, str]] | None = None
        self._rules: dict[str, tuple[float, str | None]] = {}  # series id → (read at, RRULE)

    async def calendars(self) -> list[CalendarInfo]:
        return (await self._known())[0]

    async def _known(self) -> tuple[list[CalendarInfo], dict[str, str]]:
        """The calendars, and each one's time zone (all-day events are days there)."""
        if self._calendars is not None and time.monotonic() - self._calendars[0] < CALENDARS_TTL_S:
            return self._calendars[1], self._calendars[2]
        found, zones = [], {}
        for calendar_id in self._ids:
            try:
                entry = await self._client.call(partial(_calendar_entry, calendar_id))
            except ApiFailure as failure:
                if failure.status in GONE:
                    raise NotFound(
                        f"The Google calendar {calendar_id!r} (CALENDAR_IDS) is not in this "
                        "account's calendar list: the operator should fix CALENDAR_IDS."
                    ) from None
                raise
            writable = entry.get("accessRole") in ("owner", "writer")
            found.append(CalendarInfo(calendar_id, entry.get("summary", calendar_id), writable))
            zones[calendar_id] = entry.get("timeZone", "UTC")
        self._calendars = (time.monotonic(), found, zones)
        return found, zones

    async def occurrences(self, start: datetime, end: datetime) -> list[Occurrence]:
        """Google expands the series (``singleEvents``); what it lists is bounded as the
        other backends' reads are: more than MAX_OCCURRENCES asks for a shorter range."""
        _, zones = await self._known()
        budget = Budget(start, end, seconds=math.inf)  # Google expands: no CPU here to bound
        found: list[Occurrence] = []
        for calendar_id in self._ids:
            token: str | None = None
            while True:
                page = await self._client.call(
                    partial(
                        _call,
                        "list",
                        calendarId=calendar_id,
                        timeMin=start.isoformat(),
                        timeMax=end.isoformat(),
                        singleEvents=True,
                        orderBy="startTime",
                        maxResults=PAGE,
                        pageToken=token,
                    )
                )
                items = [i for i in page.get("items", []) if i.get("status") != "cancelled"]
                budget.served(len(items))
                rules = await self._rules_of(calendar_id, items)
                found += await anyio.to_thread.run_sync(
                    _occurrences, calendar_id, items, zones[calendar_id], rules
                )
                token = page.get("nextPageToken")
                if not token:
                    break
        return sorted(
            found, key=lambda o: (times.instant(o.start, ZoneInfo(zones[o.calendar])), o.title)
        )

    async def _rules_of(self, calendar_id: str, items: list[Resource]) -> dict[str, str | None]:
        """Each instance's series rule (instances do not carry it): the series read once,
        then remembered for a while."""
        now, rules = time.monotonic(), {}
        for item in items:
            series = item.get("recurringEventId")
            if series is None:
                continue
            known = self._rules.get(series)
            if known is None or now - known[0] > CALENDARS_TTL_S:
                if len(self._rules) >= MAX_RULES:
                    self._rules.clear()
                try:
                    master = await self._events(calendar_id, "get", series)
                except ApiFailure:
                    master = {}
                known = self._rules[series] = (now, google_events.rule_of(master))
            rules[item["id"]] = known[1]
        return rules

    async def occurrence(self, uid: str, recurrence_id: Moment | None) -> Occurrence | None:
        found = await self._current(uid, recurrence_id)
        if found is None:
            return None
        calendar_id, resource = found
        _, zones = await self._known()
        return google_events.occurrence(calendar_id, resource, zones[calendar_id])

    async def _current(self, uid: str, rid: Moment | None) -> tuple[str, Resource] | None:
        """The event (or the occurrence of a series) as it is now, and its calendar."""
        for calendar_id in self._ids:
            try:
                if rid is None:
                    resource = await self._client.call(
                        partial(_call, "get", calendarId=calendar_id, eventId=uid)
                    )
                else:
                    original = google_events.query_time(rid)
                    resource = await self._instance(calendar_id, uid, original, showDeleted=True)
                    if resource is None:
                        return None
            except ApiFailure as failure:
                if failure.status in GONE:
                    continue
                raise
            return None if resource.get("status") == "cancelled" else (calendar_id, resource)
        return None

    async def perform(
        self, approval: Approval, change: Change, result: dict[str, Any], at: float
    ) -> Confirmed:
        async def apply() -> None:
            try:
                await self._apply(change)
            except ApiFailure as failure:
                raise _failed(failure) from None

        return await self._records.once(approval, result, at, apply)

    async def _apply(self, change: Change) -> None:
        if isinstance(change, Add):
            body = google_events.new_event(change.event)
            try:
                await self._events(change.event.calendar, "insert", body=body)
            except ApiFailure as failure:
                if failure.status == 409:
                    raise Stale("This event was added already: nothing was added twice.") from None
                raise
            return
        target = change.target
        found = await self._current(target.uid, target.recurrence_id)
        if found is None:
            raise Stale("The event is gone.")
        calendar_id, now = found
        if target.recurrence_id is None or target.scope == "this":
            # The occurrence (or single event) itself, under the ETag it had when proposed.
            if isinstance(change, Move):
                patch = _times(now, change)
                await self._events(calendar_id, "patch", now["id"], patch, target.version)
            else:
                await self._events(calendar_id, "delete", now["id"], None, target.version)
            return
        if now["etag"] != target.version:
            raise Stale("The occurrence changed.")
        master = await self._events(calendar_id, "get", target.uid)
        first = google_events.occurrence(calendar_id, master, "UTC").start
        whole = target.scope == "series" or _same(first, target.recurrence_id)
        await self._series(calendar_id, master, target, change, whole)

    async def _series(
        self, calendar_id: str, master: Resource, target: Target, change: Change, whole: bool
    ) -> None:
        rid = target.recurrence_id
        assert rid is not None
        etag = master["etag"]
        if isinstance(change, Cancel):
            if whole:
                await self._events(calendar_id, "delete", master["id"], None, etag)
            else:
                ended, _ = google_events.ended_before(master, rid)
                await self._events(calendar_id, "patch", master["id"], ended, etag)
            return
        assert isinstance(change, Move)
        exceptions = await self._exceptions(calendar_id, master)
        if whole:
            patch, redo = google_events.shifted_series(
                master, rid, change.start, change.end, exceptions
            )
            await self._events(calendar_id, "patch", master["id"], patch, etag)
            await self._reset(calendar_id, master, patch, exceptions)
            await self._redo(calendar_id, master["id"], redo)
            return
        ended, left = google_events.ended_before(master, rid)
        tail, redo = google_events.following_series(
            master, rid, change.start, change.end, left=left, exceptions=exceptions
        )
        await self._events(calendar_id, "patch", master["id"], ended, etag)
        inserted = await self._events(calendar_id, "insert", body=tail)
        await self._redo(calendar_id, inserted["id"], redo)

    async def _exceptions(self, calendar_id: str, master: Resource) -> list[Resource]:
        """The series' changed and cancelled occurrences (Google lists them, cancelled ones
        too, beside their series when not asked for single events)."""
        found: list[Resource] = []
        token: str | None = None
        for _ in range(MAX_PAGES):
            page = await self._client.call(
                partial(
                    _call,
                    "list",
                    calendarId=calendar_id,
                    iCalUID=master.get("iCalUID"),
                    showDeleted=True,
                    maxResults=PAGE,
                    pageToken=token,
                )
            )
            found += [i for i in page.get("items", []) if i.get("recurringEventId") == master["id"]]
            token = page.get("nextPageToken")
            if not token:
                break
        return found

    async def _reset(
        self, calendar_id: str, master: Resource, patch: Resource, exceptions: list[Resource]
    ) -> None:
        """An exception whose original start is still an instance of the moved series (a
        move by whole periods) now stands for another occurrence: it becomes the series'
        own again (a cancelled one restored) before the exceptions are written again."""
        for exception in exceptions:
            started = exception["originalStartTime"]
            original = started.get("dateTime") or started["date"]
            instance = await self._instance(calendar_id, master["id"], original, showDeleted=True)
            if instance is not None and instance.get("etag") == exception.get("etag"):
                body = google_events.reset(master, patch, exception)
                await self._events(calendar_id, "patch", instance["id"], body)

    async def _redo(self, calendar_id: str, series_id: str, redo: list[Redo]) -> None:
        """Write the changed occurrences again on the moved series, each on the instance
        at its new original start."""
        for again in redo:
            original = google_events.query_time(again.original)
            instance = await self._instance(calendar_id, series_id, original)
            if instance is not None:
                await self._events(calendar_id, "patch", instance["id"], again.body)

    async def _instance(
        self, calendar_id: str, series_id: str, original: str, **options: Any
    ) -> Resource | None:
        """The series' instance whose original start is ``original`` (None: it has none)."""
        page = await self._client.call(
            partial(
                _call,
                "instances",
                calendarId=calendar_id,
                eventId=series_id,
                originalStart=original,
                **options,
            )
        )
        items = page.get("items", [])
        return items[0] if items else None

    async def _events(
        self,
        calendar_id: str,
        method: str,
        event_id: str | None = None,
        body: Resource | None = None,
        if_match: Any = None,
    ) -> Any:
        arguments: dict[str, Any] = {"calendarId": calendar_id}
        if event_id is not None:
            arguments["eventId"] = event_id
        if body is not None:
            arguments["body"] = body
        return await self._client.call(
            partial(_call, method, **arguments),
            if_match=None if if_match is None else str(if_match),
        )

    async def check(self) -> None:
        await self._client.check()


def _call(method: str, api: Any, **arguments: Any) -> Any:
    """The events.<method> request (built in the worker thread, on the shared service)."""
    return getattr(api.events(), method)(**arguments)


def _occurrences(
    calendar_id: str, items: list[Resource], zone: str, rules: dict[str, str | None]
) -> list[Occurrence]:
    return [
        google_events.occurrence(calendar_id, item, zone, rules.get(item["id"])) for item in items
    ]


def _calendar_entry(calendar_id: str, api: Any) -> Any:
    return api.calendarList().get(calendarId=calendar_id)


def _times(now: Resource, change: Move) -> Resource:
    zone = now["start"].get("timeZone")
    return {
        "start": google_events.when(change.start, zone),
        "end": google_events.when(change.end, zone),
    }


def _same(a: Moment, b: Moment) -> bool:
    return google_events.query_time(a) == google_events.query_time(b) or a == b


def _failed(failure: ApiFailure) -> Exception:
    if failure.status == 412:
        return Stale("The event changed.")
    if failure.status in GONE:
        return Stale("The event is gone.")
    if failure.status == 403:
        return NotWritable(
            "Google does not let this account change that calendar: nothing was changed."
        )
    return InvalidRequest(
        f"Google refused the change ({failure.status} {failure.reason}): nothing was changed."
    )
