"""The google backend through the in-memory MCP client, against the fake Google (served
over HTTP and driven by the real google-api-python-client)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import httpx2
import pytest
from fastmcp import Client

from calendar_server.calls import approve, mint, propose
from calendar_server.google_setup import (
    DENTIST,
    OWNER,
    STANDUP,
    credentials,
    seed,
    settings,
    stored,
)
from fakes.clock import Clock
from fakes.google_calendar import FakeCalendar, FakeGoogleCalendar
from fakes.serving import free_port, serving
from fakes.tool_calls import call, call_error
from mcp_calendar.server import build_server
from mcp_calendar.settings import CalendarSettings

pytestmark = pytest.mark.anyio


@pytest.fixture
async def google() -> AsyncIterator[tuple[FakeGoogleCalendar, str]]:
    fake = FakeGoogleCalendar(OWNER, page_size=2)  # pages of two: every read pages
    seed(fake)
    async with serving(fake.app) as url:
        yield fake, url


@pytest.fixture
def google_settings(tmp_path: Path, google: tuple[FakeGoogleCalendar, str]) -> CalendarSettings:
    fake, url = google
    return settings(tmp_path / "data", credentials(fake, tmp_path / "creds", url), url)


@pytest.fixture
async def gclient(google_settings: CalendarSettings, clock: Clock) -> AsyncIterator[Client[Any]]:
    async with Client(build_server(google_settings, clock=clock)) as client:
        yield client


def _titles(found: dict[str, Any]) -> list[tuple[str, str]]:
    return [(e["title"], e["start"]) for e in found["events"]]


async def test_the_week_is_read_from_google_with_the_series_expanded_and_paged(
    gclient: Client[Any],
) -> None:
    week = await call(gclient, "get_events", start="2026-03-16", end="2026-03-24")
    assert _titles(week) == [
        ("Stand-up", "2026-03-16T09:30:00+01:00"),
        ("Dentist", "2026-03-17T10:00:00+01:00"),
        ("Team lunch", "2026-03-18T12:00:00+01:00"),
        ("Stand-up", "2026-03-23T09:30:00+01:00"),
    ]
    assert week["events"][0]["recurring"] is True
    assert week["events"][0]["rule"] == "FREQ=WEEKLY;BYDAY=MO"
    assert week["events"][0]["id"] == STANDUP
    assert week["timezone"] == "Europe/Berlin"


async def test_calendars_search_and_free_time_answer_from_google(gclient: Client[Any]) -> None:
    calendars = await call(gclient, "list_calendars")
    assert calendars["calendars"] == [{"id": "primary", "name": OWNER, "writable": True}]
    assert calendars["default"] == "primary"
    found = await call(gclient, "search_events", query="dentst")
    assert [e["id"] for e in found["events"]] == [DENTIST]
    free = await call(
        gclient, "find_free_time", duration_minutes=60, start="2026-03-17", end="2026-03-17"
    )
    assert [s["start"] for s in free["slots"]] == [
        "2026-03-17T09:00:00+01:00",
        "2026-03-17T11:00:00+01:00",
    ]


async def test_an_added_event_is_inserted_once_under_the_proposals_id(
    gclient: Client[Any], clock: Clock, google: tuple[FakeGoogleCalendar, str]
) -> None:
    fake, _ = google
    proposal = await propose(
        gclient, "propose_event_add", title="Yoga", start="2026-03-19T18:00", duration_minutes=90
    )
    token = mint(clock, proposal["kind"], proposal["payload"])
    arguments = {"payload": proposal["payload"], "approval": token}
    first = await call(gclient, "confirm_event_add", **arguments)
    again = await call(gclient, "confirm_event_add", **arguments)
    assert first["message"] == again["message"]
    assert (first["replayed"], again["replayed"]) == (False, True)
    event = fake.stored(OWNER, proposal["payload"]["uid"].partition("@")[0])
    assert event is not None
    assert event["start"] == {"dateTime": "2026-03-19T18:00:00+01:00", "timeZone": "Europe/Berlin"}
    inserts = [r for r in fake.requests if r[0] == "POST" and r[1].endswith("/events")]
    assert len(inserts) == 1


async def test_a_move_is_sent_with_the_etag_it_was_proposed_against(
    gclient: Client[Any], clock: Clock, google: tuple[FakeGoogleCalendar, str]
) -> None:
    fake, _ = google
    etag = stored(fake, DENTIST)["etag"]
    proposal = await propose(
        gclient, "propose_event_move", event="dentist", start="2026-03-18T12:30"
    )
    assert "Overlaps: “Team lunch”" in proposal["summary"]
    moved = await approve(gclient, clock, proposal)
    assert moved["message"].startswith("Moved “Dentist” to Wed 18 Mar 2026, 12:30–13:30")
    [patch] = [r for r in fake.requests if r[0] == "PATCH"]
    assert patch[2]["if-match"] == etag
    assert stored(fake, DENTIST)["start"]["dateTime"] == "2026-03-18T12:30:00+01:00"


async def test_an_event_changed_in_google_after_the_proposal_is_left_alone(
    gclient: Client[Any], clock: Clock, google: tuple[FakeGoogleCalendar, str]
) -> None:
    fake, _ = google
    proposal = await propose(
        gclient, "propose_event_move", event="dentist", start="2026-03-20T09:00"
    )
    fake.edit(
        OWNER,
        DENTIST,
        start={"dateTime": "2026-03-17T15:00:00+01:00", "timeZone": "Europe/Berlin"},
        end={"dateTime": "2026-03-17T16:00:00+01:00", "timeZone": "Europe/Berlin"},
    )
    token = mint(clock, proposal["kind"], proposal["payload"])
    message = await call_error(
        gclient, "confirm_event_move", payload=proposal["payload"], approval=token
    )
    assert "changed since it was proposed" in message
    assert "it is now Tue 17 Mar 2026, 15:00–16:00" in message
    assert "propose it again" in message
    assert stored(fake, DENTIST)["start"]["dateTime"] == "2026-03-17T15:00:00+01:00"
    assert (
        next(r for r in fake.requests if r[0] == "PATCH")[2]["if-match"]
        != stored(fake, DENTIST)["etag"]
    )


async def test_cancelling_one_occurrence_deletes_only_that_instance(
    gclient: Client[Any], clock: Clock
) -> None:
    proposal = await propose(
        gclient, "propose_event_cancel", event="stand-up", occurrence="2026-03-23", scope="this"
    )
    await approve(gclient, clock, proposal)
    later = await call(gclient, "get_events", start="2026-03-16", end="2026-03-31")
    assert [e["start"] for e in later["events"] if e["title"] == "Stand-up"] == [
        "2026-03-16T09:30:00+01:00",
        "2026-03-30T09:30:00+02:00",
    ]


async def test_moving_this_and_following_splits_the_series_in_google(
    gclient: Client[Any], clock: Clock, google: tuple[FakeGoogleCalendar, str]
) -> None:
    fake, _ = google
    proposal = await propose(
        gclient,
        "propose_event_move",
        event="stand-up",
        occurrence="2026-03-30",
        scope="following",
        start="2026-03-31T10:00",
    )
    await approve(gclient, clock, proposal)
    ups = await call(
        gclient, "search_events", query="stand-up", start="2026-03-16", end="2026-04-08"
    )
    assert stored(fake, STANDUP)["recurrence"] == [
        "RRULE:FREQ=WEEKLY;UNTIL=20260330T072959Z;BYDAY=MO"
    ]
    later = await call(gclient, "get_events", start="2026-03-16", end="2026-04-08")
    assert [e["start"] for e in later["events"] if e["title"] == "Stand-up"] == [
        "2026-03-16T09:30:00+01:00",
        "2026-03-23T09:30:00+01:00",
        "2026-03-31T10:00:00+02:00",
        "2026-04-07T10:00:00+02:00",
    ]
    assert len(ups["events"]) == 2  # the old series and the new one


async def test_moving_the_whole_series_keeps_its_wall_clock_time_across_dst(
    gclient: Client[Any], clock: Clock
) -> None:
    proposal = await propose(
        gclient,
        "propose_event_move",
        event="stand-up",
        occurrence="2026-03-23",
        scope="series",
        start="2026-03-24T08:00",
    )
    await approve(gclient, clock, proposal)
    later = await call(gclient, "get_events", start="2026-03-16", end="2026-04-01")
    assert [e["start"] for e in later["events"] if e["title"] == "Stand-up"] == [
        "2026-03-17T08:00:00+01:00",
        "2026-03-24T08:00:00+01:00",
        "2026-03-31T08:00:00+02:00",
    ]


async def test_a_rate_limit_is_retried_then_answered(
    gclient: Client[Any], google: tuple[FakeGoogleCalendar, str]
) -> None:
    fake, _ = google
    await call(gclient, "list_calendars")  # the calendar list is known
    fake.fail_next(403, "rateLimitExceeded", times=2)
    day = await call(gclient, "get_events", start="2026-03-17")
    assert _titles(day) == [("Dentist", "2026-03-17T10:00:00+01:00")]
    fake.fail_next(429, "rateLimitExceeded", times=3)
    message = await call_error(gclient, "get_events", start="2026-03-18")
    assert message.endswith("try again in a minute.")


async def test_an_expired_access_token_is_refreshed_and_written_back_private(
    gclient: Client[Any], google: tuple[FakeGoogleCalendar, str], google_settings: CalendarSettings
) -> None:
    fake, _ = google
    await call(gclient, "list_calendars")
    fake.expire_access_tokens()
    await call(gclient, "get_events", start="2026-03-17")
    saved = json.loads(google_settings.token_file.read_text())
    assert saved["token"] in fake.access_tokens
    assert google_settings.token_file.stat().st_mode & 0o777 == 0o600
    assert len(fake.token_requests) == 2


async def test_revoked_credentials_fail_health_until_a_new_token_file_is_in_place(
    google: tuple[FakeGoogleCalendar, str], google_settings: CalendarSettings, clock: Clock
) -> None:
    fake, _ = google
    server = build_server(google_settings, clock=clock)
    transport = httpx2.ASGITransport(app=server.http_app())
    async with (
        Client(server) as client,
        httpx2.AsyncClient(transport=transport, base_url="http://calendar") as http,
    ):
        assert (await http.get("/health")).json()["status"] == "ok"
        fake.revoke()
        message = await call_error(client, "get_events", start="2026-03-17")
        health = (await http.get("/health")).json()
        credentials(fake, google_settings.credentials_dir, google[1])  # `auth` was run again
        recovered = (await http.get("/health")).json()
        day = await call(client, "get_events", start="2026-03-17")
    assert message == (
        "Google refused the calendar credentials (expired or revoked): the operator must run "
        "`python -m mcp_calendar auth`."
    )
    assert health["status"] == "fail"
    assert health["checks"]["calendar"] == f"fail: {message}"
    assert recovered["status"] == "ok"
    assert _titles(day) == [("Dentist", "2026-03-17T10:00:00+01:00")]


async def test_an_event_deleted_in_google_after_the_proposal_is_said_to_be_gone(
    gclient: Client[Any], clock: Clock, google: tuple[FakeGoogleCalendar, str]
) -> None:
    fake, _ = google
    proposal = await propose(gclient, "propose_event_cancel", event="dentist")
    fake.edit(OWNER, DENTIST, status="cancelled")
    token = mint(clock, proposal["kind"], proposal["payload"])
    message = await call_error(
        gclient, "confirm_event_cancel", payload=proposal["payload"], approval=token
    )
    assert message == (
        "“Dentist” (Tue 17 Mar 2026, 10:00–11:00) is no longer in the calendar. "
        "Nothing was changed: propose it again if it should still happen."
    )


async def test_cancelling_this_and_following_ends_the_series_and_the_whole_series_deletes_it(
    gclient: Client[Any], clock: Clock, google: tuple[FakeGoogleCalendar, str]
) -> None:
    fake, _ = google
    following = await propose(
        gclient,
        "propose_event_cancel",
        event="stand-up",
        occurrence="2026-03-30",
        scope="following",
    )
    await approve(gclient, clock, following)
    later = await call(gclient, "get_events", start="2026-03-16", end="2026-04-20")
    assert [e["start"][:10] for e in later["events"] if e["title"] == "Stand-up"] == [
        "2026-03-16",
        "2026-03-23",
    ]
    series = await propose(
        gclient, "propose_event_cancel", event="stand-up", occurrence="2026-03-23", scope="series"
    )
    await approve(gclient, clock, series)
    assert stored(fake, STANDUP)["status"] == "cancelled"


async def test_an_unknown_event_lists_the_closest_google_events(gclient: Client[Any]) -> None:
    message = await call_error(
        gclient, "propose_event_move", event="team lunchh meeting room", start="2026-03-20T12:00"
    )
    assert message.startswith("No event matches 'team lunchh meeting room'. Closest: 'Team lunch'")


async def test_a_calendar_shared_read_only_cannot_be_changed(
    tmp_path: Path, google: tuple[FakeGoogleCalendar, str], clock: Clock
) -> None:
    fake, url = google
    fake.add_calendar(FakeCalendar("holidays@group.calendar.google.com", "Holidays", "reader"))
    fake.put(
        "holidays@group.calendar.google.com",
        {
            "id": "easter0001",
            "summary": "Easter Monday",
            "start": {"date": "2026-04-06"},
            "end": {"date": "2026-04-07"},
        },
    )
    config = settings(
        tmp_path / "d",
        credentials(fake, tmp_path / "c", url),
        url,
        ids=["primary", "holidays@group.calendar.google.com"],
    )
    async with Client(build_server(config, clock=clock)) as client:
        found = await call(client, "get_events", start="2026-04-06")
        assert [(e["title"], e["start"], e["end"], e["all_day"]) for e in found["events"]] == [
            ("Easter Monday", "2026-04-06", "2026-04-06", True),
            ("Stand-up", "2026-04-06T09:30:00+02:00", "2026-04-06T09:45:00+02:00", False),
        ]
        message = await call_error(client, "propose_event_cancel", event="easter monday")
    assert message.startswith(
        "The calendar 'holidays@group.calendar.google.com' is read-only: it cannot be changed "
        "here. Writable calendars: primary."
    )


async def test_an_unreachable_google_says_to_try_again_in_a_minute(
    tmp_path: Path, google: tuple[FakeGoogleCalendar, str], clock: Clock
) -> None:
    fake, url = google
    closed = f"http://127.0.0.1:{free_port()}"
    config = settings(tmp_path / "d", credentials(fake, tmp_path / "c", url), url)
    config.google_api_url = f"{closed}/calendar/v3/"
    async with Client(build_server(config, clock=clock)) as client:
        message = await call_error(client, "list_calendars")
    assert message == (
        "Google Calendar cannot be reached just now (network or DNS): try again in a minute."
    )


async def test_a_server_not_yet_authorised_says_who_must_run_auth_and_health_fails(
    google_settings: CalendarSettings, clock: Clock
) -> None:
    google_settings.token_file.unlink()
    server = build_server(google_settings, clock=clock)
    transport = httpx2.ASGITransport(app=server.http_app())
    async with (
        Client(server) as client,
        httpx2.AsyncClient(transport=transport, base_url="http://calendar") as http,
    ):
        message = await call_error(client, "list_calendars")
        health = (await http.get("/health")).json()
    assert message == (
        f"Google Calendar is not authorised yet (no {google_settings.token_file}): the operator "
        "must run `python -m mcp_calendar auth`."
    )
    assert health["checks"]["calendar"] == f"fail: {message}"


async def test_a_refusal_google_does_not_retry_reaches_the_model_as_one_line(
    gclient: Client[Any], google: tuple[FakeGoogleCalendar, str]
) -> None:
    fake, _ = google
    await call(gclient, "list_calendars")
    fake.fail_next(403, "forbidden")
    message = await call_error(gclient, "get_events", start="2026-03-17")
    assert message == "Google Calendar refused the request (403 forbidden)."


def _exceptions(fake: FakeGoogleCalendar) -> None:
    """What the user did to the stand-up in Google's own app: the 16 Mar one renamed, the
    30 Mar one moved to Tue 31 Mar 11:00 with Bo, the 6 Apr one deleted, the 13 Apr one
    renamed (at its own time)."""
    berlin = {"timeZone": "Europe/Berlin"}

    def at(day: str, clock: str) -> dict[str, str]:
        offset = "+01:00" if day < "2026-03-29" else "+02:00"
        return {"dateTime": f"{day}T{clock}:00{offset}", **berlin}

    for original, utc, title, start, end in [
        ("2026-03-16", "20260316T083000Z", "Stand-up (kick-off)", None, None),
        ("2026-03-30", "20260330T073000Z", "Stand-up with Bo", ("2026-03-31", "11:00"), "11:15"),
        ("2026-04-13", "20260413T073000Z", "Stand-up (retro)", None, None),
    ]:
        day, clock = start or (original, "09:30")
        fake.put(
            OWNER,
            {
                "id": f"{STANDUP}_{utc}",
                "recurringEventId": STANDUP,
                "originalStartTime": at(original, "09:30"),
                "summary": title,
                "start": at(day, clock),
                "end": at(day, end or "09:45"),
            },
        )
    fake.put(
        OWNER,
        {
            "id": f"{STANDUP}_20260406T073000Z",
            "recurringEventId": STANDUP,
            "originalStartTime": at("2026-04-06", "09:30"),
            "status": "cancelled",
            "start": at("2026-04-06", "09:30"),
            "end": at("2026-04-06", "09:45"),
        },
    )


async def _standups(client: Client[Any]) -> list[tuple[str, str]]:
    found = await call(client, "get_events", start="2026-03-16", end="2026-04-19")
    return [(e["title"], e["start"]) for e in found["events"] if e["title"].startswith("Stand")]


async def test_moving_the_whole_series_keeps_cancelled_dates_and_changed_occurrences(
    gclient: Client[Any], clock: Clock, google: tuple[FakeGoogleCalendar, str]
) -> None:
    _exceptions(google[0])
    proposal = await propose(
        gclient,
        "propose_event_move",
        event="stand-up",
        occurrence="2026-03-23",
        scope="series",
        start="2026-03-24T08:00",
    )
    await approve(gclient, clock, proposal)
    assert await _standups(gclient) == [
        ("Stand-up (kick-off)", "2026-03-17T08:00:00+01:00"),
        ("Stand-up", "2026-03-24T08:00:00+01:00"),
        ("Stand-up with Bo", "2026-03-31T11:00:00+02:00"),  # moved on its own: stays put
        ("Stand-up (retro)", "2026-04-14T08:00:00+02:00"),  # 7 Apr stays cancelled
    ]


async def test_moving_this_and_following_keeps_the_exceptions_on_both_sides(
    gclient: Client[Any], clock: Clock, google: tuple[FakeGoogleCalendar, str]
) -> None:
    _exceptions(google[0])
    proposal = await propose(
        gclient,
        "propose_event_move",
        event="stand-up",
        occurrence="2026-03-23",
        scope="following",
        start="2026-03-24T10:00",
    )
    await approve(gclient, clock, proposal)
    assert await _standups(gclient) == [
        ("Stand-up (kick-off)", "2026-03-16T09:30:00+01:00"),
        ("Stand-up", "2026-03-24T10:00:00+01:00"),
        ("Stand-up with Bo", "2026-03-31T11:00:00+02:00"),
        ("Stand-up (retro)", "2026-04-14T10:00:00+02:00"),  # 7 Apr stays cancelled
    ]


async def test_a_series_move_shifts_the_rdates_and_exdates_of_an_imported_series(
    gclient: Client[Any], clock: Clock, google: tuple[FakeGoogleCalendar, str]
) -> None:
    fake, _ = google
    # Recurrence lines as Google keeps them for an .ics imported into Google Calendar.
    fake.edit(
        OWNER,
        STANDUP,
        recurrence=[
            "RRULE:FREQ=WEEKLY;BYDAY=MO",
            "EXDATE;TZID=Europe/Berlin:20260406T093000",
            "RDATE;TZID=Europe/Berlin:20260325T093000",
        ],
    )
    before = await _standups(gclient)
    assert [start for _, start in before] == [
        "2026-03-16T09:30:00+01:00",
        "2026-03-23T09:30:00+01:00",
        "2026-03-25T09:30:00+01:00",
        "2026-03-30T09:30:00+02:00",
        "2026-04-13T09:30:00+02:00",
    ]
    proposal = await propose(
        gclient,
        "propose_event_move",
        event="stand-up",
        occurrence="2026-03-23",
        scope="series",
        start="2026-03-24T09:30",
    )
    await approve(gclient, clock, proposal)
    assert [start for _, start in await _standups(gclient)] == [
        "2026-03-17T09:30:00+01:00",
        "2026-03-24T09:30:00+01:00",
        "2026-03-26T09:30:00+01:00",
        "2026-03-31T09:30:00+02:00",
        "2026-04-14T09:30:00+02:00",
    ]


async def test_cancelling_this_and_following_keeps_the_changes_before_it(
    gclient: Client[Any], clock: Clock, google: tuple[FakeGoogleCalendar, str]
) -> None:
    _exceptions(google[0])
    proposal = await propose(
        gclient,
        "propose_event_cancel",
        event="stand-up",
        occurrence="2026-03-23",
        scope="following",
    )
    await approve(gclient, clock, proposal)
    assert await _standups(gclient) == [("Stand-up (kick-off)", "2026-03-16T09:30:00+01:00")]


async def test_an_all_day_series_moved_keeps_its_cancelled_and_renamed_days(
    gclient: Client[Any], clock: Clock, google: tuple[FakeGoogleCalendar, str]
) -> None:
    fake, _ = google
    fake.put(
        OWNER,
        {
            "id": "bins000001",
            "summary": "Bins out",
            "start": {"date": "2026-03-16"},
            "end": {"date": "2026-03-17"},
            "recurrence": ["RRULE:FREQ=WEEKLY;COUNT=6"],
        },
    )
    for day, change in [("20260330", {"status": "cancelled"}), ("20260406", {"summary": "Bins+"})]:
        iso = f"{day[:4]}-{day[4:6]}-{day[6:]}"
        following = (date.fromisoformat(iso) + timedelta(days=1)).isoformat()
        fake.put(
            OWNER,
            {
                "id": f"bins000001_{day}",
                "recurringEventId": "bins000001",
                "originalStartTime": {"date": iso},
                "summary": "Bins out",
                "start": {"date": iso},
                "end": {"date": following},
                **change,
            },
        )
    proposal = await propose(
        gclient,
        "propose_event_move",
        event="bins out",
        occurrence="2026-03-23",
        scope="following",
        start="2026-03-24",
    )
    await approve(gclient, clock, proposal)
    found = await call(gclient, "get_events", start="2026-03-16", end="2026-04-30")
    assert [(e["title"], e["start"]) for e in found["events"] if e["title"].startswith("Bins")] == [
        ("Bins out", "2026-03-16"),
        ("Bins out", "2026-03-24"),
        ("Bins+", "2026-04-07"),
        ("Bins out", "2026-04-14"),
        ("Bins out", "2026-04-21"),  # COUNT=6: five were left from 23 Mar, 31 Mar among them
    ]


async def test_a_series_of_listed_dates_only_moves_from_an_occurrence_on(
    gclient: Client[Any], clock: Clock, google: tuple[FakeGoogleCalendar, str]
) -> None:
    fake, _ = google
    fake.put(
        OWNER,
        {
            "id": "course0001",
            "summary": "First-aid course",
            "start": {"dateTime": "2026-03-19T18:00:00+01:00", "timeZone": "Europe/Berlin"},
            "end": {"dateTime": "2026-03-19T20:00:00+01:00", "timeZone": "Europe/Berlin"},
            "recurrence": ["RDATE;TZID=Europe/Berlin:20260326T180000,20260402T180000"],
        },
    )
    proposal = await propose(
        gclient,
        "propose_event_move",
        event="first-aid course",
        occurrence="2026-03-26",
        scope="following",
        start="2026-03-26T19:00",
    )
    await approve(gclient, clock, proposal)
    found = await call(gclient, "get_events", start="2026-03-16", end="2026-04-30")
    assert [e["start"] for e in found["events"] if e["title"] == "First-aid course"] == [
        "2026-03-19T18:00:00+01:00",
        "2026-03-26T19:00:00+01:00",
        "2026-04-02T19:00:00+02:00",
    ]


async def test_a_series_moved_by_a_whole_week_moves_its_exceptions_with_it(
    gclient: Client[Any], clock: Clock, google: tuple[FakeGoogleCalendar, str]
) -> None:
    _exceptions(google[0])
    proposal = await propose(
        gclient,
        "propose_event_move",
        event="stand-up",
        occurrence="2026-03-23",
        scope="series",
        start="2026-03-30T09:30",
    )
    await approve(gclient, clock, proposal)
    assert await _standups(gclient) == [
        ("Stand-up (kick-off)", "2026-03-23T09:30:00+01:00"),
        ("Stand-up", "2026-03-30T09:30:00+02:00"),
        ("Stand-up with Bo", "2026-03-31T11:00:00+02:00"),  # now the 6 Apr one, moved
    ]  # 13 Apr (was 6 Apr) stays cancelled; the retro moved to 20 Apr
