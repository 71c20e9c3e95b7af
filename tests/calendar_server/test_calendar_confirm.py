"""Confirm tools: a change happens once, only with its token, and never to an event that
changed since it was proposed; scopes of recurring events."""

import sqlite3
from contextlib import closing
from datetime import UTC, date, datetime, timedelta, timezone, tzinfo
from pathlib import Path
from typing import Any, cast
from zoneinfo import ZoneInfo

import dateutil.tz
import pytest
from fastmcp import Client
from icalendar import Event

from calendar_server.calls import add, approve, day, mint, propose
from fakes.clock import Clock
from fakes.tool_calls import call, call_error
from mcp_calendar import edits
from mcp_calendar.ics_files import export_calendar, import_file
from mcp_calendar.server import build_server
from mcp_calendar.settings import CalendarSettings

pytestmark = pytest.mark.anyio

WEEKLY = {"title": "Team sync", "start": "2026-03-16T10:00", "recurrence": "FREQ=WEEKLY;BYDAY=MO"}


def rows(settings: CalendarSettings) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(settings.db_path)) as db:
        return (
            db.execute("SELECT * FROM events ORDER BY uid").fetchall()
            + db.execute("SELECT * FROM components ORDER BY uid, rid").fetchall()
        )


async def starts(client: Client[Any], start: str, end: str) -> list[str]:
    return [s for _, s, _ in await day(client, start, end=end)]


async def test_an_approved_add_is_performed_once_and_a_replay_answers_the_first_result(
    client: Client[Any], clock: Clock, settings: CalendarSettings
) -> None:
    proposal = await propose(client, "propose_event_add", title="Dentist", start="2026-03-19T15:00")

    first = await approve(client, clock, proposal, action_id="act_0123456789ab")
    replay = await approve(client, clock, proposal, action_id="act_0123456789ab")

    assert first == {
        "message": "Added “Dentist” Thu 19 Mar 2026, 15:00–16:00 (Europe/Berlin) to personal",
        "replayed": False,
        "event_id": proposal["payload"]["uid"],
    }
    assert replay == {**first, "replayed": True}
    assert await day(client, "2026-03-19") == [
        ("Dentist", "2026-03-19T15:00:00+01:00", "2026-03-19T16:00:00+01:00")
    ]


async def test_a_confirm_without_a_token_for_exactly_this_change_changes_nothing(
    client: Client[Any], clock: Clock, settings: CalendarSettings
) -> None:
    await add(client, clock, title="Dentist", start="2026-03-19T15:00")
    proposal = await propose(client, "propose_event_cancel", event="dentist")
    before = rows(settings)
    other = {**proposal["payload"], "title": "Something else"}

    none = await call_error(
        client, "confirm_event_cancel", payload=proposal["payload"], approval=""
    )
    altered = await call_error(
        client,
        "confirm_event_cancel",
        payload=other,
        approval=mint(clock, "event_cancel", proposal["payload"]),
    )
    wrong_kind = await call_error(
        client,
        "confirm_event_move",
        payload=proposal["payload"],
        approval=mint(clock, "event_cancel", proposal["payload"]),
    )
    other_agent = await call_error(
        client,
        "confirm_event_cancel",
        payload=proposal["payload"],
        approval=mint(clock, "event_cancel", proposal["payload"], agent="bob"),
    )

    assert none.startswith("This change needs an approval token from a user's Confirm tap")
    assert altered.startswith("The approval token does not match this change")
    assert wrong_kind.startswith("The approval token does not match this change")
    assert other_agent.startswith("The approval token does not match this change")
    assert proposal["payload"]["agent"] != "bob"
    assert rows(settings) == before


async def test_a_move_of_an_event_changed_since_the_proposal_touches_nothing_and_says_what_changed(
    client: Client[Any], clock: Clock, settings: CalendarSettings
) -> None:
    await add(client, clock, title="Dentist", start="2026-03-19T15:00")
    stale = await propose(client, "propose_event_move", event="dentist", start="2026-03-20T09:00")
    await approve(
        client,
        clock,
        await propose(client, "propose_event_move", event="dentist", start="2026-03-19T17:00"),
    )
    before = rows(settings)

    error = await call_error(
        client,
        "confirm_event_move",
        payload=stale["payload"],
        approval=mint(clock, "event_move", stale["payload"]),
    )

    assert error == (
        "“Dentist” changed since it was proposed: it is now Thu 19 Mar 2026, 17:00–18:00 "
        "(was Thu 19 Mar 2026, 15:00–16:00). Nothing was changed: propose it again if it "
        "should still happen."
    )
    assert rows(settings) == before


async def test_a_cancel_of_an_event_deleted_since_the_proposal_says_it_is_gone(
    client: Client[Any], clock: Clock
) -> None:
    await add(client, clock, title="Dentist", start="2026-03-19T15:00")
    first = await propose(client, "propose_event_cancel", event="dentist")
    second = await propose(client, "propose_event_cancel", event="dentist")
    done = await approve(client, clock, first)

    error = await call_error(
        client,
        "confirm_event_cancel",
        payload=second["payload"],
        approval=mint(clock, "event_cancel", second["payload"]),
    )

    assert done["message"] == "Cancelled “Dentist” Thu 19 Mar 2026, 15:00–16:00 (Europe/Berlin)"
    assert error == (
        "“Dentist” (Thu 19 Mar 2026, 15:00–16:00) is no longer in the calendar. "
        "Nothing was changed: propose it again if it should still happen."
    )
    assert await day(client, "2026-03-19") == []


async def test_a_renamed_event_is_named_in_the_refusal(
    client: Client[Any], clock: Clock, settings: CalendarSettings
) -> None:
    await import_file(
        settings, _ics("dentist-1", "Dentist", "20260319T150000"), "personal", writable=True, at=0
    )
    proposal = await propose(client, "propose_event_cancel", event="dentist")
    await import_file(
        settings,
        _ics("dentist-1", "Dentist (Dr Weber)", "20260319T150000"),
        "personal",
        writable=True,
        at=0,
    )

    error = await call_error(
        client,
        "confirm_event_cancel",
        payload=proposal["payload"],
        approval=mint(clock, "event_cancel", proposal["payload"]),
    )

    assert error.startswith(
        "“Dentist” changed since it was proposed: it is now called “Dentist (Dr Weber)”."
    )


async def test_cancelling_one_occurrence_of_a_series_leaves_the_others(
    client: Client[Any], clock: Clock
) -> None:
    await add(client, clock, **WEEKLY)

    proposal = await propose(
        client, "propose_event_cancel", event="team sync", occurrence="2026-03-23"
    )
    await approve(client, clock, proposal)

    assert proposal["summary"] == (
        "Cancel “Team sync” (this occurrence only) Mon 23 Mar 2026, 10:00–11:00 (Europe/Berlin)"
    )
    assert await starts(client, "2026-03-16", "2026-04-06") == [
        "2026-03-16T10:00:00+01:00",
        "2026-03-30T10:00:00+02:00",
        "2026-04-06T10:00:00+02:00",
    ]


async def test_cancelling_this_and_following_ends_the_series_before_it(
    client: Client[Any], clock: Clock
) -> None:
    await add(client, clock, **WEEKLY)

    await approve(
        client,
        clock,
        await propose(
            client,
            "propose_event_cancel",
            event="team sync",
            occurrence="2026-03-30",
            scope="following",
        ),
    )

    assert await starts(client, "2026-03-16", "2026-04-30") == [
        "2026-03-16T10:00:00+01:00",
        "2026-03-23T10:00:00+01:00",
    ]


async def test_cancelling_the_series_removes_every_occurrence(
    client: Client[Any], clock: Clock
) -> None:
    await add(client, clock, **WEEKLY)

    await approve(
        client,
        clock,
        await propose(client, "propose_event_cancel", event="team sync", scope="series"),
    )

    assert await starts(client, "2026-03-01", "2026-05-30") == []


async def test_moving_one_occurrence_leaves_the_series_and_is_found_by_its_original_day(
    client: Client[Any], clock: Clock
) -> None:
    await add(client, clock, **WEEKLY)

    await approve(
        client,
        clock,
        await propose(
            client,
            "propose_event_move",
            event="team sync",
            occurrence="2026-03-23",
            start="2026-03-24T14:00",
        ),
    )
    again = await propose(
        client,
        "propose_event_move",
        event="team sync",
        occurrence="2026-03-24",
        start="2026-03-24T15:00",
    )

    assert await starts(client, "2026-03-16", "2026-03-30") == [
        "2026-03-16T10:00:00+01:00",
        "2026-03-24T14:00:00+01:00",
        "2026-03-30T10:00:00+02:00",
    ]
    assert again["payload"]["occurrence"] == "2026-03-23T10:00:00+01:00"


async def test_moving_this_and_following_splits_the_series_at_that_occurrence(
    client: Client[Any], clock: Clock
) -> None:
    await add(client, clock, **WEEKLY)

    proposal = await propose(
        client,
        "propose_event_move",
        event="team sync",
        occurrence="2026-03-30",
        scope="following",
        start="2026-03-31T11:00",
    )
    await approve(client, clock, proposal)

    assert "(this and every later occurrence)" in proposal["summary"]
    shown = (await call(client, "get_events", start="2026-03-16", end="2026-04-08"))["events"]
    assert [(e["start"], e["rule"]) for e in shown] == [
        ("2026-03-16T10:00:00+01:00", "FREQ=WEEKLY;UNTIL=20260330T075959Z;BYDAY=MO"),
        ("2026-03-23T10:00:00+01:00", "FREQ=WEEKLY;UNTIL=20260330T075959Z;BYDAY=MO"),
        ("2026-03-31T11:00:00+02:00", "FREQ=WEEKLY;BYDAY=TU"),
        ("2026-04-07T11:00:00+02:00", "FREQ=WEEKLY;BYDAY=TU"),
    ]


async def test_a_counted_series_split_keeps_its_number_of_occurrences(
    client: Client[Any], clock: Clock
) -> None:
    await add(client, clock, **{**WEEKLY, "recurrence": "FREQ=WEEKLY;COUNT=4"})

    await approve(
        client,
        clock,
        await propose(
            client,
            "propose_event_move",
            event="team sync",
            occurrence="2026-03-30",
            scope="following",
            start="2026-03-30T12:00",
        ),
    )

    assert await starts(client, "2026-03-16", "2026-05-30") == [
        "2026-03-16T10:00:00+01:00",
        "2026-03-23T10:00:00+01:00",
        "2026-03-30T12:00:00+02:00",
        "2026-04-06T12:00:00+02:00",
    ]


async def test_moving_the_series_shifts_every_occurrence_and_keeps_its_exceptions(
    client: Client[Any], clock: Clock
) -> None:
    await add(client, clock, **WEEKLY)
    await approve(
        client,
        clock,
        await propose(client, "propose_event_cancel", event="team sync", occurrence="2026-03-30"),
    )

    await approve(
        client,
        clock,
        await propose(
            client,
            "propose_event_move",
            event="team sync",
            occurrence="2026-03-23",
            scope="series",
            start="2026-03-24T09:30",
        ),
    )

    assert await starts(client, "2026-03-16", "2026-04-08") == [
        "2026-03-17T09:30:00+01:00",
        "2026-03-24T09:30:00+01:00",
        "2026-04-07T09:30:00+02:00",
    ]


def _ics(uid: str, title: str, start: str) -> bytes:
    return (
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nBEGIN:VEVENT\r\n"
        f"UID:{uid}\r\nSUMMARY:{title}\r\nDTSTART;TZID=Europe/Berlin:{start}\r\n"
        "DURATION:PT1H\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
    ).encode()


async def test_a_yearly_all_day_series_takes_scopes_in_whole_days(
    client: Client[Any], clock: Clock
) -> None:
    await add(client, clock, title="Anna's birthday", start="2026-03-20", recurrence="FREQ=YEARLY")

    await approve(
        client,
        clock,
        await propose(client, "propose_event_cancel", event="anna", occurrence="2027-03-20"),
    )
    moved = await propose(
        client,
        "propose_event_move",
        event="anna",
        occurrence="2028-03-20",
        scope="following",
        start="2028-03-21",
    )
    await approve(client, clock, moved)

    seen = [
        await day(client, f"{year}-03-{d}") for year in (2026, 2027, 2028, 2029) for d in (20, 21)
    ]
    birthday = "Anna's birthday"
    assert moved["summary"] == (
        f"Move “{birthday}” (this and every later occurrence) from Mon 20 Mar 2028 (all day) "
        "to Tue 21 Mar 2028 (all day) (Europe/Berlin)"
    )
    assert seen == [
        [(birthday, "2026-03-20", "2026-03-20")],
        [],
        [],
        [],
        [],
        [(birthday, "2028-03-21", "2028-03-21")],
        [],
        [(birthday, "2029-03-21", "2029-03-21")],
    ]


async def test_a_replayed_approval_answers_its_first_result_even_after_later_changes(
    client: Client[Any], clock: Clock
) -> None:
    await add(client, clock, title="Dentist", start="2026-03-19T15:00")
    proposal = await propose(
        client, "propose_event_move", event="dentist", start="2026-03-19T16:00"
    )
    first = await approve(client, clock, proposal, action_id="act_00000000beef")
    await approve(
        client,
        clock,
        await propose(client, "propose_event_move", event="dentist", start="2026-03-19T18:00"),
    )

    replay = await approve(client, clock, proposal, action_id="act_00000000beef")

    assert replay == {**first, "replayed": True}
    assert await day(client, "2026-03-19") == [
        ("Dentist", "2026-03-19T18:00:00+01:00", "2026-03-19T19:00:00+01:00")
    ]


async def test_a_calendar_made_read_only_after_the_proposal_is_not_changed(
    client: Client[Any], clock: Clock, settings: CalendarSettings
) -> None:
    await import_file(
        settings, _ics("dentist-1", "Dentist", "20260319T150000"), "family", writable=True, at=0
    )
    proposal = await propose(client, "propose_event_cancel", event="dentist")
    await import_file(
        settings, _ics("dentist-1", "Dentist", "20260319T150000"), "family", writable=False, at=0
    )

    error = await call_error(
        client,
        "confirm_event_cancel",
        payload=proposal["payload"],
        approval=mint(clock, "event_cancel", proposal["payload"]),
    )

    assert error.startswith("The calendar 'family' is read-only: nothing was changed.")
    assert [title for title, _, _ in await day(client, "2026-03-19")] == ["Dentist"]


async def test_moving_a_moved_occurrence_and_the_following_ones_puts_it_where_asked(
    client: Client[Any], clock: Clock
) -> None:
    await add(client, clock, **WEEKLY)
    await approve(
        client,
        clock,
        await propose(
            client,
            "propose_event_move",
            event="team sync",
            occurrence="2026-03-23",
            start="2026-03-24T14:00",
        ),
    )

    await approve(
        client,
        clock,
        await propose(
            client,
            "propose_event_move",
            event="team sync",
            occurrence="2026-03-24",
            scope="following",
            start="2026-03-24T16:00",
        ),
    )

    assert await starts(client, "2026-03-16", "2026-04-01") == [
        "2026-03-16T10:00:00+01:00",
        "2026-03-24T16:00:00+01:00",
        "2026-03-31T16:00:00+02:00",
    ]


async def test_a_series_move_writes_an_until_in_utc_that_exports_and_imports_again(
    client: Client[Any], clock: Clock, settings: CalendarSettings, tmp_path: Path
) -> None:
    # A weekly series as Google Calendar exports it: a zoned start, UNTIL in UTC.
    google = (
        "BEGIN:VCALENDAR\r\nPRODID:-//Google Inc//Google Calendar 70.9054//EN\r\n"
        "VERSION:2.0\r\nBEGIN:VEVENT\r\nDTSTART;TZID=Europe/Berlin:20260316T100000\r\n"
        "DTEND;TZID=Europe/Berlin:20260316T110000\r\n"
        "RRULE:FREQ=WEEKLY;UNTIL=20260413T080000Z;BYDAY=MO\r\n"
        "UID:0a1b2c3d4e5f@google.com\r\nSUMMARY:Team sync\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
    )
    await import_file(settings, google.encode(), "personal", writable=True, at=0)

    await approve(
        client,
        clock,
        await propose(
            client,
            "propose_event_move",
            event="team sync",
            occurrence="2026-03-23",
            scope="series",
            start="2026-03-24T09:30",
        ),
    )
    exported = await export_calendar(settings, None)
    again = settings.model_copy(update={"data_dir": tmp_path / "again"})
    await import_file(again, exported, "personal", writable=True, at=0)
    async with Client(build_server(again, clock=clock)) as reimported:
        after = await starts(reimported, "2026-03-16", "2026-05-30")

    assert "UNTIL=20260414T073000Z" in exported.decode()
    assert (
        await starts(client, "2026-03-16", "2026-05-30")
        == after
        == [
            "2026-03-17T09:30:00+01:00",
            "2026-03-24T09:30:00+01:00",
            "2026-03-31T09:30:00+02:00",
            "2026-04-07T09:30:00+02:00",
            "2026-04-14T09:30:00+02:00",
        ]
    )


@pytest.mark.parametrize(
    "utc",
    [UTC, ZoneInfo("UTC"), dateutil.tz.UTC, timezone(timedelta(0), "UTC")],
    ids=["datetime.UTC", "ZoneInfo('UTC') (icalendar's)", "dateutil's", "a named offset of 0"],
)
def test_a_moved_until_beside_a_zoned_start_is_utc_whatever_stands_for_utc(utc: tzinfo) -> None:
    edited = _series_moved(
        "DTSTART;TZID=Europe/Berlin:20260316T100000", datetime(2026, 4, 13, 8, tzinfo=utc)
    )

    assert "UNTIL=20260414T073000Z;" in edits.rule_text(edited)


@pytest.mark.parametrize(
    ("dtstart", "until", "expected"),
    [
        ("DTSTART:20260316T100000", datetime(2026, 4, 13, 10), "UNTIL=20260414T093000;"),
        ("DTSTART;VALUE=DATE:20260316", date(2026, 4, 13), "UNTIL=20260414;"),
        # Google's date UNTIL on a timed series: the end of that day, moved with the series
        (
            "DTSTART;TZID=Europe/Berlin:20260316T100000",
            date(2026, 4, 13),
            "UNTIL=20260414T212959Z;",
        ),
    ],
    ids=["floating stays floating", "a date stays a date", "a date beside a zoned start"],
)
def test_a_moved_until_takes_the_form_of_its_start(
    dtstart: str, until: date, expected: str
) -> None:
    assert expected in edits.rule_text(_series_moved(dtstart, until))


def _series_moved(dtstart: str, until: date) -> Event:
    """A weekly Monday series until ``until``, moved as a series from its second Monday
    to Tuesday, half an hour earlier (a day later for an all-day series)."""
    master = cast(
        Event,
        Event.from_ical(
            f"BEGIN:VEVENT\r\nUID:u\r\nSUMMARY:Sync\r\n{dtstart}\r\n"
            "RRULE:FREQ=WEEKLY;BYDAY=MO\r\nEND:VEVENT\r\n"
        ),
    )
    rule: Any = master["RRULE"]
    rule["UNTIL"] = [until]
    first = master.decoded("DTSTART")
    if isinstance(first, datetime):
        was: date = datetime(2026, 3, 23, 10, tzinfo=first.tzinfo)
        now: date = was + timedelta(days=1, minutes=-30)
        length = timedelta(hours=1)
    else:
        was, now, length = date(2026, 3, 23), date(2026, 3, 24), timedelta(days=1)
    [edited] = edits.move([master], was, "series", now, now + length).kept
    return edited
