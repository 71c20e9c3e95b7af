"""Read tools: events of a day or a range in the user's zone, search, free time."""

from typing import Any

import pytest
from fastmcp import Client

from calendar_server.calls import SYDNEY, add, day
from fakes.clock import Clock
from fakes.tool_calls import call, call_error
from mcp_calendar.ics import import_file
from mcp_calendar.settings import CalendarSettings

pytestmark = pytest.mark.anyio


async def test_the_calendars_are_listed_with_the_default_and_the_users_zone(
    client: Client[Any],
) -> None:
    assert await call(client, "list_calendars") == {
        "calendars": [{"id": "personal", "name": "Personal", "writable": True}],
        "default": "personal",
        "timezone": "Europe/Berlin",
    }


async def test_a_day_shows_its_events_in_local_time_with_the_zone_named(
    client: Client[Any], clock: Clock
) -> None:
    await add(client, clock, title="Dentist", start="2026-03-17T15:00", duration_minutes=45)
    await add(client, clock, title="Lunch", start="2026-03-17T12:00")
    await add(client, clock, title="Elsewhere", start="2026-03-18T12:00")

    found = await call(client, "get_events", start="tomorrow")

    assert (found["timezone"], found["start"], found["end"]) == (
        "Europe/Berlin",
        "2026-03-17T00:00:00+01:00",
        "2026-03-18T00:00:00+01:00",
    )
    assert [(e["title"], e["start"], e["end"], e["when"]) for e in found["events"]] == [
        (
            "Lunch",
            "2026-03-17T12:00:00+01:00",
            "2026-03-17T13:00:00+01:00",
            "Tue 17 Mar 2026, 12:00–13:00",
        ),
        (
            "Dentist",
            "2026-03-17T15:00:00+01:00",
            "2026-03-17T15:45:00+01:00",
            "Tue 17 Mar 2026, 15:00–15:45",
        ),
    ]


async def test_the_same_events_read_in_another_zone_are_shown_in_that_zone(
    client: Client[Any], clock: Clock
) -> None:
    await add(client, clock, title="Call", start="2026-03-17T09:00")

    found = await call(client, "get_events", start="2026-03-17T00:00+01:00", timezone=SYDNEY)

    assert found["timezone"] == SYDNEY
    assert [(e["start"], e["event_timezone"]) for e in found["events"]] == [
        ("2026-03-17T19:00:00+11:00", "Europe/Berlin")
    ]


async def test_an_all_day_event_spanning_days_is_dates_on_every_day_it_covers(
    client: Client[Any], clock: Clock
) -> None:
    added = await add(client, clock, title="Trip", start="2026-03-20", end="2026-03-22")

    days = [await day(client, d) for d in ("2026-03-19", "2026-03-20", "2026-03-22", "2026-03-23")]

    trip = ("Trip", "2026-03-20", "2026-03-22")
    assert days == [[], [trip], [trip], []]
    assert (
        added["message"]
        == "Added “Trip” Fri 20 Mar – Sun 22 Mar 2026 (all day) (Europe/Berlin) to personal"
    )
    [shown] = (await call(client, "get_events", start="2026-03-21"))["events"]
    assert (shown["all_day"], shown["when"]) == (True, "Fri 20 Mar – Sun 22 Mar 2026 (all day)")


async def test_an_empty_day_says_so(client: Client[Any]) -> None:
    found = await call(client, "get_events", start="2026-03-17")

    assert found["events"] == []
    assert found["message"] == (
        "Nothing in the calendar from Tue 17 Mar 2026 00:00 to Tue 17 Mar 2026 23:59 "
        "(Europe/Berlin)."
    )


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"start": "next tuesday"}, "'next tuesday' is not a time I can read: use YYYY-MM-DD"),
        ({"start": "2026-03-18", "end": "2026-03-17"}, "The end (2026-03-17) must come after"),
        ({"start": "2026-03-01", "end": "2026-08-01"}, "Ask for at most 93 days at once."),
        ({"start": "2026-03-29T02:30"}, "2026-03-29 02:30 does not exist in Europe/Berlin"),
        ({"start": "2026-03-17", "timezone": "Mars/Olympus"}, "'Mars/Olympus' is not an IANA"),
        ({"start": "2026-03-17", "calendar": "work"}, "There is no calendar 'work'. Calendars: "),
    ],
)
async def test_times_that_cannot_be_read_get_one_line_saying_what_to_give(
    client: Client[Any], arguments: dict[str, str], message: str
) -> None:
    assert message in await call_error(client, "get_events", **arguments)


async def test_search_finds_titles_with_typos_and_shows_a_series_once(
    client: Client[Any], clock: Clock
) -> None:
    await add(
        client,
        clock,
        title="Team sync",
        start="2026-03-16T10:00",
        recurrence="FREQ=WEEKLY;BYDAY=MO",
    )
    await add(client, clock, title="Dentist", start="2026-04-02T15:00", location="Main St 4")
    clock.advance(3 * 3600)  # 12:00: today's sync is over, the next one is shown

    synced = await call(client, "search_events", query="tem sinc")
    dentist = await call(client, "search_events", query="main st")
    nothing = await call(client, "search_events", query="yoga")

    assert [(e["title"], e["start"], e["recurring"]) for e in synced["events"]] == [
        ("Team sync", "2026-03-23T10:00:00+01:00", True)
    ]
    assert [e["title"] for e in dentist["events"]] == ["Dentist"]
    assert nothing["events"] == []
    assert nothing["message"].startswith("No event matches 'yoga' from ")


async def test_free_time_is_the_working_hours_no_busy_event_covers(
    client: Client[Any], clock: Clock
) -> None:
    await add(client, clock, title="Standup", start="2026-03-17T09:00", duration_minutes=30)
    await add(client, clock, title="Lunch", start="2026-03-17T12:00")
    await add(client, clock, title="Birthday", start="2026-03-17")  # all day: not busy

    free = await call(
        client, "find_free_time", duration_minutes=90, start="2026-03-17", end="2026-03-18"
    )
    weekend = await call(client, "find_free_time", duration_minutes=60, start="2026-03-21")

    assert free["working_hours"] == "09:00–17:00"
    assert [slot["when"] for slot in free["slots"]] == [
        "Tue 17 Mar 2026, 09:30–12:00",
        "Tue 17 Mar 2026, 13:00–17:00",
        "Wed 18 Mar 2026, 09:00–17:00",
    ]
    assert weekend["slots"] == []
    assert weekend["message"] == (
        "No free 60 minutes from Sat 21 Mar 2026 00:00 to Sat 21 Mar 2026 23:59 (Europe/Berlin)."
    )


async def test_free_time_takes_its_own_hours_and_weekends_when_asked(
    client: Client[Any],
) -> None:
    free = await call(
        client,
        "find_free_time",
        duration_minutes=60,
        start="2026-03-21",
        work_start="10:00",
        work_end="12:00",
        include_weekends=True,
    )
    bad = await call_error(
        client, "find_free_time", duration_minutes=60, start="2026-03-21", work_start="noon"
    )

    assert [slot["when"] for slot in free["slots"]] == ["Sat 21 Mar 2026, 10:00–12:00"]
    assert "are not times: use HH:MM" in bad


async def test_a_range_with_too_many_events_shows_the_first_and_says_so(
    client: Client[Any], settings: CalendarSettings
) -> None:
    daily = (
        b"BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nBEGIN:VEVENT\r\n"
        b"UID:meds@test\r\nSUMMARY:Medication\r\nDTSTART;TZID=Europe/Berlin:20260301T080000\r\n"
        b"DURATION:PT5M\r\nRRULE:FREQ=HOURLY;INTERVAL=2\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
    )
    await import_file(settings, daily, "personal", writable=True, at=0)

    found = await call(client, "get_events", start="2026-03-01", end="2026-03-31")

    assert len(found["events"]) == 200
    assert found["events"][0]["start"] == "2026-03-01T08:00:00+01:00"
    assert found["message"] == (
        "368 events in this range; the first 200 are shown. "
        "Ask for a shorter range to see the rest."
    )
