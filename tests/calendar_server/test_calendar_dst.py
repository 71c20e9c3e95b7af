"""A weekly series keeps its wall-clock time in its own zone across daylight-saving changes,
in both hemispheres, whoever looks at it from wherever."""

from typing import Any

import pytest
from fastmcp import Client

from calendar_server.calls import BERLIN, SYDNEY, add, approve, propose
from fakes.clock import Clock
from fakes.tool_calls import call

pytestmark = pytest.mark.anyio


async def starts(client: Client[Any], start: str, end: str, zone: str) -> list[str]:
    found = await call(client, "get_events", start=start, end=end, timezone=zone)
    return [event["start"] for event in found["events"]]


async def test_a_berlin_series_stays_at_ten_across_the_march_and_october_changes(
    client: Client[Any], clock: Clock
) -> None:
    await add(client, clock, title="Sync", start="2026-03-23T10:00", recurrence="FREQ=WEEKLY")

    spring = await starts(client, "2026-03-23", "2026-04-06", BERLIN)
    autumn = await starts(client, "2026-10-19", "2026-11-02", BERLIN)

    assert spring == [
        "2026-03-23T10:00:00+01:00",
        "2026-03-30T10:00:00+02:00",  # clocks went forward on Sunday 29 March
        "2026-04-06T10:00:00+02:00",
    ]
    assert autumn == [
        "2026-10-19T10:00:00+02:00",
        "2026-10-26T10:00:00+01:00",  # clocks went back on Sunday 25 October
        "2026-11-02T10:00:00+01:00",
    ]


async def test_a_sydney_series_stays_at_nine_across_the_april_and_october_changes(
    client: Client[Any], clock: Clock
) -> None:
    await add(
        client,
        clock,
        title="Standup",
        start="2026-03-30T09:00",
        recurrence="FREQ=WEEKLY",
        timezone=SYDNEY,
    )

    autumn = await starts(client, "2026-03-30", "2026-04-13", SYDNEY)
    spring = await starts(client, "2026-09-28", "2026-10-12", SYDNEY)
    from_berlin = await starts(client, "2026-03-29", "2026-04-12", BERLIN)

    assert autumn == [
        "2026-03-30T09:00:00+11:00",
        "2026-04-06T09:00:00+10:00",  # clocks went back on Sunday 5 April
        "2026-04-13T09:00:00+10:00",
    ]
    assert spring == [
        "2026-09-28T09:00:00+10:00",
        "2026-10-05T09:00:00+11:00",  # clocks went forward on Sunday 4 October
        "2026-10-12T09:00:00+11:00",
    ]
    # Seen from Berlin the same meeting moves, because both zones change on other days.
    assert from_berlin == [
        "2026-03-30T00:00:00+02:00",
        "2026-04-06T01:00:00+02:00",
    ]


async def test_a_series_moved_after_the_change_keeps_its_new_time_before_it_too(
    client: Client[Any], clock: Clock
) -> None:
    await add(client, clock, title="Sync", start="2026-03-16T10:00", recurrence="FREQ=WEEKLY")

    await approve(
        client,
        clock,
        await propose(
            client,
            "propose_event_move",
            event="sync",
            occurrence="2026-04-06",
            scope="series",
            start="2026-04-06T08:30",
        ),
    )

    assert await starts(client, "2026-03-16", "2026-04-07", BERLIN) == [
        "2026-03-16T08:30:00+01:00",
        "2026-03-23T08:30:00+01:00",
        "2026-03-30T08:30:00+02:00",
        "2026-04-06T08:30:00+02:00",
    ]


async def test_working_hours_on_the_day_clocks_change_are_wall_clock_hours(
    client: Client[Any],
) -> None:
    free = await call(
        client,
        "find_free_time",
        duration_minutes=60,
        start="2026-03-29",
        work_start="01:00",
        work_end="05:00",
        include_weekends=True,
    )

    assert [(slot["start"], slot["end"]) for slot in free["slots"]] == [
        ("2026-03-29T01:00:00+01:00", "2026-03-29T05:00:00+02:00")  # three real hours
    ]


async def test_an_all_day_event_is_the_same_dates_in_every_zone(
    client: Client[Any], clock: Clock
) -> None:
    await add(client, clock, title="Holiday", start="2026-10-24", end="2026-10-26")

    seen = {
        zone: [
            (e["start"], e["end"])
            for e in (await call(client, "get_events", start="2026-10-25", timezone=zone))["events"]
        ]
        for zone in (BERLIN, SYDNEY, "America/Los_Angeles")
    }

    assert seen == {zone: [("2026-10-24", "2026-10-26")] for zone in seen}
