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
    assert instance["etag"] == fake.stored(OWNER, STANDUP)["etag"]  # type: ignore[index]
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
