"""A fake Google Calendar v3 REST API and Google's OAuth token endpoint, as documented.

    GET    /calendar/v3/users/me/calendarList[/{calendarId}]
    GET    /calendar/v3/calendars/{calendarId}/events   timeMin timeMax singleEvents orderBy
                                                        q showDeleted maxResults pageToken
                                                        timeZone iCalUID syncToken
    POST   /calendar/v3/calendars/{calendarId}/events
    GET    /calendar/v3/calendars/{calendarId}/events/{eventId}                timeZone
    PATCH  /calendar/v3/calendars/{calendarId}/events/{eventId}      If-Match → 412
    DELETE /calendar/v3/calendars/{calendarId}/events/{eventId}      If-Match → 412; 410 gone
    GET    /calendar/v3/calendars/{calendarId}/events/{eventId}/instances  originalStart ...
    POST   /calendar/v3/freeBusy
    POST   /token      grant_type=refresh_token | authorization_code (form encoded)

Google's model: a recurring event (``recurrence``, a ``timeZone`` on its start) expands into
instances whose ids are ``<id>_<original start, UTC basic>`` (or ``_<date>`` all day);
changing or deleting an instance stores an exception carrying ``recurringEventId`` and
``originalStartTime`` (deleted: ``status: cancelled``) and its series' ``iCalUID``. Errors
have Google's JSON shape (``{"error": {"code", "message", "errors": [{"domain", "reason",
"message"}]}}``). API calls need a bearer token the token endpoint issued and that is still
valid: ``expire_access_tokens`` makes the next call answer 401 (the client refreshes),
``revoke`` makes refreshing fail with ``invalid_grant``. ``fail_next`` injects 403/429
``rateLimitExceeded`` or 5xx answers; ``page_size`` caps a page (Google may return fewer
items than ``maxResults``).

What it follows, and where Google says so:

- ``recurrence`` is "a list of RRULE, EXRULE, RDATE and EXDATE lines ... as specified in
  RFC5545" (Events resource, https://developers.google.com/calendar/v3/reference/events):
  all four are expanded, with ``TZID``/``VALUE=DATE`` parameters and UTC values; a series
  without an RRULE starts at its start (RFC 5545: DTSTART is the first instance).
- events.list (https://developers.google.com/calendar/v3/reference/events/list): ``timeMin``
  is an exclusive lower bound on the end, ``timeMax`` an exclusive upper bound on the start;
  without ``singleEvents`` a recurring event is listed when one of its instances is in the
  range (or no range is given), and "cancelled instances of recurring events (but not the
  underlying recurring event) will still be included if showDeleted and singleEvents are
  both False"; with ``singleEvents`` and ``showDeleted`` a deleted series' instances come as
  cancelled. ``iCalUID`` lists the event with that iCalendar UID and its exceptions.
- events.instances (https://developers.google.com/calendar/v3/reference/events/instances):
  there ``timeMin`` is an inclusive lower bound on an instance's end.
- ``timeZone``: "Time zone used in the response ... The default is the time zone of the
  calendar": every ``dateTime`` (start, end, originalStartTime) is written with that zone's
  offset, the same instant; each ``timeZone`` field and the list's own ``timeZone`` (the
  calendar's) stay as they are.
- Incremental sync (https://developers.google.com/calendar/api/guides/sync): the last page
  of a list carries ``nextSyncToken`` (no other page does); a list with ``syncToken``
  answers every event changed since, deleted ones included; ``iCalUID``, ``orderBy``, ``q``,
  ``timeMin``, ``timeMax``, ``updatedMin`` and the extended-property filters cannot go with
  it (400); a token Google no longer honours is 410 ``fullSyncRequired`` (the client does a
  full sync again): ``expire_sync_tokens`` makes every token so.
- ETags: every event resource has its own ``etag``, an instance too: an instance not
  changed on its own gets one derived from its series' ETag and its id, so it changes when
  the series does and differs from the series' and every other instance's.
- events.patch (https://developers.google.com/calendar/v3/reference/events/patch): "the
  field values you specify replace the existing values. Fields that you don't specify in
  the request remain unchanged. Array fields, if specified, overwrite the existing arrays";
  a nested object merges field by field and ``null`` clears a field (patch semantics,
  https://developers.google.com/calendar/api/guides/performance#patch). A start or end
  holding both ``date`` and ``dateTime`` after the merge is refused (400).
- A series whose start or rule changes: an exception is the instance at its
  ``originalStartTime``, "the time the instance would start according to the recurrence
  data in the recurring event identified by recurringEventId" (Events resource). Google
  does not document more; the fake keeps the exceptions whose original start is still an
  instance of the changed series and drops the others (they name an instance that no
  longer exists; Google Calendar's own "All events" edit warns that changes to other
  events are lost). Deleting a series cancels its exceptions.
- ``status`` (Events resource): a cancelled exception of a live series means the instance
  is not shown; a cancelled event keeps its details "so that they can be restored
  (undeleted)": a PATCH setting ``status: confirmed`` restores it (any other change to a
  cancelled event is 410).

Served by uvicorn (``fakes.serving``) and driven by the real google-api-python-client.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import re
import secrets
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any
from urllib.parse import unquote
from zoneinfo import ZoneInfo

from dateutil.rrule import rruleset, rrulestr
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

Resource = dict[str, Any]
API = "/calendar/v3"
_ID = re.compile(r"[a-v0-9]{5,1024}")  # base32hex, as events.insert documents for ids
MAX_RESULTS = 2500
WINDOW = timedelta(days=800)  # how far around a query a series is expanded
# events.list parameters a syncToken does not go with
SYNC_EXCLUDES = frozenset(
    {
        "iCalUID",
        "orderBy",
        "privateExtendedProperty",
        "q",
        "sharedExtendedProperty",
        "timeMin",
        "timeMax",
        "updatedMin",
    }
)


class ApiError(Exception):
    def __init__(self, code: int, reason: str, message: str, domain: str = "global") -> None:
        super().__init__(message)
        self.response = JSONResponse(
            {
                "error": {
                    "code": code,
                    "message": message,
                    "errors": [{"domain": domain, "reason": reason, "message": message}],
                }
            },
            status_code=code,
        )


@dataclass
class FakeCalendar:
    id: str
    summary: str
    access_role: str = "owner"  # owner | writer | reader | freeBusyReader
    time_zone: str = "Europe/Berlin"
    primary: bool = False
    events: dict[str, Resource] = field(default_factory=dict)  # masters, singles, exceptions
    changed: dict[str, int] = field(default_factory=dict)  # event id → its last change's number

    def entry(self) -> Resource:
        return {
            "kind": "calendar#calendarListEntry",
            "id": self.id,
            "summary": self.summary,
            "accessRole": self.access_role,
            "timeZone": self.time_zone,
            **({"primary": True} if self.primary else {}),
        }


class FakeGoogleCalendar:
    def __init__(self, owner: str = "ada@example.com", *, page_size: int = MAX_RESULTS) -> None:
        self.client_id = "fake-client.apps.googleusercontent.com"
        self.client_secret = "fake-client-secret"
        self.calendars: dict[str, FakeCalendar] = {owner: FakeCalendar(owner, owner, primary=True)}
        self.page_size = page_size
        # What the user ticked on the consent screen (the token endpoint reports it).
        self.granted = (
            "https://www.googleapis.com/auth/calendar.events "
            "https://www.googleapis.com/auth/calendar.readonly"
        )
        self.refresh_tokens: set[str] = set()
        self.access_tokens: set[str] = set()
        self.codes: set[str] = set()
        self.requests: list[tuple[str, str, dict[str, str]]] = []  # method, path, headers
        self.token_requests: list[dict[str, str]] = []
        self._faults: list[tuple[int, str]] = []
        self._etags = itertools.count(3_181_161_784_712_000, 1_000)
        self._changes = itertools.count(1)
        self._sync_generation = 0  # expire_sync_tokens: tokens of older generations are 410
        self.app = Starlette(
            routes=[
                Route("/token", self._token, methods=["POST"]),
                Route(f"{API}/users/me/calendarList", self._api(self._calendar_list)),
                Route(f"{API}/users/me/calendarList/{{cal}}", self._api(self._calendar_entry)),
                Route(f"{API}/freeBusy", self._api(self._free_busy), methods=["POST"]),
                Route(
                    f"{API}/calendars/{{cal}}/events",
                    self._api(self._events),
                    methods=["GET", "POST"],
                ),
                Route(
                    f"{API}/calendars/{{cal}}/events/{{event}}",
                    self._api(self._event),
                    methods=["GET", "PATCH", "DELETE"],
                ),
                Route(
                    f"{API}/calendars/{{cal}}/events/{{event}}/instances",
                    self._api(self._instances),
                ),
            ]
        )

    # --- what tests set up ----------------------------------------------------------------

    def grant(self) -> str:
        """A refresh token the user's consent produced (what the token file holds)."""
        token = secrets.token_urlsafe(16)
        self.refresh_tokens.add(token)
        return token

    def issue_code(self) -> str:
        """An authorization code, as the consent screen redirects with."""
        code = f"4/{secrets.token_urlsafe(12)}"
        self.codes.add(code)
        return code

    def expire_access_tokens(self) -> None:
        self.access_tokens.clear()

    def revoke(self) -> None:
        """The user removed the app's access: every token stops working."""
        self.refresh_tokens.clear()
        self.access_tokens.clear()

    def fail_next(self, status: int, reason: str = "rateLimitExceeded", times: int = 1) -> None:
        self._faults.extend([(status, reason)] * times)

    def add_calendar(self, calendar: FakeCalendar) -> None:
        self.calendars[calendar.id] = calendar

    def put(self, calendar: str, event: Resource) -> Resource:
        """Store an event directly (as if made in Google's own app): an exception shares
        its series' iCalUID."""
        found = self._calendar(calendar)
        series = found.events.get(event.get("recurringEventId", ""), {})
        uid = series.get("iCalUID") or f"{event.get('recurringEventId') or event['id']}@google.com"
        return self._save(found, {"status": "confirmed", "iCalUID": uid, **event})

    def edit(self, calendar: str, event_id: str, **fields: Any) -> Resource:
        """Change a stored event elsewhere (its ETag changes; a series whose times or rule
        change loses the exceptions it no longer has, as through the API)."""
        found = self._calendar(calendar)
        before = found.events[event_id]
        return self._changed(found, before, self._save(found, {**before, **fields}))

    def expire_sync_tokens(self) -> None:
        """Google let the sync tokens expire: the next incremental sync answers 410."""
        self._sync_generation += 1

    def stored(self, calendar: str, event_id: str) -> Resource | None:
        return self._calendar(calendar).events.get(event_id)

    # --- the token endpoint ---------------------------------------------------------------

    async def _token(self, request: Request) -> Response:
        form = {k: str(v) for k, v in (await request.form()).items()}
        basic = request.headers.get("authorization", "")
        if basic.startswith("Basic "):  # RFC 6749 2.3.1: the client may authenticate either way
            name, _, secret = base64.b64decode(basic[6:]).decode().partition(":")
            form.update(client_id=unquote(name), client_secret=unquote(secret))
        self.token_requests.append(form)
        if (form.get("client_id"), form.get("client_secret")) != (
            self.client_id,
            self.client_secret,
        ):
            return JSONResponse(
                {"error": "invalid_client", "error_description": "Unauthorized"}, 401
            )
        grant = form.get("grant_type")
        if grant == "refresh_token" and form.get("refresh_token") in self.refresh_tokens:
            return JSONResponse(self._access())
        if grant == "authorization_code" and form.get("code") in self.codes:
            self.codes.discard(form["code"])
            return JSONResponse({**self._access(), "refresh_token": self.grant()})
        return JSONResponse(
            {"error": "invalid_grant", "error_description": "Token has been expired or revoked."},
            400,
        )

    def _access(self) -> Resource:
        token = f"ya29.{secrets.token_urlsafe(24)}"
        self.access_tokens.add(token)
        return {
            "access_token": token,
            "expires_in": 3599,
            "token_type": "Bearer",
            "scope": self.granted,
        }

    # --- the API --------------------------------------------------------------------------

    def _api(self, handler: Any) -> Any:
        async def endpoint(request: Request) -> Response:
            self.requests.append((request.method, request.url.path, dict(request.headers)))
            bearer = request.headers.get("authorization", "").removeprefix("Bearer ")
            try:
                if bearer not in self.access_tokens:
                    raise ApiError(
                        401,
                        "authError",
                        "Request had invalid authentication credentials.",
                    )
                if self._faults:
                    status, reason = self._faults.pop(0)
                    limited = "Limit" in reason
                    raise ApiError(
                        status,
                        reason,
                        "Rate Limit Exceeded" if limited else reason,
                        "usageLimits" if limited else "global",
                    )
                body = await request.json() if request.method in ("POST", "PATCH") else {}
                answer = handler(request, dict(request.query_params), body)
            except ApiError as error:
                return error.response
            if answer is None:
                return Response(status_code=204)
            return JSONResponse(answer)

        return endpoint

    def _calendar(self, calendar_id: str) -> FakeCalendar:
        if calendar_id == "primary":
            return next(c for c in self.calendars.values() if c.primary)
        if calendar_id not in self.calendars:
            raise ApiError(404, "notFound", "Not Found")
        return self.calendars[calendar_id]

    def _calendar_list(self, request: Request, query: dict[str, str], body: Resource) -> Resource:
        items = [c.entry() for c in self.calendars.values()]
        return {"kind": "calendar#calendarList", "etag": '"p33c"', "items": items}

    def _calendar_entry(self, request: Request, query: dict[str, str], body: Resource) -> Resource:
        return self._calendar(request.path_params["cal"]).entry()

    def _events(self, request: Request, query: dict[str, str], body: Resource) -> Resource:
        calendar = self._calendar(request.path_params["cal"])
        if request.method == "POST":
            return self._insert(calendar, body)
        single = query.get("singleEvents") == "true"
        if "orderBy" in query and query["orderBy"] == "startTime" and not single:
            raise ApiError(
                400, "invalid", "The requested ordering is not available for the particular query."
            )
        if "syncToken" in query:
            found = self._since(calendar, query)
        else:
            found = self._listed(calendar, query, single)
        wanted = query.get("q", "").casefold()
        if wanted:
            found = [
                e
                for e in found
                if any(
                    wanted in str(e.get(k, "")).casefold()
                    for k in ("summary", "description", "location")
                )
            ]
        if query.get("orderBy") == "startTime":
            found.sort(key=lambda e: _instant(calendar, e["start"]))
        page = self._page(found, query, _zone(calendar, query))
        if "nextPageToken" not in page:
            token = f"{self._sync_generation}:{max(calendar.changed.values(), default=0)}"
            page["nextSyncToken"] = base64.urlsafe_b64encode(token.encode()).decode()
        return {
            "kind": "calendar#events",
            "summary": calendar.summary,
            "timeZone": calendar.time_zone,
            "accessRole": calendar.access_role,
            **page,
        }

    def _listed(
        self, calendar: FakeCalendar, query: dict[str, str], single: bool
    ) -> list[Resource]:
        low, high = _range(query)
        ranged = "timeMin" in query or "timeMax" in query
        deleted = query.get("showDeleted") == "true"
        found = []
        for event in calendar.events.values():
            if "iCalUID" in query and event.get("iCalUID") != query["iCalUID"]:
                continue
            if single:
                if "recurringEventId" in event:
                    continue  # reached through its series
                found.extend(self._expand(calendar, event, low, high, deleted))
            elif "recurringEventId" in event:  # an exception: cancelled ones are listed too
                if _overlaps(calendar, event, low, high):
                    found.append(event)
            elif deleted or event["status"] != "cancelled":
                if "recurrence" not in event:
                    if _overlaps(calendar, event, low, high):
                        found.append(event)
                elif not ranged or self._expand(calendar, event, low, high, deleted=False):
                    found.append(event)
        return found

    def _since(self, calendar: FakeCalendar, query: dict[str, str]) -> list[Resource]:
        """What changed since the sync token's list, deleted events included."""
        if SYNC_EXCLUDES & set(query):
            raise ApiError(400, "invalid", "Sync token cannot be used with these parameters.")
        try:
            generation, since = map(
                int, base64.urlsafe_b64decode(query["syncToken"]).decode().split(":")
            )
        except ValueError:
            raise ApiError(400, "invalid", "Invalid sync token value.") from None
        if generation != self._sync_generation:
            raise ApiError(
                410, "fullSyncRequired", "Sync token is no longer valid, a full sync is required."
            )
        return [e for i, e in calendar.events.items() if calendar.changed.get(i, 0) > since]

    def _instances(self, request: Request, query: dict[str, str], body: Resource) -> Resource:
        calendar = self._calendar(request.path_params["cal"])
        master = calendar.events.get(request.path_params["event"])
        if master is None or master["status"] == "cancelled":
            raise ApiError(404, "notFound", "Not Found")
        low, high = _range(query)
        deleted = query.get("showDeleted") == "true"
        found = self._expand(calendar, master, low, high, deleted, inclusive=True)
        if "originalStart" in query:
            wanted = _moment(query["originalStart"])
            found = [e for e in found if _moment_of(e["originalStartTime"]) == wanted]
        return {
            "kind": "calendar#events",
            "timeZone": calendar.time_zone,
            **self._page(found, query, _zone(calendar, query)),
        }

    def _page(self, found: list[Resource], query: dict[str, str], zone: str) -> Resource:
        size = min(int(query.get("maxResults", "250")), MAX_RESULTS, self.page_size)
        offset = 0
        if "pageToken" in query:
            try:
                offset = int(base64.urlsafe_b64decode(query["pageToken"]).decode())
            except ValueError:
                raise ApiError(400, "invalid", "Invalid page token value.") from None
        page: Resource = {"items": [_render(e, zone) for e in found[offset : offset + size]]}
        if offset + size < len(found):
            page["nextPageToken"] = base64.urlsafe_b64encode(str(offset + size).encode()).decode()
        return page

    def _event(self, request: Request, query: dict[str, str], body: Resource) -> Resource | None:
        calendar = self._calendar(request.path_params["cal"])
        event_id = request.path_params["event"]
        event = calendar.events.get(event_id) or self._virtual(calendar, event_id)
        if event is None:
            raise ApiError(404, "notFound", "Not Found")
        if request.method == "GET":
            return _render(event, _zone(calendar, query))
        restored = request.method == "PATCH" and body.get("status") == "confirmed"
        if event["status"] == "cancelled" and not restored:
            raise ApiError(410, "deleted", "Resource has been deleted")
        match = request.headers.get("if-match")
        if match is not None and match != event["etag"]:
            raise ApiError(412, "conditionNotMet", "Precondition Failed")
        if request.method == "DELETE":
            self._save(calendar, {**event, "status": "cancelled"})
            for exception in self._exceptions(calendar, event_id):
                self._save(calendar, {**exception, "status": "cancelled"})
            return None
        changed = _merged(event, body)
        _check_times(changed)
        return _render(
            self._changed(calendar, event, self._save(calendar, changed)), calendar.time_zone
        )

    def _exceptions(self, calendar: FakeCalendar, master_id: str) -> list[Resource]:
        return [e for e in calendar.events.values() if e.get("recurringEventId") == master_id]

    def _changed(self, calendar: FakeCalendar, before: Resource, after: Resource) -> Resource:
        """A series whose start or rule changed keeps only the exceptions whose original
        start is still one of its instances."""
        if "recurrence" not in after or all(
            before.get(k) == after.get(k) for k in ("start", "recurrence")
        ):
            return after
        for exception in self._exceptions(calendar, after["id"]):
            original = _moment_of(exception["originalStartTime"])
            around = _start_of(exception["originalStartTime"])
            kept = _originals(after, around - timedelta(days=1), around + timedelta(days=1))
            if not any(_same_moment(original, k) for k in kept):
                del calendar.events[exception["id"]]
                calendar.changed.pop(exception["id"], None)
        return after

    def _insert(self, calendar: FakeCalendar, body: Resource) -> Resource:
        if calendar.access_role not in ("owner", "writer"):
            raise ApiError(403, "requiredAccessLevel", "You need to have writer access.")
        event_id = body.get("id") or secrets.token_hex(13)
        if not _ID.fullmatch(event_id):
            raise ApiError(400, "invalid", "Invalid resource id value.")
        if event_id in calendar.events:
            raise ApiError(409, "duplicate", "The requested identifier already exists.")
        _check_times(body)
        event = self._save(
            calendar,
            {"status": "confirmed", "iCalUID": f"{event_id}@google.com", **body, "id": event_id},
        )
        return _render(event, calendar.time_zone)

    def _free_busy(self, request: Request, query: dict[str, str], body: Resource) -> Resource:
        low, high = _moment(body["timeMin"]), _moment(body["timeMax"])
        assert isinstance(low, datetime)
        assert isinstance(high, datetime)
        answer: dict[str, Resource] = {}
        for item in body.get("items", []):
            try:
                calendar = self._calendar(item["id"])
            except ApiError:
                answer[item["id"]] = {
                    "errors": [{"domain": "global", "reason": "notFound"}],
                    "busy": [],
                }
                continue
            spans = sorted(
                (_instant(calendar, e["start"]), _instant(calendar, e["end"]))
                for master in calendar.events.values()
                if "recurringEventId" not in master
                for e in self._expand(calendar, master, low, high, deleted=False)
                if e.get("transparency") != "transparent"
            )
            merged: list[list[datetime]] = []
            for start, end in spans:
                if merged and start <= merged[-1][1]:
                    merged[-1][1] = max(merged[-1][1], end)
                else:
                    merged.append([max(start, low), min(end, high)])
            answer[item["id"]] = {"busy": [{"start": _rfc(s), "end": _rfc(e)} for s, e in merged]}
        return {
            "kind": "calendar#freeBusy",
            "timeMin": body["timeMin"],
            "timeMax": body["timeMax"],
            "calendars": answer,
        }

    # --- recurrence -----------------------------------------------------------------------

    def _expand(
        self,
        calendar: FakeCalendar,
        event: Resource,
        low: datetime,
        high: datetime,
        deleted: bool,
        inclusive: bool = False,
    ) -> list[Resource]:
        if event["status"] == "cancelled" and not deleted:
            return []
        if "recurrence" not in event:
            return [event] if _overlaps(calendar, event, low, high, inclusive) else []
        found = []
        for original in _originals(event, low - WINDOW, high + WINDOW):
            instance = calendar.events.get(_instance_id(event["id"], original))
            if instance is None:
                instance = _derived(event, original)
            elif instance["status"] == "cancelled" and not deleted:
                continue
            if _overlaps(calendar, instance, low, high, inclusive):
                found.append(instance)
        return found

    def _virtual(self, calendar: FakeCalendar, event_id: str) -> Resource | None:
        """An instance named by its id, not changed on its own (so not stored)."""
        master_id, _, suffix = event_id.rpartition("_")
        master = calendar.events.get(master_id)
        if master is None or "recurrence" not in master or not suffix:
            return None
        start = master["start"]
        for original in _originals(
            master, _start_of(start) - WINDOW, _start_of(start) + WINDOW * 4
        ):
            if _instance_id(master_id, original) == event_id:
                return _derived(master, original)
        return None

    def _save(self, calendar: FakeCalendar, event: Resource) -> Resource:
        """Store a new version of the event: a new ETag, and a change a sync token sees."""
        now = datetime.now(UTC).isoformat().replace("+00:00", "Z")
        stored = {
            **event,
            "etag": f'"{next(self._etags)}"',
            "updated": now,
            "kind": "calendar#event",
        }
        calendar.events[stored["id"]] = stored
        calendar.changed[stored["id"]] = next(self._changes)
        return stored


def _originals(master: Resource, low: datetime, high: datetime) -> list[datetime | date]:
    start = master["start"]
    if "date" in start:
        first = datetime.combine(date.fromisoformat(start["date"]), datetime.min.time())
        rules = _rule_set(master["recurrence"], first, None)
        naive_low, naive_high = low.replace(tzinfo=None), high.replace(tzinfo=None)
        return [d.date() for d in rules.between(naive_low, naive_high, inc=True)]
    zone = ZoneInfo(start["timeZone"])
    first = datetime.fromisoformat(start["dateTime"]).astimezone(zone)
    return list(_rule_set(master["recurrence"], first, zone).between(low, high, inc=True))


def _rule_set(lines: list[str], first: datetime, zone: ZoneInfo | None) -> rruleset:
    """RRULE, EXRULE, RDATE and EXDATE lines (RFC 5545, ``TZID``/``VALUE=DATE`` parameters)
    as one set from ``first``; a rule's UNTIL in the series' own form (dateutil wants UTC
    beside a zoned start)."""
    rules = rruleset()
    has_rule = False
    for line in lines:
        head, _, value = line.partition(":")
        name = head.upper().split(";")[0]
        if name in ("RRULE", "EXRULE"):
            rule = rrulestr(_until(value, zone), dtstart=first)
            (rules.rrule if name == "RRULE" else rules.exrule)(rule)  # type: ignore[arg-type]
            has_rule = has_rule or name == "RRULE"
        elif name in ("RDATE", "EXDATE"):
            named = [
                p.partition("=")[2] for p in head.split(";")[1:] if p.upper().startswith("TZID=")
            ]
            tz = ZoneInfo(named[0]) if named else zone
            for text in value.split(","):
                moment = _listed_moment(text.strip(), tz, first, zone)
                (rules.rdate if name == "RDATE" else rules.exdate)(moment)
    if not has_rule:
        rules.rdate(first)  # RFC 5545: DTSTART is the first instance
    return rules


def _until(rule: str, zone: ZoneInfo | None) -> str:
    def fixed(found: re.Match[str]) -> str:
        day, clock, utc = found.group(1), found.group(2) or "", found.group(3) or ""
        if zone is None:
            return f"UNTIL={day}{clock}"
        local = datetime.strptime(day + (clock or "T235959"), "%Y%m%dT%H%M%S")
        instant = local.replace(tzinfo=UTC if utc else zone).astimezone(UTC)
        return f"UNTIL={instant:%Y%m%dT%H%M%S}Z"

    return re.sub(r"UNTIL=(\d{8})(T\d{6})?(Z)?", fixed, rule)


def _listed_moment(
    text: str, tz: ZoneInfo | None, first: datetime, zone: ZoneInfo | None
) -> datetime:
    if len(text) == 8:
        day = datetime.strptime(text, "%Y%m%d")
        return day if zone is None else datetime.combine(day.date(), first.timetz())
    moment = datetime.strptime(text.rstrip("Z"), "%Y%m%dT%H%M%S")
    if zone is None:
        return moment
    if text.endswith("Z"):
        return moment.replace(tzinfo=UTC).astimezone(zone)
    return moment.replace(tzinfo=tz or zone)


def _derived(master: Resource, original: datetime | date) -> Resource:
    span = _start_of(master["end"]) - _start_of(master["start"])
    instance = {k: v for k, v in master.items() if k != "recurrence"}
    if isinstance(original, datetime):
        zone = master["start"]["timeZone"]
        when = original.astimezone(ZoneInfo(zone))
        times = (
            {"dateTime": when.isoformat(), "timeZone": zone},
            {"dateTime": (when + span).astimezone(ZoneInfo(zone)).isoformat(), "timeZone": zone},
        )
    else:
        times = ({"date": original.isoformat()}, {"date": (original + span).isoformat()})
    instance_id = _instance_id(master["id"], original)
    digest = hashlib.sha256(f"{master['etag']}{instance_id}".encode()).digest()
    return {
        **instance,
        "etag": f'"{int.from_bytes(digest[:7], "big")}"',
        "id": instance_id,
        "recurringEventId": master["id"],
        "originalStartTime": dict(times[0]),
        "start": times[0],
        "end": times[1],
    }


def _instance_id(master_id: str, original: datetime | date) -> str:
    if isinstance(original, datetime):
        return f"{master_id}_{original.astimezone(UTC):%Y%m%dT%H%M%SZ}"
    return f"{master_id}_{original:%Y%m%d}"


def _check_times(event: Resource) -> None:
    for side in ("start", "end"):
        if side not in event or not ({"date", "dateTime"} & set(event[side])):
            raise ApiError(
                400, "required", "Missing end time." if side == "end" else "Missing start time."
            )
    if "recurrence" in event and "dateTime" in event["start"] and "timeZone" not in event["start"]:
        raise ApiError(400, "invalid", "Missing time zone definition for start time.")
    if any({"date", "dateTime"} <= set(event[side]) for side in ("start", "end")):
        raise ApiError(400, "invalid", "Invalid start time: a date and a dateTime.")
    if _start_of(event["end"]) < _start_of(event["start"]):
        raise ApiError(400, "timeRangeEmpty", "The specified time range is empty.")


def _range(query: dict[str, str]) -> tuple[datetime, datetime]:
    try:
        low = _moment(query.get("timeMin", "1970-01-01T00:00:00Z"))
        high = _moment(query.get("timeMax", "2100-01-01T00:00:00Z"))
    except ValueError:
        raise ApiError(400, "badRequest", "Bad Request") from None
    if not isinstance(low, datetime) or not isinstance(high, datetime) or low.tzinfo is None:
        raise ApiError(400, "badRequest", "Bad Request")  # RFC 3339 with an offset, required
    return low, high


def _moment(text: str) -> datetime | date:
    return date.fromisoformat(text) if len(text) == 10 else datetime.fromisoformat(text)


def _moment_of(when: Resource) -> datetime | date:
    return _moment(when.get("dateTime") or when["date"])


def _start_of(when: Resource) -> datetime:
    moment = _moment_of(when)
    if isinstance(moment, datetime):
        return moment
    return datetime.combine(moment, datetime.min.time(), tzinfo=UTC)


def _instant(calendar: FakeCalendar, when: Resource) -> datetime:
    """A date is its midnight in the calendar's zone, as Google counts all-day events."""
    moment = _moment_of(when)
    if isinstance(moment, datetime):
        return moment
    return datetime.combine(moment, datetime.min.time(), tzinfo=ZoneInfo(calendar.time_zone))


def _overlaps(
    calendar: FakeCalendar,
    event: Resource,
    low: datetime,
    high: datetime,
    inclusive: bool = False,
) -> bool:
    """timeMax bounds the start (exclusive); timeMin the end: exclusive for events.list,
    inclusive for events.instances."""
    end = _instant(calendar, event["end"])
    return _instant(calendar, event["start"]) < high and (end >= low if inclusive else end > low)


def _same_moment(a: datetime | date, b: datetime | date) -> bool:
    if isinstance(a, datetime) and isinstance(b, datetime):
        return a == b
    return not isinstance(a, datetime) and not isinstance(b, datetime) and a == b


def _merged(old: Resource, patch: Resource) -> Resource:
    """Patch semantics: given fields replace, nested objects merge, arrays are replaced
    whole, null clears a field."""
    merged = dict(old)
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, dict) and isinstance(old.get(key), dict):
            merged[key] = _merged(old[key], value)
        else:
            merged[key] = value
    return merged


def _zone(calendar: FakeCalendar, query: dict[str, str]) -> str:
    return query.get("timeZone") or calendar.time_zone


def _render(event: Resource, zone: str) -> Resource:
    """The event with its times written in ``zone`` (the same instants)."""
    tz = ZoneInfo(zone)
    shown = dict(event)
    for side in ("start", "end", "originalStartTime"):
        when = event.get(side)
        if when and "dateTime" in when:
            moment = datetime.fromisoformat(when["dateTime"]).astimezone(tz)
            shown[side] = {**when, "dateTime": moment.isoformat()}
    return shown


def _rfc(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
