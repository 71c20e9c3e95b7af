"""Producer tools: a proposal says the change in local time, lists overlaps, changes nothing."""

from datetime import date, timedelta
from typing import Any

import pytest
from fastmcp import Client

from calendar_server.calls import add, day, propose
from fakes.clock import Clock
from fakes.tool_calls import call, call_error
from mcp_calendar.ics_files import import_file
from mcp_calendar.settings import CalendarSettings

pytestmark = pytest.mark.anyio

HOLIDAYS = b"""BEGIN:VCALENDAR
VERSION:2.0
PRODID:-//test//holidays//EN
BEGIN:VEVENT
UID:good-friday-2026@holidays
SUMMARY:Good Friday
DTSTART;VALUE=DATE:20260403
DTEND;VALUE=DATE:20260404
END:VEVENT
END:VCALENDAR
"""


async def test_an_add_proposal_states_the_change_and_its_overlaps_and_changes_nothing(
    client: Client[Any], clock: Clock
) -> None:
    await add(client, clock, title="Standup", start="2026-03-17T09:00", duration_minutes=30)
    await add(client, clock, title="Birthday", start="2026-03-17")  # all day: no overlap

    proposal = await propose(
        client,
        "propose_event_add",
        title="Dentist",
        start="2026-03-17T08:45",
        end="2026-03-17T09:45",
    )

    assert proposal["kind"] == "event_add"
    assert proposal["summary"] == (
        "Add “Dentist” Tue 17 Mar 2026, 08:45–09:45 (Europe/Berlin). "
        "Overlaps: “Standup” Tue 17 Mar 2026, 09:00–09:30"
    )
    assert (proposal["confirm_label"], proposal["cancel_label"]) == ("📅 Add", "Skip")
    payload = proposal["payload"]
    assert (payload["start"], payload["end"], payload["zone"], payload["calendar"]) == (
        "2026-03-17T08:45:00+01:00",
        "2026-03-17T09:45:00+01:00",
        "Europe/Berlin",
        "personal",
    )
    assert [title for title, _, _ in await day(client, "2026-03-17")] == ["Birthday", "Standup"]


async def test_a_time_with_another_offset_is_that_instant_shown_in_the_users_zone(
    client: Client[Any],
) -> None:
    proposal = await propose(
        client, "propose_event_add", title="Call NYC", start="2026-03-17T10:00-04:00"
    )

    assert proposal["summary"] == "Add “Call NYC” Tue 17 Mar 2026, 15:00–16:00 (Europe/Berlin)"
    assert (proposal["payload"]["start"], proposal["payload"]["zone"]) == (
        "2026-03-17T14:00:00+00:00",
        "UTC",
    )


async def test_a_recurring_add_states_its_rule(client: Client[Any]) -> None:
    proposal = await propose(
        client,
        "propose_event_add",
        title="Yoga",
        start="2026-03-18T18:00",
        recurrence="RRULE:FREQ=WEEKLY;BYDAY=WE",
    )

    assert proposal["summary"] == (
        "Add “Yoga” Wed 18 Mar 2026, 18:00–19:00 (Europe/Berlin), repeating FREQ=WEEKLY;BYDAY=WE"
    )
    assert proposal["payload"]["rule"] == "FREQ=WEEKLY;BYDAY=WE"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"recurrence": "EVERY MONDAY"}, "is not a recurrence rule: use RFC 5545 RRULE syntax"),
        ({"calendar": "work"}, "There is no calendar 'work'. Calendars: personal."),
        ({"end": "2026-03-17T08:00"}, "The end must come after the start."),
        ({"end": "2026-03-18"}, "Give start and end both as times, or both as dates"),
        ({"title": "  "}, "title must not be empty."),
    ],
)
async def test_a_bad_add_gets_one_line_the_model_can_act_on(
    client: Client[Any], arguments: dict[str, str], message: str
) -> None:
    wanted = {"title": "Dentist", "start": "2026-03-17T09:00", **arguments}

    assert message in await call_error(client, "propose_event_add", **wanted)


async def test_a_read_only_calendar_refuses_proposals_and_names_the_writable_ones(
    client: Client[Any], settings: CalendarSettings
) -> None:
    await import_file(settings, HOLIDAYS, "holidays", writable=False, at=0)

    add_error = await call_error(
        client, "propose_event_add", title="Picnic", start="2026-04-03", calendar="holidays"
    )
    cancel_error = await call_error(client, "propose_event_cancel", event="good friday")

    expected = (
        "The calendar 'holidays' is read-only: it cannot be changed here. "
        "Writable calendars: personal."
    )
    assert add_error == expected
    assert cancel_error == expected


async def test_a_move_proposal_keeps_the_length_and_lists_what_it_would_overlap(
    client: Client[Any], clock: Clock
) -> None:
    await add(client, clock, title="Dentist", start="2026-03-19T15:00", duration_minutes=45)
    await add(client, clock, title="School run", start="2026-03-20T15:30")

    proposal = await propose(
        client, "propose_event_move", event="the dentist", start="2026-03-20T15:00"
    )

    assert proposal["kind"] == "event_move"
    assert proposal["summary"] == (
        "Move “Dentist” from Thu 19 Mar 2026, 15:00–15:45 to Fri 20 Mar 2026, 15:00–15:45 "
        "(Europe/Berlin). Overlaps: “School run” Fri 20 Mar 2026, 15:30–16:30"
    )
    assert (proposal["payload"]["version"], proposal["payload"]["scope"]) == (1, "this")
    assert [t for t, _, _ in await day(client, "2026-03-19")] == ["Dentist"]


async def test_an_event_not_found_lists_the_closest_titles(
    client: Client[Any], clock: Clock
) -> None:
    await add(client, clock, title="Dental cleaning", start="2026-03-19T15:00")
    await add(client, clock, title="Football", start="2026-03-19T18:00")

    error = await call_error(
        client, "propose_event_move", event="dentist", start="2026-03-20T15:00"
    )
    none = await call_error(client, "propose_event_cancel", event="zzz")

    assert error.startswith(
        "No event matches 'dentist'. Closest: 'Dental cleaning' Thu 19 Mar 2026, 15:00–16:00 (id "
    )
    assert "Football" not in error
    assert none.startswith("No event in the calendar matches 'zzz'")


async def test_two_events_with_the_same_title_are_ambiguous_until_the_day_is_named(
    client: Client[Any], clock: Clock
) -> None:
    await add(client, clock, title="Dentist", start="2026-03-19T15:00")
    await add(client, clock, title="Dentist", start="2026-04-02T09:00")

    error = await call_error(client, "propose_event_cancel", event="Dentist")
    chosen = await propose(client, "propose_event_cancel", event="Dentist", occurrence="2026-04-02")

    assert error.startswith(
        "Several events match 'Dentist': 'Dentist' Thu 19 Mar 2026, 15:00–16:00 (id "
    )
    assert "'Dentist' Thu 2 Apr 2026, 09:00–10:00" in error
    assert error.endswith(
        "Ask the user which one they mean, then call again with its id "
        "(and occurrence for a recurring event)."
    )
    assert chosen["summary"] == "Cancel “Dentist” Thu 2 Apr 2026, 09:00–10:00 (Europe/Berlin)"


async def test_an_event_can_be_named_by_its_id(client: Client[Any], clock: Clock) -> None:
    added = await add(client, clock, title="Dentist", start="2026-03-19T15:00")

    proposal = await propose(client, "propose_event_cancel", event=added["event_id"])

    assert proposal["payload"]["uid"] == added["event_id"]


async def test_moving_keeps_the_kind_of_event_and_says_which_time_to_give(
    client: Client[Any], clock: Clock
) -> None:
    await add(client, clock, title="Trip", start="2026-03-20", end="2026-03-22")
    await add(client, clock, title="Dentist", start="2026-03-19T15:00")

    to_time = await call_error(client, "propose_event_move", event="trip", start="2026-03-27T10:00")
    to_day = await call_error(client, "propose_event_move", event="dentist", start="2026-03-27")
    missing = await call_error(
        client,
        "propose_event_move",
        event="dentist",
        occurrence="2026-03-25",
        start="2026-03-27T10:00",
    )

    assert to_time.startswith("'Trip' is an all-day event: give a date")
    assert to_day.startswith("'Dentist' is at a time: give one")
    assert missing.startswith(
        "'Dentist' has no occurrence at 2026-03-25; "
        "the next is 'Dentist' Thu 19 Mar 2026, 15:00–16:00 (id "
    )


async def test_an_all_day_move_keeps_its_days(client: Client[Any], clock: Clock) -> None:
    await add(client, clock, title="Trip", start="2026-03-20", end="2026-03-22")

    proposal = await propose(client, "propose_event_move", event="trip", start="2026-03-27")

    assert proposal["summary"] == (
        "Move “Trip” from Fri 20 Mar – Sun 22 Mar 2026 (all day) to "
        "Fri 27 Mar – Sun 29 Mar 2026 (all day) (Europe/Berlin)"
    )


async def test_the_agent_and_timezone_are_filled_in_by_the_assistant(client: Client[Any]) -> None:
    tools = {tool.name: tool for tool in await client.list_tools()}

    meta = {name: tool.meta or {} for name, tool in tools.items()}
    for name in ("propose_event_add", "propose_event_move", "propose_event_cancel"):
        assert meta[name]["clawmesh"] == {"context": ["agent", "timezone"]}
    for name in ("list_calendars", "get_events", "search_events", "find_free_time"):
        assert meta[name]["clawmesh"] == {"context": ["timezone"]}
        zone = tools[name].input_schema["properties"]["timezone"]
        assert zone["default"] == "Europe/Berlin"
    confirm_tools = [name for name in tools if name.startswith("confirm_")]
    assert sorted(confirm_tools) == [
        "confirm_event_add",
        "confirm_event_cancel",
        "confirm_event_move",
        "confirm_import_events",
    ]
    for name in confirm_tools:
        assert meta[name]["fastmcp"]["tags"] == ["confirm"]


async def _months(client: Client[Any], title: str, start: str, end: str) -> list[str]:
    """The days (YYYY-MM-DD) the event falls on, read three months at a time."""
    found: list[str] = []
    first = date.fromisoformat(start)
    last = date.fromisoformat(end)
    while first <= last:
        chunk = min(first + timedelta(days=89), last)
        events = await call(client, "get_events", start=first.isoformat(), end=chunk.isoformat())
        found += [e["start"][:10] for e in events["events"] if e["title"] == title]
        first = chunk + timedelta(days=1)
    return found


async def test_monthly_on_the_31st_says_it_skips_months_and_offers_the_last_day(
    client: Client[Any], clock: Clock
) -> None:
    proposal = await propose(
        client,
        "propose_event_add",
        title="Rent",
        start="2026-03-31",
        recurrence="FREQ=MONTHLY;BYMONTHDAY=31",
    )
    await add(
        client, clock, title="Rent", start="2026-03-31", recurrence="FREQ=MONTHLY;BYMONTHDAY=31"
    )
    await add(
        client, clock, title="Payroll", start="2026-03-31", recurrence="FREQ=MONTHLY;BYMONTHDAY=-1"
    )

    rent = await _months(client, "Rent", "2026-03-01", "2027-02-28")
    payroll = await _months(client, "Payroll", "2026-03-01", "2027-02-28")

    assert proposal["summary"] == (
        "Add “Rent” Tue 31 Mar 2026 (all day) (Europe/Berlin), repeating "
        "FREQ=MONTHLY;BYMONTHDAY=31: it fires in Jan, Mar, May, Jul, Aug, Oct and Dec only "
        "(the months with a 31st); for the last day of the month, the rule is "
        "FREQ=MONTHLY;BYMONTHDAY=-1"
    )
    assert rent == [
        "2026-03-31",
        "2026-05-31",
        "2026-07-31",
        "2026-08-31",
        "2026-10-31",
        "2026-12-31",
        "2027-01-31",
    ]
    assert payroll == [
        "2026-03-31",
        "2026-04-30",
        "2026-05-31",
        "2026-06-30",
        "2026-07-31",
        "2026-08-31",
        "2026-09-30",
        "2026-10-31",
        "2026-11-30",
        "2026-12-31",
        "2027-01-31",
        "2027-02-28",
    ]


async def test_monthly_from_the_30th_names_the_months_and_the_rule_for_february_too(
    client: Client[Any], clock: Clock
) -> None:
    said = (
        await propose(
            client,
            "propose_event_add",
            title="Invoice",
            start="2026-01-30T09:00",
            recurrence="FREQ=MONTHLY",
        )
    )["summary"]
    offered = said.rsplit("the rule is ", 1)[1]
    await add(client, clock, title="Invoice", start="2026-01-30T09:00", recurrence=offered)

    invoices = await _months(client, "Invoice", "2026-01-01", "2026-04-30")

    assert said == (
        "Add “Invoice” Fri 30 Jan 2026, 09:00–10:00 (Europe/Berlin), repeating FREQ=MONTHLY: "
        "it fires in Jan, Mar, Apr, May, Jun, Jul, Aug, Sep, Oct, Nov and Dec only (the months "
        "with a 30th); for the 30th, or the last day of a shorter month, the rule is "
        "FREQ=MONTHLY;BYMONTHDAY=28,29,30;BYSETPOS=-1"
    )
    assert invoices == ["2026-01-30", "2026-02-28", "2026-03-30", "2026-04-30"]


@pytest.mark.parametrize(
    ("start", "rule", "note"),
    [
        (
            "2026-03-29",
            "FREQ=MONTHLY;BYMONTHDAY=29",
            ": it fires in Jan, Mar, Apr, May, Jun, Jul, Aug, Sep, Oct, Nov and Dec, and in Feb "
            "only in leap years (next: 29 Feb 2028); for the 29th, or the last day of a shorter "
            "month, the rule is FREQ=MONTHLY;BYMONTHDAY=28,29;BYSETPOS=-1",
        ),
        ("2026-03-31", "FREQ=MONTHLY;BYMONTHDAY=-1", ""),
        ("2026-03-15", "FREQ=MONTHLY", ""),
        ("2026-01-31", "FREQ=MONTHLY;BYMONTH=1,3,5", ""),
        ("2026-01-31", "FREQ=YEARLY", ""),
    ],
)
async def test_a_monthly_rule_is_said_to_skip_months_only_when_it_does(
    client: Client[Any], start: str, rule: str, note: str
) -> None:
    said = (await propose(client, "propose_event_add", title="Bill", start=start, recurrence=rule))[
        "summary"
    ]

    assert said.split(f"repeating {rule}", 1)[1] == note


async def test_a_rule_with_an_until_in_utc_is_added_and_ends_there(
    client: Client[Any], clock: Clock
) -> None:
    await add(
        client,
        clock,
        title="Course",
        start="2026-03-16T18:00",
        recurrence="FREQ=WEEKLY;BYDAY=MO;UNTIL=20260330T170000Z",
    )

    assert await _months(client, "Course", "2026-03-01", "2026-04-30") == [
        "2026-03-16",
        "2026-03-23",
        "2026-03-30",
    ]
