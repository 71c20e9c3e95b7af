"""A calendar file sent in chat: the orchestrator's ``stage_import`` reads it and returns an
import proposal (its count or its one event, the skips and repairs folded under it), and
``confirm_import_events`` imports it once after the tap. Files as Outlook, Exchange, Google,
SabreDAV (Nextcloud) and a holiday feed write them: ``exports/`` and the calendar corpus."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from calendar_server.calls import approve, day, mint
from calendar_server.corpus import calendars
from fakes.clock import Clock
from fakes.tool_calls import call, call_error
from mcp_calendar.ics_files import import_file
from mcp_calendar.import_words import MAX_DETAIL
from mcp_calendar.imports import KEEP_S, MAX_WAITING
from mcp_calendar.server import build_server
from mcp_calendar.settings import CalendarSettings
from meshkit.wire.proposals import Proposal

pytestmark = pytest.mark.anyio

EXPORTS = Path(__file__).parent / "exports"
OUTLOOK = (EXPORTS / "outlook_eastern_weekly.ics").read_text()  # one weekly series
GOOGLE = (EXPORTS / "google_family.ics").read_text()  # a series and an orphaned override
HOLIDAYS = "recurring_ical_events/test/calendars/Germany_Holidays.ics"  # Calendar Labs, 34
GOOGLE_BROKEN = "icalendar/tests/calendars/parsing_error.ics"  # one event skipped
GOOGLE_BIG = "recurring_ical_events/test/calendars/issue_173_only_modifications_error.ics"
SABRE_EMPTY = "recurring_ical_events/test/calendars/no_events.ics"


def corpus(name: str) -> str:
    [found] = [f.text for f in calendars() if f.name == name]
    return found.decode("utf-8")


async def stage(client: Client[Any], ics: str, **arguments: Any) -> dict[str, Any]:
    """What the orchestrator does with a file the user sent: stage_import, for clawdia."""
    proposal = await call(client, "stage_import", agent="clawdia", ics=ics, **arguments)
    Proposal.model_validate(proposal)
    return proposal


def stored(settings: CalendarSettings) -> list[tuple[Any, ...]]:
    """Every event row and component of the calendar."""
    with closing(sqlite3.connect(settings.db_path)) as db:
        return (
            db.execute("SELECT * FROM events ORDER BY uid").fetchall()
            + db.execute("SELECT * FROM components ORDER BY uid, rid").fetchall()
        )


def staged_ids(settings: CalendarSettings) -> list[str]:
    with closing(sqlite3.connect(settings.db_path)) as db:
        return [row[0] for row in db.execute("SELECT id FROM staged_imports ORDER BY created_at")]


async def test_an_outlook_invitation_is_proposed_by_its_title_and_time_and_imports_nothing_yet(
    client: Client[Any], settings: CalendarSettings
) -> None:
    proposal = await stage(client, OUTLOOK, file_name="Team sync.ics")

    assert proposal["kind"] == "import_events"
    assert proposal["summary"] == (
        "Import “Team sync” (repeating from Thu 26 Feb 2026, 17:00–18:00, Europe/Berlin) "
        "into personal?"
    )
    assert (proposal["confirm_label"], proposal["cancel_label"]) == ("📥 Import", "Skip")
    assert proposal["tap_only"] is True
    assert proposal["ttl_s"] == 24 * 3600
    assert "detail" not in proposal  # one event, nothing skipped or repaired: the summary says it
    payload = proposal["payload"]
    assert sorted(payload) == ["agent", "calendar", "events", "import_id", "sha256"]
    assert payload["agent"] == "clawdia"
    assert payload["calendar"] == "personal"
    assert payload["events"] == 1
    assert payload["sha256"] == hashlib.sha256(OUTLOOK.encode()).hexdigest()
    assert len(json.dumps(payload)) < 200  # the file stays here: the payload names it
    assert staged_ids(settings) == [payload["import_id"]]
    assert stored(settings) == []


async def test_a_google_export_lists_its_events_and_the_repair_under_the_summary(
    client: Client[Any],
) -> None:
    proposal = await stage(client, GOOGLE)

    assert proposal["summary"] == "Import 2 events into personal?"
    assert proposal["detail"] == (
        "Events (2, times in Europe/Berlin):\n"
        "• “Choir” repeating from Tue 17 Mar 2026, 18:30–19:30\n"
        "• “Design review” Thu 19 Mar 2026, 10:00–11:00\n"
        "Repaired while reading (1):\n"
        "• UID 5f2c8d1e9a3b4c7d8e0f1a2b3c@google.com: changed occurrences without their "
        "series: imported as single events"
    )


async def test_a_holiday_feed_with_a_repair_per_event_cuts_each_list_with_and_n_more(
    client: Client[Any],
) -> None:
    proposal = await stage(client, corpus(HOLIDAYS))

    lines = proposal["detail"].split("\n")
    assert proposal["summary"] == "Import 34 events into personal?"
    assert lines[0] == "Events (34, times in Europe/Berlin):"
    assert lines[1].startswith("• “")
    assert lines[11] == "… and 24 more"
    assert lines[12] == "Repaired while reading (34):"
    assert lines[13] == (
        "• event 1 (“New Year's Day”): its RRULE is empty: it was read as a single event"
    )
    assert lines[23:] == ["… and 24 more"]
    assert len(proposal["detail"]) <= MAX_DETAIL


async def test_an_event_the_file_gets_wrong_is_named_as_skipped_and_the_rest_proposed(
    client: Client[Any],
) -> None:
    proposal = await stage(client, corpus(GOOGLE_BROKEN))

    assert proposal["summary"] == (
        "Import an untitled event (repeating from Mon 3 Mar 2008, all day) into personal?"
    )
    assert proposal["payload"]["events"] == 1
    detail = proposal["detail"].split("\n")
    assert detail[:2] == [
        "Skipped, cannot be read (1):",
        "• event 2 (“untitled”): EXDATE does not parse (Expected datetime, date, or time. Got: '')",
    ]
    assert detail[2] == "Repaired while reading (1):"
    assert detail[3].startswith("• event 1 (“untitled”): it has no UID: it was given ")


async def test_a_tap_imports_the_file_once_and_the_same_approval_again_answers_the_first_result(
    client: Client[Any], clock: Clock, settings: CalendarSettings
) -> None:
    proposal = await stage(client, corpus(GOOGLE_BROKEN))

    first = await approve(client, clock, proposal, action_id="act_00000000beef")
    after_first = stored(settings)
    replay = await approve(client, clock, proposal, action_id="act_00000000beef")

    assert first == {
        "message": "Imported 1 event into personal (1 skipped).",
        "replayed": False,
        "calendar": "personal",
        "imported": 1,
        "unchanged": 0,
        "moved": 0,
        "skipped": 1,
    }
    assert replay == {**first, "replayed": True}
    assert stored(settings) == after_first
    assert len([row for row in after_first if len(row) == 7]) == 1  # one event row


async def test_a_google_export_is_in_the_calendar_after_the_tap(
    client: Client[Any], clock: Clock
) -> None:
    proposal = await stage(client, GOOGLE)

    done = await approve(client, clock, proposal)

    assert done["message"] == "Imported 2 events into personal."
    assert await day(client, "2026-03-17", end="2026-03-19") == [
        ("Choir", "2026-03-17T18:30:00+01:00", "2026-03-17T19:30:00+01:00"),
        ("Design review", "2026-03-19T10:00:00+01:00", "2026-03-19T11:00:00+01:00"),
    ]


async def test_a_large_google_export_is_staged_and_imported_whole(
    client: Client[Any], clock: Clock, settings: CalendarSettings
) -> None:
    text = corpus(GOOGLE_BIG)  # 212 kB, 499 events

    proposal = await stage(client, text)
    done = await approve(client, clock, proposal)

    assert len(text) > 200_000
    assert proposal["summary"] == "Import 499 events into personal?"
    assert len(proposal["detail"]) <= MAX_DETAIL
    assert done["message"] == "Imported 499 events into personal."
    with closing(sqlite3.connect(settings.db_path)) as db:
        assert db.execute("SELECT count(*) FROM events").fetchone() == (499,)


async def test_the_same_file_twice_adds_no_event_twice(
    client: Client[Any], clock: Clock, settings: CalendarSettings
) -> None:
    early = await stage(client, GOOGLE)
    late = await stage(client, GOOGLE)  # sent twice before either tap
    await approve(client, clock, early)
    after_one = stored(settings)

    again = await approve(client, clock, late)
    staged_after = await call_error(client, "stage_import", agent="clawdia", ics=GOOGLE)

    assert again["message"] == "Nothing new to import into personal (2 already there)."
    assert (again["imported"], again["unchanged"]) == (0, 2)
    assert stored(settings) == after_one
    assert staged_after == (
        "Nothing to import: 2 events are in personal already, as the file has them."
    )


async def test_a_file_partly_in_the_calendar_already_proposes_only_what_is_new(
    client: Client[Any], clock: Clock
) -> None:
    await approve(client, clock, await stage(client, GOOGLE))

    proposal = await stage(client, GOOGLE + OUTLOOK)
    done = await approve(client, clock, proposal)

    assert proposal["summary"] == (
        "Import “Team sync” (repeating from Thu 26 Feb 2026, 17:00–18:00, Europe/Berlin) "
        "into personal?"
    )
    assert proposal["payload"]["events"] == 3
    assert proposal["detail"].split("\n")[0] == "Unchanged, in personal already: 2"
    assert done["message"] == "Imported 1 event into personal (2 already there)."


async def test_an_approval_for_another_payload_or_agent_imports_nothing(
    client: Client[Any], clock: Clock, settings: CalendarSettings
) -> None:
    proposal = await stage(client, GOOGLE)
    other = await stage(client, OUTLOOK)
    payload = proposal["payload"]
    as_bob = {**payload, "agent": "bob"}  # clawdia's file, in a payload for bob
    swapped = {**payload, "import_id": other["payload"]["import_id"]}  # another file

    def refused(changed: dict[str, Any], token: str) -> Any:
        return call_error(client, "confirm_import_events", payload=changed, approval=token)

    none = await refused(payload, "")
    for_bob = await refused(payload, mint(clock, "import_events", payload, agent="bob"))
    altered = await refused(swapped, mint(clock, "import_events", payload))
    other_kind = await refused(payload, mint(clock, "event_add", payload))
    bobs_own = await refused(as_bob, mint(clock, "import_events", as_bob))
    not_its_file = await refused(swapped, mint(clock, "import_events", swapped))

    assert none.startswith("This change needs an approval token from a user's Confirm tap")
    for message in (for_bob, altered, other_kind):
        assert message.startswith("The approval token does not match this change")
    assert bobs_own == (
        f"The approval does not match the calendar file staged as {payload['import_id']}. "
        "Nothing was imported."
    )
    assert not_its_file == (
        "The approval does not match the calendar file staged as "
        f"{other['payload']['import_id']}. Nothing was imported."
    )
    assert stored(settings) == []


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            "Hi! See you Tuesday at 10, Jo",
            "This file is not an iCalendar (.ics) file (it holds no BEGIN:VCALENDAR). "
            "Nothing was imported.",
        ),
        (
            '{"events": [{"title": "Team sync"}]}',
            "This file is not an iCalendar (.ics) file (it holds no BEGIN:VCALENDAR). "
            "Nothing was imported.",
        ),
        (
            "BEGIN:VCALENDAR\nVERSION:2.0\nBEGIN:VTODO\nSUMMARY:Taxes",
            "This iCalendar file holds no events. Nothing was imported.",
        ),
        (corpus(SABRE_EMPTY), "This iCalendar file holds no events. Nothing was imported."),
        (
            "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nUID:x@example.com\r\n"
            "SUMMARY:Flood\r\nDTSTART:20260317T100000Z\r\nRRULE:FREQ=SECONDLY\r\n"
            "END:VEVENT\r\nEND:VCALENDAR\r\n",
            "No event in this file can be imported: UID x@example.com: its RRULE cannot be "
            "used: FREQ=SECONDLY repeats more often than hourly; a calendar event repeats at "
            "most hourly (every few minutes: set a reminder instead). Nothing was imported.",
        ),
    ],
    ids=["a note", "json", "a task cut short", "no events", "every event refused"],
)
async def test_a_file_that_cannot_be_imported_is_refused_in_one_line(
    client: Client[Any], settings: CalendarSettings, text: str, said: str
) -> None:
    error = await call_error(client, "stage_import", agent="clawdia", ics=text)

    assert error == said
    assert staged_ids(settings) == []


async def test_a_file_over_the_bound_is_refused_in_one_line_before_it_is_read(
    client: Client[Any], settings: CalendarSettings
) -> None:
    text = (GOOGLE * 1000)[:900_001]

    error = await call_error(client, "stage_import", agent="clawdia", ics=text)

    assert error == (
        "This file is too large to import here (900,001 characters; at most 900,000). "
        "Nothing was imported."
    )
    assert staged_ids(settings) == []


async def test_a_staged_import_past_its_time_is_gone_and_says_to_send_the_file_again(
    client: Client[Any], clock: Clock, settings: CalendarSettings
) -> None:
    proposal = await stage(client, GOOGLE)
    clock.advance(KEEP_S + 1)

    error = await call_error(
        client,
        "confirm_import_events",
        payload=proposal["payload"],
        approval=mint(clock, "import_events", proposal["payload"]),
    )
    await stage(client, OUTLOOK)  # staging forgets what waited too long

    assert error == (
        "This calendar file is no longer waiting to be imported (a file waits 24 hours): "
        "send it again. Nothing was imported."
    )
    assert proposal["payload"]["import_id"] not in staged_ids(settings)
    assert len(staged_ids(settings)) == 1
    assert [r for r in stored(settings) if "Choir" in r] == []


async def test_an_agent_has_twenty_files_waiting_at_most_and_the_oldest_is_forgotten(
    client: Client[Any], clock: Clock, settings: CalendarSettings
) -> None:
    oldest = await stage(client, GOOGLE)
    for _ in range(MAX_WAITING):
        clock.advance(60)
        await stage(client, OUTLOOK)
    others = await call(client, "stage_import", agent="bob", ics=GOOGLE)  # bob's own count

    error = await call_error(
        client,
        "confirm_import_events",
        payload=oldest["payload"],
        approval=mint(clock, "import_events", oldest["payload"]),
    )

    assert MAX_WAITING == 20
    assert len(staged_ids(settings)) == MAX_WAITING + 1
    assert oldest["payload"]["import_id"] not in staged_ids(settings)
    assert others["payload"]["import_id"] in staged_ids(settings)
    assert error.startswith("This calendar file is no longer waiting to be imported")


async def test_a_read_only_calendar_takes_no_import_and_keeps_its_events(
    client: Client[Any], clock: Clock, settings: CalendarSettings
) -> None:
    await import_file(settings, OUTLOOK.encode(), "shared", writable=False, at=0)
    both = OUTLOOK + GOOGLE  # two VCALENDARs in one file: three events

    into_shared = await call_error(
        client, "stage_import", agent="clawdia", ics=GOOGLE, calendar="shared"
    )
    proposal = await stage(client, both)
    done = await approve(client, clock, proposal)

    assert into_shared == (
        "The calendar 'shared' is read-only: it cannot be changed here. "
        "Writable calendars: personal."
    )
    assert proposal["summary"] == "Import 2 events into personal?"
    assert "Left in the read-only calendar shared: 1" in proposal["detail"].split("\n")
    assert done["message"] == "Imported 2 events into personal (1 left in the read-only shared)."
    assert done["skipped"] == 1
    events = await call(client, "get_events", start="2026-02-26")
    assert [(e["title"], e["calendar"]) for e in events["events"]] == [("Team sync", "shared")]


async def test_events_in_another_writable_calendar_move_into_the_one_imported_into(
    client: Client[Any], clock: Clock, settings: CalendarSettings
) -> None:
    await import_file(settings, GOOGLE.encode(), "work", writable=True, at=0)

    proposal = await stage(client, GOOGLE)
    done = await approve(client, clock, proposal)

    assert "Moving here from work: 2" in proposal["detail"].split("\n")
    assert done["message"] == "Imported 2 events into personal (2 moved from work)."
    events = await call(client, "get_events", start="2026-03-17", end="2026-03-19")
    assert {e["calendar"] for e in events["events"]} == {"personal"}


async def test_a_calendar_that_does_not_exist_is_named_with_those_that_do(
    client: Client[Any],
) -> None:
    error = await call_error(
        client, "stage_import", agent="clawdia", ics=GOOGLE, calendar="holidays"
    )

    assert error == "There is no calendar 'holidays'. Calendars: personal."


async def test_google_and_caldav_calendars_say_where_to_import_instead(
    tmp_path: Path, clock: Clock
) -> None:
    password = tmp_path / "caldav_password"
    password.write_text("app-password\n")
    unreachable = "http://127.0.0.1:9/"  # nothing is asked of either before the refusal
    google = CalendarSettings(
        backend="google",
        timezone="Europe/Berlin",
        data_dir=tmp_path / "google",
        credentials_dir=tmp_path / "credentials",
        google_api_url=unreachable,
        google_token_url=unreachable,
    )
    caldav = CalendarSettings(
        backend="caldav",
        timezone="Europe/Berlin",
        data_dir=tmp_path / "caldav",
        caldav_url=unreachable,
        caldav_user="ada",
        caldav_password_file=str(password),
    )
    said = {}
    for settings in (google, caldav):
        async with Client(build_server(settings, clock=clock)) as other:
            said[settings.backend] = await call_error(
                other, "stage_import", agent="clawdia", ics=GOOGLE
            )

    assert said == {
        "google": "Calendar files are imported into the local calendar only, and this one is "
        "Google Calendar: import the file there (calendar.google.com, Settings, Import & "
        "export). Nothing was imported.",
        "caldav": "Calendar files are imported into the local calendar only, and this one is "
        "on a CalDAV server: import the file with your calendar app. Nothing was imported.",
    }


async def test_stage_import_is_the_orchestrators_and_confirm_import_events_needs_a_tap(
    client: Client[Any],
) -> None:
    tools = {tool.name: tool for tool in await client.list_tools()}

    stage_tool, confirm_tool = tools["stage_import"], tools["confirm_import_events"]
    assert stage_tool.meta == {"fastmcp": {"tags": ["internal"]}}  # no context: never the model's
    assert confirm_tool.meta == {"fastmcp": {"tags": ["confirm"]}}
    ics = stage_tool.input_schema["properties"]["ics"]
    assert ics["maxLength"] == 1_048_576  # MESH_MAX_BODY_BYTES: no request holds more
    assert "at most 900,000 characters" in ics["description"]
    assert stage_tool.input_schema["required"] == ["agent", "ics"]
