"""Read tools: events of a day or a range in the user's zone, search, free time."""

import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import httpx2
import icalendar
import pytest
import recurring_ical_events  # type: ignore[import-untyped]
from fastmcp import Client
from icalendar import Calendar, Event

from calendar_server.calls import SYDNEY, add, approve, day, mint, propose
from fakes.clock import Clock
from fakes.tool_calls import call, call_error
from mcp_calendar import edits
from mcp_calendar.expansion import Budget, Skipped, expand
from mcp_calendar.ics_files import import_file
from mcp_calendar.local import row
from mcp_calendar.server import build_server
from mcp_calendar.settings import CalendarSettings
from mcp_calendar.store import CalendarStore, StoredCalendar

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


def _calendar(*events: str) -> bytes:
    body = "".join(f"BEGIN:VEVENT\r\n{event}END:VEVENT\r\n" for event in events)
    return (
        f"BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\n{body}END:VCALENDAR\r\n"
    ).encode()


async def _store_as_imported(settings: CalendarSettings, text: bytes) -> None:
    """Events written to the database as the import of the base commit wrote them (row by
    row, without import's checks): a database keeps what an older import let in."""
    parsed = Calendar.from_ical(text)
    by_uid: dict[str, list[Event]] = {}
    for component in parsed.walk("VEVENT"):
        by_uid.setdefault(str(component["UID"]), []).append(cast(Event, component))
    store = CalendarStore(settings.db_path, max_bytes=settings.max_db_bytes)
    store.verify()
    try:
        await store.import_rows(
            StoredCalendar("personal", "Personal", writable=True),
            [row("personal", components) for components in by_uid.values()],
            at=0,
        )
    finally:
        await store.aclose()


# RDATE;VALUE=TIME: a time of day without a date. icalendar parses it, dateutil cannot sort
# it among the series' datetimes. The three events of icalendar's own test calendar
# multiple_timezones.ics (floating, UTC and zoned) are the ones the issue names.
VALUE_TIME = Path(icalendar.__file__).parent / "tests" / "calendars" / "multiple_timezones.ics"
RIE_CALENDARS = Path(recurring_ical_events.__file__).parent / "test" / "calendars"
BAD_RDATE = (
    "UID:bad-rdate@test\r\nSUMMARY:Broken\r\nDTSTART;TZID=Europe/Berlin:20260302T090000\r\n"
    "DTEND;TZID=Europe/Berlin:20260302T093000\r\nRRULE:FREQ=WEEKLY\r\n"
    "RDATE;VALUE=TIME:100000\r\n"
)


async def test_an_event_that_cannot_be_expanded_is_skipped_logged_once_and_counted_in_health(
    settings: CalendarSettings, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    await _store_as_imported(settings, VALUE_TIME.read_bytes())
    server = build_server(settings, clock=clock)
    transport = httpx2.ASGITransport(app=server.http_app())
    async with (
        Client(server) as client,
        httpx2.AsyncClient(transport=transport, base_url="http://calendar") as http,
    ):
        before = (await http.get("/health")).json()
        await add(client, clock, title="Dentist", start="2026-03-17T15:00")
        await add(client, clock, title="Checkup", start="2027-03-16T15:00")
        with caplog.at_level(logging.WARNING, logger="mcp_calendar"):
            this_year = await day(client, "2026-03-17")
            next_year = await day(client, "2027-03-16")
            again = await day(client, "2026-03-17")
        after = await http.get("/health")

    assert (
        this_year
        == again
        == [("Dentist", "2026-03-17T15:00:00+01:00", "2026-03-17T16:00:00+01:00")]
    )
    assert next_year == [("Checkup", "2027-03-16T15:00:00+01:00", "2027-03-16T16:00:00+01:00")]
    skipped = sorted(r.getMessage() for r in caplog.records if "test-vtime" in r.getMessage())
    assert [line.split()[1] for line in skipped] == [
        "test-vtime-floating",
        "test-vtime-named-timezone",
        "test-vtime-utc",
    ]
    assert all("cannot be expanded" in line and "\n" not in line for line in skipped)
    assert "details" not in before
    assert after.status_code == 200
    assert after.json()["checks"]["calendar"] == "ok"
    assert after.json()["details"] == {
        "calendar": "reads skip 3 events that cannot be expanded (named in the log)"
    }


async def test_a_search_and_free_time_skip_the_event_that_cannot_be_expanded(
    client: Client[Any], clock: Clock, settings: CalendarSettings
) -> None:
    await _store_as_imported(settings, _calendar(BAD_RDATE))
    await add(client, clock, title="Dentist", start="2026-03-17T15:00")

    found = await call(client, "search_events", query="dentist")
    free = await call(
        client,
        "find_free_time",
        duration_minutes=60,
        start="2026-03-17",
        work_start="15:00",
        work_end="17:00",
    )

    assert [e["title"] for e in found["events"]] == ["Dentist"]
    assert [slot["when"] for slot in free["slots"]] == ["Tue 17 Mar 2026, 16:00–17:00"]


async def test_of_two_changes_to_one_occurrence_the_highest_sequence_wins(
    client: Client[Any], settings: CalendarSettings
) -> None:
    # An organizer's update and its older version in one file (Google and Exchange send a
    # new SEQUENCE with each change; a calendar exported after both keeps both).
    text = _calendar(
        "UID:sync@test\r\nSUMMARY:Sync\r\nDTSTART;TZID=Europe/Berlin:20260316T100000\r\n"
        "DTEND;TZID=Europe/Berlin:20260316T110000\r\nRRULE:FREQ=WEEKLY;COUNT=3\r\n",
        "UID:sync@test\r\nSUMMARY:Sync (moved again)\r\nSEQUENCE:2\r\n"
        "RECURRENCE-ID;TZID=Europe/Berlin:20260323T100000\r\n"
        "DTSTART;TZID=Europe/Berlin:20260323T140000\r\n"
        "DTEND;TZID=Europe/Berlin:20260323T150000\r\n",
        "UID:sync@test\r\nSUMMARY:Sync (moved)\r\nSEQUENCE:1\r\n"
        "RECURRENCE-ID;TZID=Europe/Berlin:20260323T100000\r\n"
        "DTSTART;TZID=Europe/Berlin:20260323T120000\r\n"
        "DTEND;TZID=Europe/Berlin:20260323T130000\r\n",
    )
    await import_file(settings, text, "personal", writable=True, at=0)

    assert await day(client, "2026-03-23") == [
        ("Sync (moved again)", "2026-03-23T14:00:00+01:00", "2026-03-23T15:00:00+01:00")
    ]


def test_deduplicate_keeps_the_highest_sequence_of_each_recurrence_id_in_order() -> None:
    master, low, high, other = (
        cast(Event, Event.from_ical(f"BEGIN:VEVENT\r\nUID:u\r\n{extra}END:VEVENT\r\n"))
        for extra in (
            "DTSTART:20260316T100000Z\r\nRRULE:FREQ=DAILY\r\n",
            "SEQUENCE:1\r\nRECURRENCE-ID:20260317T100000Z\r\nDTSTART:20260317T120000Z\r\n",
            "SEQUENCE:3\r\nRECURRENCE-ID;TZID=Europe/Berlin:20260317T110000\r\n"
            "DTSTART:20260317T140000Z\r\n",
            "RECURRENCE-ID:20260318T100000Z\r\nDTSTART:20260318T120000Z\r\n",
        )
    )

    assert edits.deduplicate([master, low, other, high]) == [master, high, other]
    assert edits.deduplicate([master, high, other, low]) == [master, high, other]


@pytest.mark.parametrize(
    ("end", "producer"),
    [
        # calendarlabs.com's holiday calendars (recurring-ical-events' Germany_Holidays.ics)
        ("DTEND:20260320\r\n", "an end equal to the start"),
        ("DURATION:P0D\r\n", "a zero duration"),
    ],
)
async def test_an_all_day_event_never_ends_before_it_starts(
    client: Client[Any], settings: CalendarSettings, end: str, producer: str
) -> None:
    text = _calendar(f"UID:day@test\r\nSUMMARY:Holiday\r\nDTSTART:20260320\r\n{end}")
    await import_file(settings, text, "personal", writable=True, at=0)

    [shown] = (await call(client, "get_events", start="2026-03-20"))["events"]

    assert (shown["start"], shown["end"], shown["when"]) == (
        "2026-03-20",
        "2026-03-20",
        "Fri 20 Mar 2026 (all day)",
    ), producer
    assert await day(client, "2026-03-21") == []


@dataclass(frozen=True)
class DavObject:
    """An event as a CalDAV backend names it: its version is the object's ETag."""

    uid: str
    calendar: str
    version: str


def test_expand_gives_what_it_can_to_any_backend_and_counts_what_it_cannot() -> None:
    skipped = Skipped()
    good, bad = (
        [cast(Event, c) for c in Calendar.from_ical(_calendar(text)).walk("VEVENT")]
        for text in (
            "UID:ok@test\r\nSUMMARY:Fine\r\nDTSTART;TZID=Europe/Berlin:20260302T090000\r\n"
            "DTEND;TZID=Europe/Berlin:20260302T093000\r\nRRULE:FREQ=WEEKLY;COUNT=2\r\n",
            BAD_RDATE,
        )
    )
    start, end = datetime(2026, 3, 1, tzinfo=UTC), datetime(2026, 4, 1, tzinfo=UTC)

    budget = Budget(start, end)
    fine = expand(
        DavObject("ok@test", "work", '"e1"'), good, start, end, skipped=skipped, budget=budget
    )
    broken = expand(
        DavObject("bad@test", "work", '"e2"'), bad, start, end, skipped=skipped, budget=budget
    )

    assert [(o.title, o.start.isoformat()) for o in fine] == [
        ("Fine", "2026-03-02T09:00:00+01:00"),
        ("Fine", "2026-03-09T09:00:00+01:00"),
    ]
    assert broken == []
    assert skipped.detail() == "reads skip 1 event that cannot be expanded (named in the log)"


# Two RRULE lines (RFC 5545 allows several): recurring-ical-events' multiple_rrule.ics.
TWO_RULES = RIE_CALENDARS / "multiple_rrule.ics"


async def test_a_series_of_two_rules_shows_both_and_moves_one_occurrence_at_a_time(
    client: Client[Any], clock: Clock, settings: CalendarSettings
) -> None:
    await _store_as_imported(settings, TWO_RULES.read_bytes())

    thursday = await day(client, "2023-01-19", timezone="Europe/London")
    second_monday = await day(client, "2023-02-13", timezone="Europe/London")
    [shown] = (await call(client, "get_events", start="2023-02-13"))["events"]
    as_series = await propose(
        client,
        "propose_event_move",
        event="my repeating event",
        occurrence="2023-02-16T10:00",
        timezone="Europe/London",
        scope="series",
        start="2023-02-17T10:00",
    )
    refused = await call_error(
        client,
        "confirm_event_move",
        payload=as_series["payload"],
        approval=mint(clock, "event_move", as_series["payload"]),
    )
    await approve(
        client,
        clock,
        await propose(
            client,
            "propose_event_move",
            event="my repeating event",
            occurrence="2023-02-16T10:00",
            timezone="Europe/London",
            scope="this",
            start="2023-02-17T10:00",
        ),
    )

    event = "My repeating event"
    assert thursday == [(event, "2023-01-19T10:00:00+00:00", "2023-01-19T12:00:00+00:00")]
    assert second_monday == [(event, "2023-02-13T10:00:00+00:00", "2023-02-13T12:00:00+00:00")]
    assert shown["rule"] == "FREQ=WEEKLY;COUNT=20;BYDAY=TH and FREQ=MONTHLY;COUNT=2;BYDAY=2MO"
    assert refused == (
        "This series repeats by more than one rule, so it cannot be split or moved as a "
        "whole: move or cancel one occurrence, or cancel the series and add it again."
    )
    assert await day(client, "2023-02-16", end="2023-02-17", timezone="Europe/London") == [
        (event, "2023-02-17T10:00:00+00:00", "2023-02-17T12:00:00+00:00")
    ]


async def test_a_confirm_after_the_event_became_unreadable_says_it_is_gone(
    client: Client[Any], clock: Clock, settings: CalendarSettings
) -> None:
    readable = BAD_RDATE.replace("RDATE;VALUE=TIME:100000\r\n", "")
    await _store_as_imported(settings, _calendar(readable))
    proposal = await propose(
        client,
        "propose_event_move",
        event="broken",
        occurrence="2026-03-23",
        scope="this",
        start="2026-03-23T11:00",
    )
    await _store_as_imported(settings, _calendar(BAD_RDATE))  # a newer import, unreadable

    refused = await call_error(
        client,
        "confirm_event_move",
        payload=proposal["payload"],
        approval=mint(clock, "event_move", proposal["payload"]),
    )

    assert refused == (
        "“Broken” (Mon 23 Mar 2026, 09:00–09:30) is no longer in the calendar. Nothing was "
        "changed: propose it again if it should still happen."
    )


async def test_health_stops_counting_an_event_once_its_new_version_reads(
    settings: CalendarSettings, clock: Clock
) -> None:
    readable = BAD_RDATE.replace("RDATE;VALUE=TIME:100000\r\n", "")
    await _store_as_imported(settings, _calendar(BAD_RDATE))
    server = build_server(settings, clock=clock)
    transport = httpx2.ASGITransport(app=server.http_app())
    async with (
        Client(server) as client,
        httpx2.AsyncClient(transport=transport, base_url="http://calendar") as http,
    ):
        broken = await day(client, "2026-03-16")
        counted = (await http.get("/health")).json()
        await _store_as_imported(settings, _calendar(readable))  # the fixed export, imported
        fixed = await day(client, "2026-03-16")
        after = (await http.get("/health")).json()

    assert broken == []
    assert counted["details"]["calendar"].startswith("reads skip 1 event ")
    assert fixed == [("Broken", "2026-03-16T09:00:00+01:00", "2026-03-16T09:30:00+01:00")]
    assert "details" not in after
