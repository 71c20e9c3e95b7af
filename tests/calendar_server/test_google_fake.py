"""The fake Google Calendar answers the real google-api-python-client (its static discovery
document, no network) as Google documents: paging, ordering, search, instances, free/busy,
ETags and If-Match, 404 and 410, 401 then a refresh at the token endpoint."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import google_auth_httplib2  # type: ignore[import-untyped]
import httplib2  # type: ignore[import-untyped]
import pytest
from google.auth.exceptions import RefreshError
from google.oauth2.credentials import Credentials
from googleapiclient.discovery import build  # type: ignore[import-untyped]
from googleapiclient.errors import HttpError  # type: ignore[import-untyped]

from calendar_server.google_setup import DENTIST, OWNER, STANDUP, seed
from fakes.google_calendar import FakeGoogleCalendar
from fakes.serving import serving_in_thread


@pytest.fixture
def google() -> Iterator[tuple[FakeGoogleCalendar, Any]]:
    fake = FakeGoogleCalendar(OWNER, page_size=2)
    seed(fake)
    with serving_in_thread(fake.app) as url:
        credentials = Credentials(  # type: ignore[no-untyped-call]
            "ya29.stale",
            refresh_token=fake.grant(),
            token_uri=f"{url}/token",
            client_id=fake.client_id,
            client_secret=fake.client_secret,
        )
        http = google_auth_httplib2.AuthorizedHttp(credentials, http=httplib2.Http(timeout=10))
        api = build(
            "calendar",
            "v3",
            http=http,
            static_discovery=True,
            client_options={"api_endpoint": f"{url}/calendar/v3/"},
        )
        yield fake, api


def _status(request: Any) -> int:
    with pytest.raises(HttpError) as failed:
        request.execute()
    status: int = failed.value.status_code
    return status


def test_a_stale_access_token_answers_401_and_the_client_refreshes_it(
    google: tuple[FakeGoogleCalendar, Any],
) -> None:
    fake, api = google
    entry = api.calendarList().get(calendarId="primary").execute()
    assert (entry["id"], entry["accessRole"], entry["primary"]) == (OWNER, "owner", True)
    assert [r["grant_type"] for r in fake.token_requests] == ["refresh_token"]
    fake.revoke()  # 401, and the refresh is refused
    with pytest.raises(RefreshError, match="invalid_grant"):
        api.calendarList().list().execute()


def test_events_list_pages_expands_series_and_orders_by_start(
    google: tuple[FakeGoogleCalendar, Any],
) -> None:
    _, api = google
    events = api.events()
    query = {
        "calendarId": "primary",
        "timeMin": "2026-03-16T00:00:00+01:00",
        "timeMax": "2026-03-31T00:00:00+02:00",
        "singleEvents": True,
        "orderBy": "startTime",
    }
    request, titles, pages = events.list(**query), [], 0
    while request is not None:
        page = request.execute()
        titles += [(e["summary"], e["start"]["dateTime"][:16]) for e in page["items"]]
        pages += 1
        request = events.list_next(request, page)
    assert titles == [
        ("Stand-up", "2026-03-16T09:30"),
        ("Dentist", "2026-03-17T10:00"),
        ("Team lunch", "2026-03-18T12:00"),
        ("Stand-up", "2026-03-23T09:30"),
        ("Stand-up", "2026-03-30T09:30"),
    ]
    assert pages == 3
    assert _status(events.list(calendarId="primary", orderBy="startTime")) == 400
    masters = events.list(calendarId="primary", q="stand").execute()["items"]
    assert [(m["id"], m["recurrence"]) for m in masters] == [
        (STANDUP, ["RRULE:FREQ=WEEKLY;BYDAY=MO"])
    ]
    found = events.list(calendarId="primary", q="main st", singleEvents=True).execute()
    assert [e["id"] for e in found["items"]] == [DENTIST]


def test_an_instance_is_named_by_its_original_start_and_edits_become_exceptions(
    google: tuple[FakeGoogleCalendar, Any],
) -> None:
    fake, api = google
    events = api.events()
    [instance] = events.instances(
        calendarId="primary", eventId=STANDUP, originalStart="2026-03-23T09:30:00+01:00"
    ).execute()["items"]
    assert instance["id"] == f"{STANDUP}_20260323T083000Z"
    assert instance["recurringEventId"] == STANDUP
    assert instance["etag"] != fake.stored(OWNER, STANDUP)["etag"]  # type: ignore[index]
    moved = events.patch(
        calendarId="primary",
        eventId=instance["id"],
        body={
            "start": {"dateTime": "2026-03-24T09:30:00+01:00", "timeZone": "Europe/Berlin"},
            "end": {"dateTime": "2026-03-24T09:45:00+01:00", "timeZone": "Europe/Berlin"},
        },
    ).execute()
    assert moved["originalStartTime"]["dateTime"] == "2026-03-23T09:30:00+01:00"
    assert moved["etag"] != instance["etag"]
    again = events.get(calendarId="primary", eventId=instance["id"]).execute()
    assert again["start"]["dateTime"] == "2026-03-24T09:30:00+01:00"


def test_if_match_on_an_old_etag_is_412_and_a_deleted_event_is_410(
    google: tuple[FakeGoogleCalendar, Any],
) -> None:
    fake, api = google
    events = api.events()
    etag = events.get(calendarId="primary", eventId=DENTIST).execute()["etag"]
    fake.edit(OWNER, DENTIST, summary="Dentist (Dr Who)")
    stale = events.patch(calendarId="primary", eventId=DENTIST, body={"summary": "x"})
    stale.headers["If-Match"] = etag
    assert _status(stale) == 412
    assert fake.stored(OWNER, DENTIST)["summary"] == "Dentist (Dr Who)"  # type: ignore[index]
    events.delete(calendarId="primary", eventId=DENTIST).execute()
    assert events.get(calendarId="primary", eventId=DENTIST).execute()["status"] == "cancelled"
    assert _status(events.delete(calendarId="primary", eventId=DENTIST)) == 410
    assert _status(events.get(calendarId="primary", eventId="nosuchevent")) == 404


def test_inserting_an_id_twice_is_409_and_rate_limits_are_403_or_429(
    google: tuple[FakeGoogleCalendar, Any],
) -> None:
    fake, api = google
    body = {
        "id": "abc000001",
        "summary": "Yoga",
        "start": {"date": "2026-03-20"},
        "end": {"date": "2026-03-21"},
    }
    api.events().insert(calendarId="primary", body=body).execute()
    assert _status(api.events().insert(calendarId="primary", body=body)) == 409
    fake.fail_next(403, "rateLimitExceeded")
    with pytest.raises(HttpError) as failed:
        api.calendarList().list().execute()
    assert failed.value.error_details[0]["reason"] == "rateLimitExceeded"


def test_free_busy_merges_the_busy_times_of_a_calendar(
    google: tuple[FakeGoogleCalendar, Any],
) -> None:
    _, api = google
    answer = (
        api.freebusy()
        .query(
            body={
                "timeMin": "2026-03-16T00:00:00Z",
                "timeMax": "2026-03-18T00:00:00Z",
                "items": [{"id": OWNER}, {"id": "nobody@example.com"}],
            }
        )
        .execute()
    )
    assert answer["calendars"][OWNER]["busy"] == [
        {"start": "2026-03-16T08:30:00Z", "end": "2026-03-16T08:45:00Z"},
        {"start": "2026-03-17T09:00:00Z", "end": "2026-03-17T10:00:00Z"},
    ]
    assert answer["calendars"]["nobody@example.com"]["errors"][0]["reason"] == "notFound"


BERLIN_TIME = {"timeZone": "Europe/Berlin"}


def _at(moment: str) -> dict[str, str]:
    return {"dateTime": moment, **BERLIN_TIME}


def _all(method: Any, method_next: Any, **query: Any) -> list[dict[str, Any]]:
    """Every page's items."""
    request, items = method(**query), []
    while request is not None:
        page = request.execute()
        items += page["items"]
        request = method_next(request, page)
    return items


def _cancel_instance(fake: FakeGoogleCalendar, utc: str, start: str, end: str) -> None:
    fake.put(
        OWNER,
        {
            "id": f"{STANDUP}_{utc}",
            "recurringEventId": STANDUP,
            "originalStartTime": _at(start),
            "status": "cancelled",
            "start": _at(start),
            "end": _at(end),
        },
    )


def test_rdate_exrule_and_zoned_exdate_lines_in_recurrence_are_expanded(
    google: tuple[FakeGoogleCalendar, Any],
) -> None:
    fake, api = google
    fake.edit(
        OWNER,
        STANDUP,
        recurrence=[
            "RRULE:FREQ=WEEKLY;BYDAY=MO",
            "EXRULE:FREQ=MONTHLY;BYDAY=1MO",
            "EXDATE;TZID=Europe/Berlin:20260323T093000",
            "RDATE;TZID=Europe/Berlin:20260325T093000,20260326T093000",
            "RDATE:20260327T120000Z",
        ],
    )
    events = api.events()
    items = _all(
        events.instances,
        events.instances_next,
        calendarId="primary",
        eventId=STANDUP,
        timeMin="2026-03-16T00:00:00+01:00",
        timeMax="2026-04-14T00:00:00+02:00",
    )
    assert [i["start"]["dateTime"] for i in items] == [
        "2026-03-16T09:30:00+01:00",
        "2026-03-25T09:30:00+01:00",
        "2026-03-26T09:30:00+01:00",
        "2026-03-27T13:00:00+01:00",
        "2026-03-30T09:30:00+02:00",
        "2026-04-13T09:30:00+02:00",  # 6 Apr is the first Monday of April: EXRULE
    ]


def test_a_list_without_single_events_has_cancelled_instances_and_only_masters_in_range(
    google: tuple[FakeGoogleCalendar, Any],
) -> None:
    fake, api = google
    _cancel_instance(
        fake, "20260323T083000Z", "2026-03-23T09:30:00+01:00", "2026-03-23T09:45:00+01:00"
    )
    fake.put(
        OWNER,
        {
            "id": "oldseries01",
            "summary": "Choir",
            "start": _at("2025-01-07T19:00:00+01:00"),
            "end": _at("2025-01-07T21:00:00+01:00"),
            "recurrence": ["RRULE:FREQ=WEEKLY;COUNT=4"],
        },
    )
    events = api.events()
    listed = _all(
        events.list,
        events.list_next,
        calendarId="primary",
        timeMin="2026-03-16T00:00:00+01:00",
        timeMax="2026-03-31T00:00:00+02:00",
    )
    assert sorted((e["id"], e["status"]) for e in listed) == [
        (DENTIST, "confirmed"),
        ("lunch00001", "confirmed"),
        (STANDUP, "confirmed"),
        (f"{STANDUP}_20260323T083000Z", "cancelled"),
    ]


def test_instances_time_min_is_inclusive_where_the_list_is_exclusive(
    google: tuple[FakeGoogleCalendar, Any],
) -> None:
    _, api = google
    at_end = "2026-03-16T09:45:00+01:00"  # the first stand-up ends exactly then
    instances = (
        api.events()
        .instances(
            calendarId="primary",
            eventId=STANDUP,
            timeMin=at_end,
            timeMax="2026-03-24T00:00:00+01:00",
        )
        .execute()["items"]
    )
    listed = (
        api.events()
        .list(
            calendarId="primary",
            singleEvents=True,
            q="stand",
            timeMin=at_end,
            timeMax="2026-03-24T00:00:00+01:00",
        )
        .execute()["items"]
    )
    assert [i["start"]["dateTime"][:10] for i in instances] == ["2026-03-16", "2026-03-23"]
    assert [i["start"]["dateTime"][:10] for i in listed] == ["2026-03-23"]


def test_times_are_answered_in_the_time_zone_asked_for_else_the_calendars(
    google: tuple[FakeGoogleCalendar, Any],
) -> None:
    fake, api = google
    fake.put(
        OWNER,
        {
            "id": "nyccall001",
            "summary": "NYC call",
            "start": {"dateTime": "2026-03-18T10:00:00-04:00", "timeZone": "America/New_York"},
            "end": {"dateTime": "2026-03-18T11:00:00-04:00", "timeZone": "America/New_York"},
        },
    )
    default = api.events().get(calendarId="primary", eventId="nyccall001").execute()
    tokyo = (
        api.events()
        .list(calendarId="primary", singleEvents=True, q="nyc", timeZone="Asia/Tokyo")
        .execute()
    )
    assert default["start"] == {
        "dateTime": "2026-03-18T15:00:00+01:00",
        "timeZone": "America/New_York",
    }
    assert tokyo["timeZone"] == "Europe/Berlin"  # the calendar's own zone, whatever was asked
    assert tokyo["items"][0]["start"]["dateTime"] == "2026-03-18T23:00:00+09:00"


def test_a_sync_token_lists_what_changed_and_an_expired_one_is_410(
    google: tuple[FakeGoogleCalendar, Any],
) -> None:
    fake, api = google
    events = api.events()
    request, pages, token = events.list(calendarId="primary"), [], None
    while request is not None:
        page = request.execute()
        pages.append(page)
        token = page.get("nextSyncToken")
        request = events.list_next(request, page)
    assert token is not None
    assert all("nextSyncToken" not in p for p in pages[:-1])
    fake.edit(OWNER, DENTIST, summary="Dentist (Dr Who)")
    events.delete(calendarId="primary", eventId="lunch00001").execute()
    changed = events.list(calendarId="primary", syncToken=token).execute()
    assert sorted((e["id"], e["status"]) for e in changed["items"]) == [
        (DENTIST, "confirmed"),
        ("lunch00001", "cancelled"),
    ]
    assert (
        events.list(calendarId="primary", syncToken=changed["nextSyncToken"]).execute()["items"]
        == []
    )
    ranged = events.list(calendarId="primary", syncToken=token, timeMin="2026-03-16T00:00:00Z")
    assert _status(ranged) == 400
    fake.expire_sync_tokens()
    with pytest.raises(HttpError) as gone:
        events.list(calendarId="primary", syncToken=token).execute()
    assert gone.value.status_code == 410
    assert gone.value.error_details[0]["reason"] == "fullSyncRequired"


def test_every_instance_has_its_own_etag_which_follows_its_series(
    google: tuple[FakeGoogleCalendar, Any],
) -> None:
    fake, api = google
    query = {
        "calendarId": "primary",
        "eventId": STANDUP,
        "timeMin": "2026-03-16T00:00:00+01:00",
        "timeMax": "2026-03-31T00:00:00+02:00",
    }
    events = api.events()
    first = [i["etag"] for i in _all(events.instances, events.instances_next, **query)]
    master = fake.stored(OWNER, STANDUP)
    assert master is not None
    assert len(set(first)) == 3
    assert master["etag"] not in first
    fake.edit(OWNER, STANDUP, description="Room 4")
    again = [i["etag"] for i in _all(events.instances, events.instances_next, **query)]
    assert not set(first) & set(again)


def test_patch_merges_nested_objects_and_replaces_arrays(
    google: tuple[FakeGoogleCalendar, Any],
) -> None:
    fake, api = google
    fake.edit(
        OWNER,
        DENTIST,
        extendedProperties={"private": {"a": "1"}},
        reminders={"useDefault": False, "overrides": [{"method": "popup", "minutes": 10}]},
    )
    patched = (
        api.events()
        .patch(
            calendarId="primary",
            eventId=DENTIST,
            body={
                "start": {"dateTime": "2026-03-17T10:30:00+01:00"},
                "end": {"dateTime": "2026-03-17T11:30:00+01:00"},
                "extendedProperties": {"private": {"b": "2"}},
                "reminders": {"overrides": [{"method": "email", "minutes": 60}]},
            },
        )
        .execute()
    )
    assert patched["start"] == _at("2026-03-17T10:30:00+01:00")
    assert patched["extendedProperties"] == {"private": {"a": "1", "b": "2"}}
    assert patched["reminders"] == {
        "useDefault": False,
        "overrides": [{"method": "email", "minutes": 60}],
    }


def test_moving_a_series_drops_the_exceptions_it_no_longer_has(
    google: tuple[FakeGoogleCalendar, Any],
) -> None:
    fake, api = google
    _cancel_instance(
        fake, "20260323T083000Z", "2026-03-23T09:30:00+01:00", "2026-03-23T09:45:00+01:00"
    )
    events = api.events()
    events.patch(
        calendarId="primary",
        eventId=f"{STANDUP}_20260330T073000Z",
        body={"summary": "Stand-up with Bo"},
    ).execute()

    def exceptions() -> list[tuple[str, str]]:
        items = _all(events.list, events.list_next, calendarId="primary", showDeleted=True)
        return sorted((e["id"], e["status"]) for e in items if "recurringEventId" in e)

    events.patch(calendarId="primary", eventId=STANDUP, body={"description": "Room 4"}).execute()
    assert exceptions() == [
        (f"{STANDUP}_20260323T083000Z", "cancelled"),
        (f"{STANDUP}_20260330T073000Z", "confirmed"),
    ]
    events.patch(
        calendarId="primary",
        eventId=STANDUP,
        body={"recurrence": ["RRULE:FREQ=WEEKLY;BYDAY=MO;UNTIL=20260324T000000Z"]},
    ).execute()
    assert exceptions() == [(f"{STANDUP}_20260323T083000Z", "cancelled")]
    events.patch(
        calendarId="primary",
        eventId=STANDUP,
        body={
            "start": _at("2026-03-17T09:30:00+01:00"),
            "end": _at("2026-03-17T09:45:00+01:00"),
            "recurrence": ["RRULE:FREQ=WEEKLY;BYDAY=TU"],
        },
    ).execute()
    assert exceptions() == []
    events.patch(
        calendarId="primary",
        eventId=f"{STANDUP}_20260324T083000Z",
        body={"summary": "Stand-up with Cy"},
    ).execute()
    events.delete(calendarId="primary", eventId=STANDUP).execute()
    assert exceptions() == [(f"{STANDUP}_20260324T083000Z", "cancelled")]
    left = _all(
        events.list,
        events.list_next,
        calendarId="primary",
        showDeleted=True,
        singleEvents=True,
        timeMin="2026-03-16T00:00:00+01:00",
        timeMax="2026-03-31T00:00:00+02:00",
    )
    assert {e["status"] for e in left if e.get("recurringEventId") == STANDUP} == {"cancelled"}
