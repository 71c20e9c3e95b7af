"""The caldav backend through the in-memory MCP client, against a real Radicale process
(tests/fakes/radicale.py) driven by the real caldav library.

The seeded series is as Apple Calendar writes one (a master with an EXDATE, and a moved
occurrence in the same object under its RECURRENCE-ID); another client's writes go to
Radicale over HTTP directly, as a phone's would.
"""

from __future__ import annotations

import secrets
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from caldav.davclient import DAVClient
from fastmcp import Client
from pydantic import SecretStr, ValidationError

from calendar_server.calls import BERLIN, approve, mint, propose
from fakes.clock import Clock
from fakes.radicale import Radicale, radicale
from fakes.serving import free_port
from fakes.tool_calls import call, call_error
from mcp_calendar.backend import Move, Target
from mcp_calendar.dav import CalDAVBackend
from mcp_calendar.errors import Stale
from mcp_calendar.records import ConfirmationRecords
from mcp_calendar.server import build_server
from mcp_calendar.settings import CalendarSettings
from meshkit.proposals import Approval

pytestmark = pytest.mark.anyio

STANDUP = "standup-2026@example.com"
DENTIST = "dentist-2026@example.com"
# Apple Calendar's shape: the master with its EXDATE, and the occurrence of 23 March moved
# to Tuesday 24 March 10:00 in the same object (RFC 4791 4.1: one UID, one object).
SERIES = f"""BEGIN:VCALENDAR\r
VERSION:2.0\r
PRODID:-//Apple Inc.//macOS 15.3//EN\r
CALSCALE:GREGORIAN\r
BEGIN:VTIMEZONE\r
TZID:Europe/Berlin\r
BEGIN:DAYLIGHT\r
TZOFFSETFROM:+0100\r
RRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU\r
DTSTART:19810329T020000\r
TZNAME:CEST\r
TZOFFSETTO:+0200\r
END:DAYLIGHT\r
BEGIN:STANDARD\r
TZOFFSETFROM:+0200\r
RRULE:FREQ=YEARLY;BYMONTH=10;BYDAY=-1SU\r
DTSTART:19961027T030000\r
TZNAME:CET\r
TZOFFSETTO:+0100\r
END:STANDARD\r
END:VTIMEZONE\r
BEGIN:VEVENT\r
CREATED:20260220T101500Z\r
DTEND;TZID=Europe/Berlin:20260302T094500\r
DTSTAMP:20260220T101512Z\r
DTSTART;TZID=Europe/Berlin:20260302T093000\r
EXDATE;TZID=Europe/Berlin:20260309T093000\r
LAST-MODIFIED:20260220T101512Z\r
RRULE:FREQ=WEEKLY;UNTIL=20260427T073000Z;BYDAY=MO\r
SEQUENCE:0\r
SUMMARY:Stand-up\r
UID:{STANDUP}\r
END:VEVENT\r
BEGIN:VEVENT\r
CREATED:20260220T101500Z\r
DTEND;TZID=Europe/Berlin:20260324T101500\r
DTSTAMP:20260220T101630Z\r
DTSTART;TZID=Europe/Berlin:20260324T100000\r
LAST-MODIFIED:20260220T101630Z\r
RECURRENCE-ID;TZID=Europe/Berlin:20260323T093000\r
SEQUENCE:1\r
SUMMARY:Stand-up\r
UID:{STANDUP}\r
END:VEVENT\r
END:VCALENDAR\r
"""


def single(uid: str, title: str, start: str, end: str) -> str:
    return (
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Apple Inc.//macOS 15.3//EN\r\n"
        f"BEGIN:VEVENT\r\nUID:{uid}\r\nDTSTAMP:20260220T101512Z\r\n"
        f"DTSTART;TZID=Europe/Berlin:{start}\r\nDTEND;TZID=Europe/Berlin:{end}\r\n"
        f"SUMMARY:{title}\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
    )


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Radicale]:
    with radicale(tmp_path_factory.mktemp("radicale")) as started:
        yield started


@pytest.fixture
def work(server: Radicale) -> str:
    """A fresh calendar for this test, seeded with the series and a single event."""
    calendar_id = f"work-{secrets.token_hex(3)}"
    server.make_calendar(calendar_id, "Work")
    server.put(calendar_id, "standup.ics", SERIES)
    server.put(
        calendar_id, "dentist.ics", single(DENTIST, "Dentist", "20260317T100000", "20260317T110000")
    )
    return calendar_id


def dav_settings(
    tmp_path: Path, server: Radicale, calendars: list[str], **more: Any
) -> CalendarSettings:
    password = tmp_path / "caldav_password"
    password.write_text(f"{server.password}\n")
    return CalendarSettings(
        backend="caldav",
        timezone=BERLIN,
        data_dir=tmp_path / "data",
        caldav_url=server.url,
        caldav_user=server.user,
        caldav_password_file=str(password),  # a path: its validator reads the file
        caldav_calendars=calendars,
        **more,
    )


@pytest.fixture
async def dclient(
    tmp_path: Path, server: Radicale, work: str, clock: Clock
) -> AsyncIterator[Client[Any]]:
    settings = dav_settings(tmp_path, server, [work])
    async with Client(build_server(settings, clock=clock)) as client:
        yield client


async def spring(client: Client[Any]) -> list[tuple[str, str]]:
    found = await call(client, "get_events", start="2026-03-01", end="2026-05-01")
    return [(e["title"], e["start"]) for e in found["events"]]


SEEDED = [
    ("Stand-up", "2026-03-02T09:30:00+01:00"),
    ("Stand-up", "2026-03-16T09:30:00+01:00"),
    ("Dentist", "2026-03-17T10:00:00+01:00"),
    ("Stand-up", "2026-03-24T10:00:00+01:00"),
    ("Stand-up", "2026-03-30T09:30:00+02:00"),
    ("Stand-up", "2026-04-06T09:30:00+02:00"),
    ("Stand-up", "2026-04-13T09:30:00+02:00"),
    ("Stand-up", "2026-04-20T09:30:00+02:00"),
    ("Stand-up", "2026-04-27T09:30:00+02:00"),
]


async def test_the_series_is_read_from_the_caldav_server_with_its_exceptions(
    dclient: Client[Any],
) -> None:
    assert await spring(dclient) == SEEDED
    week = await call(dclient, "get_events", start="2026-03-16", end="2026-03-23")
    assert [(e["title"], e["recurring"], e["rule"]) for e in week["events"]] == [
        ("Stand-up", True, "FREQ=WEEKLY;UNTIL=20260427T073000Z;BYDAY=MO"),
        ("Dentist", False, None),
    ]
    assert week["events"][0]["id"] == STANDUP


async def test_calendars_are_discovered_and_task_lists_left_out(
    tmp_path: Path, server: Radicale, work: str, clock: Clock
) -> None:
    home = f"home-{secrets.token_hex(3)}"
    server.make_calendar(home, "Home")
    server.make_calendar(f"tasks-{secrets.token_hex(3)}", "Reminders", component="VTODO")
    settings = dav_settings(tmp_path, server, [])
    async with Client(build_server(settings, clock=clock)) as client:
        found = await call(client, "list_calendars")
    ids = {c["id"]: c["name"] for c in found["calendars"]}
    assert ids[work] == "Work"
    assert ids[home] == "Home"
    assert not any(name == "Reminders" for name in ids.values())


async def test_a_calendar_the_account_may_only_read_is_read_but_never_changed(
    tmp_path: Path, server: Radicale, work: str, clock: Clock
) -> None:
    holidays = f"readonly-{secrets.token_hex(3)}"
    server.make_calendar(holidays, "Holidays")
    server.put(
        holidays, "easter.ics", single("easter@x", "Easter", "20260405T000000", "20260406T000000")
    )
    settings = dav_settings(tmp_path, server, [work, holidays])
    async with Client(build_server(settings, clock=clock)) as client:
        found = await call(client, "list_calendars")
        error = await call_error(client, "propose_event_cancel", event="easter")
        added = await call_error(
            client, "propose_event_add", title="Picnic", start="2026-04-05T12:00", calendar=holidays
        )
        day = await call(client, "get_events", start="2026-04-05")
    assert [(c["id"], c["writable"]) for c in found["calendars"]] == [
        (work, True),
        (holidays, False),
    ]
    assert "read-only" in error
    assert "read-only" in added
    assert [e["title"] for e in day["events"]] == ["Easter"]


async def test_a_calendar_named_in_the_settings_but_not_on_the_server_is_said_so(
    tmp_path: Path, server: Radicale, work: str, clock: Clock
) -> None:
    settings = dav_settings(tmp_path, server, [work, "holidays"])
    async with Client(build_server(settings, clock=clock)) as client:
        error = await call_error(client, "list_calendars")
    assert error.startswith(
        "The CalDAV calendar 'holidays' (CALENDAR_CALDAV_CALENDARS) is not in this account"
    )


async def test_an_event_added_is_a_new_object_on_the_server_and_a_replay_adds_nothing(
    dclient: Client[Any], clock: Clock, server: Radicale, work: str
) -> None:
    proposal = await propose(
        dclient, "propose_event_add", title="Lunch with Ana", start="2026-03-18T12:30"
    )
    action = "act_1a2b3c4d5e6f"
    done = await approve(dclient, clock, proposal, action)
    again = await approve(dclient, clock, proposal, action)

    assert (again["message"], again["replayed"]) == (done["message"], True)
    assert len(server.names(work)) == 3
    day = await call(dclient, "get_events", start="2026-03-18")
    assert [(e["title"], e["start"]) for e in day["events"]] == [
        ("Lunch with Ana", "2026-03-18T12:30:00+01:00")
    ]


async def test_the_same_add_confirmed_under_another_approval_is_refused(
    dclient: Client[Any], clock: Clock, server: Radicale, work: str
) -> None:
    proposal = await propose(dclient, "propose_event_add", title="Lunch", start="2026-03-18T12:30")
    await approve(dclient, clock, proposal, "act_000000000001")
    error = await call_error(
        dclient,
        "confirm_event_add",
        payload=proposal["payload"],
        approval=mint(clock, "event_add", proposal["payload"], "act_000000000002"),
    )
    assert "added already" in error
    assert len(server.names(work)) == 3


# Each scope, move and cancel, on the occurrence of Monday 16 March (after the cancelled
# 9 March, before the moved 23 March): what the series reads as afterwards.
AT_11 = {
    "this": [
        ("Stand-up", "2026-03-02T09:30:00+01:00"),
        ("Stand-up", "2026-03-16T11:00:00+01:00"),
        ("Dentist", "2026-03-17T10:00:00+01:00"),
        ("Stand-up", "2026-03-24T10:00:00+01:00"),
        *SEEDED[4:],
    ],
    "following": [
        ("Stand-up", "2026-03-02T09:30:00+01:00"),
        ("Stand-up", "2026-03-16T11:00:00+01:00"),
        ("Dentist", "2026-03-17T10:00:00+01:00"),
        ("Stand-up", "2026-03-24T10:00:00+01:00"),
        *[("Stand-up", f"2026-{d}T11:00:00+02:00") for d in ("03-30", "04-06", "04-13")],
        *[("Stand-up", f"2026-{d}T11:00:00+02:00") for d in ("04-20", "04-27")],
    ],
    "series": [
        ("Stand-up", "2026-03-02T11:00:00+01:00"),
        ("Stand-up", "2026-03-16T11:00:00+01:00"),
        ("Dentist", "2026-03-17T10:00:00+01:00"),
        ("Stand-up", "2026-03-24T10:00:00+01:00"),
        *[("Stand-up", f"2026-{d}T11:00:00+02:00") for d in ("03-30", "04-06", "04-13")],
        *[("Stand-up", f"2026-{d}T11:00:00+02:00") for d in ("04-20", "04-27")],
    ],
}
CANCELLED = {
    "this": [SEEDED[0], *SEEDED[2:]],
    "following": [SEEDED[0], SEEDED[2]],
    "series": [SEEDED[2]],
}
OBJECTS = {  # objects in the calendar afterwards: "following" moved writes a second series
    ("move", "this"): 2,
    ("move", "following"): 3,
    ("move", "series"): 2,
    ("cancel", "this"): 2,
    ("cancel", "following"): 2,
    ("cancel", "series"): 1,
}


@pytest.mark.parametrize("scope", ["this", "following", "series"])
async def test_a_move_of_the_series_with_each_scope_keeps_its_exceptions(
    dclient: Client[Any], clock: Clock, server: Radicale, work: str, scope: str
) -> None:
    proposal = await propose(
        dclient,
        "propose_event_move",
        event="stand-up",
        occurrence="2026-03-16",
        start="2026-03-16T11:00",
        scope=scope,
    )
    await approve(dclient, clock, proposal)

    assert await spring(dclient) == AT_11[scope]
    assert len(server.names(work)) == OBJECTS[("move", scope)]


async def test_after_a_following_move_each_part_is_its_own_event(
    dclient: Client[Any], clock: Clock, server: Radicale, work: str
) -> None:
    moved = await propose(
        dclient,
        "propose_event_move",
        event="stand-up",
        occurrence="2026-03-16",
        start="2026-03-16T11:00",
        scope="following",
    )
    await approve(dclient, clock, moved)
    earlier = await propose(
        dclient, "propose_event_cancel", event="stand-up", occurrence="2026-03-02", scope="series"
    )
    await approve(dclient, clock, earlier)

    assert await spring(dclient) == [
        row for row in AT_11["following"] if row != ("Stand-up", "2026-03-02T09:30:00+01:00")
    ]
    assert len(server.names(work)) == 2


@pytest.mark.parametrize("scope", ["this", "following", "series"])
async def test_a_cancel_of_the_series_with_each_scope_keeps_its_exceptions(
    dclient: Client[Any], clock: Clock, server: Radicale, work: str, scope: str
) -> None:
    proposal = await propose(
        dclient, "propose_event_cancel", event="stand-up", occurrence="2026-03-16", scope=scope
    )
    await approve(dclient, clock, proposal)

    assert await spring(dclient) == CANCELLED[scope]
    assert len(server.names(work)) == OBJECTS[("cancel", scope)]


async def test_a_change_made_in_another_client_shows_at_the_next_read(
    dclient: Client[Any], server: Radicale, work: str
) -> None:
    assert ("Dentist", "2026-03-17T10:00:00+01:00") in await spring(dclient)
    server.put(
        work, "dentist.ics", single(DENTIST, "Dentist", "20260319T150000", "20260319T160000")
    )
    server.put(work, "gym.ics", single("gym@x", "Gym", "20260318T180000", "20260318T190000"))

    week = await call(dclient, "get_events", start="2026-03-16", end="2026-03-23")

    assert [(e["title"], e["start"]) for e in week["events"]] == [
        ("Stand-up", "2026-03-16T09:30:00+01:00"),
        ("Gym", "2026-03-18T18:00:00+01:00"),
        ("Dentist", "2026-03-19T15:00:00+01:00"),
    ]


# Thunderbird's all-day event: DTSTART/DTEND as dates, DTEND the day after (exclusive).
ALL_DAY = """BEGIN:VCALENDAR\r
PRODID:-//Mozilla.org/NONSGML Mozilla Calendar V1.1//EN\r
VERSION:2.0\r
BEGIN:VEVENT\r
CREATED:20260301T090000Z\r
LAST-MODIFIED:20260301T090000Z\r
DTSTAMP:20260301T090000Z\r
UID:1f0c7a52-3b1e-4a0e-9a57-5b3f0a0c2d11\r
SUMMARY:Ana's birthday\r
DTSTART;VALUE=DATE:20260319\r
DTEND;VALUE=DATE:20260320\r
TRANSP:TRANSPARENT\r
END:VEVENT\r
END:VCALENDAR\r
"""


async def test_an_all_day_event_reads_as_days_and_moves_as_days(
    dclient: Client[Any], clock: Clock, server: Radicale, work: str
) -> None:
    server.put(work, "birthday.ics", ALL_DAY)
    proposal = await propose(
        dclient, "propose_event_move", event="birthday", start="2026-03-20", end="2026-03-20"
    )
    await approve(dclient, clock, proposal)

    moved = await call(dclient, "get_events", start="2026-03-18", end="2026-03-22")
    assert [(e["title"], e["start"], e["end"]) for e in moved["events"]] == [
        ("Ana's birthday", "2026-03-20", "2026-03-20")
    ]
    assert "DTSTART;VALUE=DATE:20260320" in server.get(work, "birthday.ics")[0]


# Google Calendar's invitation to one occurrence of someone else's series, as a CalDAV
# client files it: the changed occurrence alone, its series nowhere in the calendar.
INVITATION = """BEGIN:VCALENDAR\r
PRODID:-//Google Inc//Google Calendar 70.9054//EN\r
VERSION:2.0\r
CALSCALE:GREGORIAN\r
METHOD:REQUEST\r
BEGIN:VEVENT\r
DTSTART:20260318T140000Z\r
DTEND:20260318T150000Z\r
DTSTAMP:20260310T120000Z\r
ORGANIZER;CN=Ben:mailto:ben@example.com\r
UID:7kukuqrfedlm2f9t0vr42q2g1a@google.com\r
RECURRENCE-ID:20260318T130000Z\r
SEQUENCE:1\r
STATUS:CONFIRMED\r
SUMMARY:Design review\r
END:VEVENT\r
END:VCALENDAR\r
"""


async def test_an_invitation_to_one_occurrence_reads_and_moves_as_a_single_event(
    dclient: Client[Any], clock: Clock, server: Radicale, work: str
) -> None:
    server.put(work, "invitation.ics", INVITATION)
    day = await call(dclient, "get_events", start="2026-03-18")
    proposal = await propose(
        dclient, "propose_event_move", event="design review", start="2026-03-18T16:00"
    )
    await approve(dclient, clock, proposal)
    moved = await call(dclient, "get_events", start="2026-03-18")

    assert [(e["title"], e["start"], e["recurring"]) for e in day["events"]] == [
        ("Design review", "2026-03-18T15:00:00+01:00", False)
    ]
    assert [(e["title"], e["start"]) for e in moved["events"]] == [
        ("Design review", "2026-03-18T16:00:00+01:00")
    ]


async def test_a_calendar_unchanged_since_the_last_read_is_not_queried_again(
    dclient: Client[Any], server: Radicale, work: str
) -> None:
    await call(dclient, "get_events", start="2026-03-16", end="2026-03-23")
    queried = server.reports(work)
    again = await call(dclient, "get_events", start="2026-03-17")
    unchanged = server.reports(work)
    server.put(work, "gym.ics", single("gym@x", "Gym", "20260317T180000", "20260317T190000"))
    changed = await call(dclient, "get_events", start="2026-03-17")

    assert unchanged == queried
    assert [e["title"] for e in again["events"]] == ["Dentist"]
    assert server.reports(work) > unchanged
    assert [e["title"] for e in changed["events"]] == ["Dentist", "Gym"]


async def test_a_move_of_an_event_edited_elsewhere_since_is_refused_by_its_etag(
    dclient: Client[Any], clock: Clock, server: Radicale, work: str
) -> None:
    proposal = await propose(
        dclient, "propose_event_move", event="dentist", start="2026-03-18T09:00"
    )
    server.put(
        work, "dentist.ics", single(DENTIST, "Dentist", "20260319T150000", "20260319T160000")
    )
    before = server.get(work, "dentist.ics")

    error = await call_error(
        dclient,
        "confirm_event_move",
        payload=proposal["payload"],
        approval=mint(clock, "event_move", proposal["payload"]),
    )

    assert error == (
        "“Dentist” changed since it was proposed: it is now Thu 19 Mar 2026, 15:00–16:00 "
        "(was Tue 17 Mar 2026, 10:00–11:00). Nothing was changed: propose it again if it "
        "should still happen."
    )
    assert server.get(work, "dentist.ics") == before


class RacedClient(DAVClient):
    """The caldav client, with another client's edit landing just before its first PUT:
    the race no check before the write can close."""

    def __init__(self, race: Callable[[], object], **arguments: Any) -> None:
        super().__init__(**arguments)
        self._race: Callable[[], object] | None = race

    def put(self, url: str, body: str, headers: Mapping[str, str] | None = None) -> Any:
        if self._race is not None:
            race, self._race = self._race, None
            race()
        return super().put(url, body, headers or {})


async def test_a_write_that_loses_a_race_is_refused_by_the_servers_412(
    tmp_path: Path, server: Radicale, work: str
) -> None:
    settings = dav_settings(tmp_path, server, [work])
    elsewhere = single(DENTIST, "Dentist", "20260319T150000", "20260319T160000")

    def connect() -> DAVClient:
        return RacedClient(
            lambda: server.put(work, "dentist.ics", elsewhere),
            url=server.url,
            username=server.user,
            password=server.password,
        )

    records = ConfirmationRecords(tmp_path / "records.sqlite3", clock=time.time)
    backend = CalDAVBackend(settings, records, connect)
    async with records.lifespan():
        now = await backend.occurrence(DENTIST, None)
        assert now is not None
        target = Target(DENTIST, now.version, None, "this")
        move = Move(target, now.start + timedelta(days=1), now.end + timedelta(days=1))
        approval = Approval("act_00000000000a", "default", "calendar", "event_move", 0)
        with pytest.raises(Stale):
            await backend.perform(approval, move, {"message": "moved"}, 0.0)
        assert await records.first("act_00000000000a") is None

    assert "DTSTART;TZID=Europe/Berlin:20260319T150000" in server.get(work, "dentist.ics")[0]
    assert server.answers("PUT", work, "dentist.ics")[-1] == "412 Precondition Failed"


async def test_a_cancel_of_an_event_deleted_elsewhere_says_it_is_gone(
    dclient: Client[Any], clock: Clock, server: Radicale, work: str
) -> None:
    proposal = await propose(dclient, "propose_event_cancel", event="dentist")
    server.delete(work, "dentist.ics")

    error = await call_error(
        dclient,
        "confirm_event_cancel",
        payload=proposal["payload"],
        approval=mint(clock, "event_cancel", proposal["payload"]),
    )

    assert error == (
        "“Dentist” (Tue 17 Mar 2026, 10:00–11:00) is no longer in the calendar. "
        "Nothing was changed: propose it again if it should still happen."
    )


async def test_a_server_that_does_not_answer_is_one_line_for_the_model(
    tmp_path: Path, server: Radicale, clock: Clock
) -> None:
    settings = dav_settings(tmp_path, server, [])
    closed = settings.model_copy(update={"caldav_url": f"http://127.0.0.1:{free_port()}/"})
    async with Client(build_server(closed, clock=clock)) as client:
        error = await call_error(client, "get_events", start="2026-03-17")
    assert error.startswith("The CalDAV server did not answer as expected ("), error
    assert error.endswith("): try again later.")
    assert "\n" not in error, error


async def test_a_wrong_app_password_is_said_to_the_operator(
    tmp_path: Path, server: Radicale, clock: Clock
) -> None:
    settings = dav_settings(tmp_path, server, [])
    wrong = settings.model_copy(update={"caldav_password_file": SecretStr("not the password")})
    async with Client(build_server(wrong, clock=clock)) as client:
        error = await call_error(client, "list_calendars")
    assert error == (
        "The CalDAV server refused the account (CALENDAR_CALDAV_USER and its app password): "
        "the operator should check them."
    )


def test_the_caldav_backend_needs_its_account_settings(tmp_path: Path) -> None:
    with pytest.raises(ValidationError) as raised:
        CalendarSettings(backend="caldav", data_dir=tmp_path, caldav_url="https://dav.example/")
    assert (
        "CALENDAR_BACKEND=caldav needs CALENDAR_CALDAV_USER, CALENDAR_CALDAV_PASSWORD_FILE"
        in str(raised.value)
    )


IMPORTED = """
import sys
from mcp_calendar.server import build_server
from mcp_calendar.settings import CalendarSettings
build_server(CalendarSettings(**{settings}))
print(sorted({{m.split(".")[0] for m in sys.modules}} & {{"caldav", "niquests", "lxml"}}))
"""


@pytest.mark.parametrize(("backend", "loaded"), [("local", False), ("caldav", True)])
def test_the_caldav_library_is_loaded_only_for_the_caldav_backend(
    tmp_path: Path, backend: str, loaded: bool
) -> None:
    password = tmp_path / "password"
    password.write_text("secret")
    settings = {"backend": backend, "data_dir": str(tmp_path / "data")}
    if backend == "caldav":
        settings |= {
            "caldav_url": "https://dav.example/",
            "caldav_user": "ada",
            "caldav_password_file": str(password),
        }
    found = subprocess.run(
        [sys.executable, "-c", IMPORTED.format(settings=settings)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert ("'caldav'" in found.stdout) is loaded
    if not loaded:
        assert found.stdout.strip() == "[]"
