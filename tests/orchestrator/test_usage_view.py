"""/usage and its /status line, over usage the real memory server keeps (written through
its record_usage tool), for clawdia in Europe/Paris.

The clock stands at 2026-11-27 23:30 UTC: in Paris it is already Saturday 28 November,
00:30. Calls after 23:00 UTC are the agent's today; one at 22:40 UTC (23:40 in Paris) is
its yesterday though UTC's today; one at 23:30 UTC on 31 October (1 November, 00:30 in
Paris) is in its November though UTC's October.
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from fakes.usage_records import OTHER, OWNER, call, record, utc, write_fleet
from fakes.world import World, clawdia, tap_in
from meshkit.wire.proposals import Proposal
from meshkit.wire.usage import AllowMorePayload
from orchestrator.app import App
from orchestrator.core.actions import Where
from orchestrator.core.allowance_limits import periods
from orchestrator.core.routes import CommandContext, TextContext
from orchestrator.core.usage_book import UsageBook
from orchestrator.core.usage_view import UsageView

pytestmark = pytest.mark.anyio

NOW = utc("2026-11-27 23:30")

THE_MONTH = [
    # the agent's today (Sat 28 Nov in Paris)
    call(utc("2026-11-27 23:05"), OWNER, turn_id="t1", tokens=(4_100, 0, 350)),
    call(utc("2026-11-27 23:06"), OWNER, turn_id="t1", tokens=(5_200, 3_000, 610)),
    call(utc("2026-11-27 23:10"), OTHER, turn_id="t2", tokens=(3_900, 0, 220)),
    call(utc("2026-11-27 23:12"), OWNER, purpose="summary", tokens=(2_500, 0, 180)),
    call(utc("2026-11-27 23:15"), OTHER, turn_id="t3", tokens=None),  # no usage reported
    call(
        utc("2026-11-27 23:20"),
        OWNER,
        turn_id="t4",
        model="gpt-9-preview",
        priced=False,
        tokens=(1_000, 0, 100),
    ),
    # earlier this month, in Paris
    call(utc("2026-11-27 22:40"), OWNER, purpose="briefing", tokens=(6_000, 0, 900)),
    call(utc("2026-11-03 09:00"), OWNER, turn_id="t0", model="gpt-5", tokens=(12_000, 0, 2_500)),
    call(
        utc("2026-10-31 23:30"),
        OTHER,
        purpose="scheduled",
        turn_id="fire-1",
        tokens=(8_000, 0, 1_200),
    ),
    # October in Paris too
    call(utc("2026-10-31 22:30"), OWNER, turn_id="t-oct", tokens=(3_000, 0, 300)),
]


@pytest.fixture
async def app(world: World) -> AsyncIterator[App]:
    write_fleet(world.settings.agents)
    async with clawdia(world) as app:
        yield app


async def usage_at(app: App, user: str, now: float = NOW) -> str:
    view = UsageView(UsageBook(app.registry), app.dispatcher.agents, "USD", clock=lambda: now)
    runtime = app.dispatcher.agents["clawdia"]
    return (await view.command(CommandContext(runtime, user, user))).text


async def test_usage_counts_today_and_this_month_from_the_agents_midnight_not_utcs(
    app: App,
) -> None:
    await record(app.registry, *THE_MONTH)

    lines = (await usage_at(app, OWNER)).splitlines()

    assert lines[:3] == [
        "📊 Usage of Clawdia — today is Sat 28 Nov (Europe/Paris)",
        "Today: $0.0060 · 18k tokens · 6 calls (not counted: 1 call reported no usage, "
        "1 call of a model without a price)",
        "This month (November): $0.05 · 49k tokens · 9 calls (not counted: 1 call reported "
        "no usage, 1 call of a model without a price)",
    ]
    assert lines[3:8] == [
        "By purpose:",
        "• messages: today $0.0050 (15k tokens), this month $0.04 (30k tokens)",
        "• scheduled prompts: today nothing, this month $0.0044 (9,200 tokens)",
        "• briefings: today nothing, this month $0.0033 (6,900 tokens)",
        "• summaries: today $0.0010 (2,680 tokens), this month $0.0010 (2,680 tokens)",
    ]


async def test_each_limit_says_where_it_stands_for_the_asking_user_and_when_it_renews(
    app: App,
) -> None:
    await record(app.registry, *THE_MONTH)

    owner = (await usage_at(app, OWNER)).splitlines()
    other = (await usage_at(app, OTHER)).splitlines()

    renews_today = "renews at midnight (Europe/Paris), in 23h 30m"
    assert owner[owner.index("Allowance:") + 1 :][:3] == [
        f"• Daily allowance: $0.0060 of $0.05 · 12 % · {renews_today} "
        "(not counted: 2 calls of unknown cost)",
        "• Monthly allowance: $0.05 of $1.00 · 5 % · renews on Tue 1 Dec (Europe/Paris) "
        "(not counted: 2 calls of unknown cost)",
        f"🛑 Your daily allowance: 14k tokens of 10k tokens · reached · {renews_today}",
    ]
    assert (
        f"• Your daily allowance: 4,120 tokens of 10k tokens · 41 % · {renews_today} "
        "(not counted: 1 call of unknown usage)"
    ) in other


async def test_the_most_expensive_turns_of_the_month_come_costliest_first(app: App) -> None:
    await record(app.registry, *THE_MONTH)

    lines = (await usage_at(app, OWNER)).splitlines()

    top = lines[lines.index("Most expensive this month:") + 1 :]
    assert top[:4] == [
        "1. $0.04 · message · Tue 3 Nov 10:00 · 1 call, 14k tokens",
        "2. $0.0044 · scheduled prompt · Sun 1 Nov 00:30 · 1 call, 9,200 tokens · for 222",
        "3. $0.0036 · message · Sat 28 Nov 00:05 · 2 calls, 10k tokens",
        "4. $0.0033 · briefing · Fri 27 Nov 23:40 · 1 call, 6,900 tokens",
    ]


async def test_another_user_sees_their_own_usage_not_the_owners(app: App) -> None:
    await record(app.registry, *THE_MONTH)

    text = await usage_at(app, OTHER)

    assert text.startswith("📊 Your usage of Clawdia — today is Sat 28 Nov (Europe/Paris)\n")
    assert (
        "\nToday: $0.0014 · 4,120 tokens · 2 calls (not counted: 1 call reported no usage)\n"
        in text
    )
    assert "This month (November): $0.0058 · 13k tokens · 3 calls" in text
    assert "1. $0.0044 · scheduled prompt · Sun 1 Nov 00:30 · 1 call, 9,200 tokens" in text
    assert "$0.04 · message" not in text  # the owner's turn
    assert "for 111" not in text
    # The agent's limits are shared: where they stand is everyone's.
    assert "• Daily allowance: $0.0060 of $0.05 · 12 %" in text


async def test_the_console_sees_the_whole_agent_as_its_owner_does(app: App) -> None:
    """The operator at the terminal: a user Telegram would never admit."""
    await record(app.registry, *THE_MONTH)

    text = await usage_at(app, "console")

    assert text.startswith("📊 Usage of Clawdia — today is Sat 28 Nov (Europe/Paris)\n")
    assert "1. $0.04 · message · Tue 3 Nov 10:00 · 1 call, 14k tokens · for 111" in text


async def test_usage_before_any_call_says_nothing_yet(app: App) -> None:
    text = await usage_at(app, OWNER)

    assert "Today: nothing yet\nThis month (November): nothing yet\nAllowance:\n" in text
    assert "• Daily allowance: $0.00 of $0.05 · 0 %" in text
    assert "Most expensive" not in text


async def test_usage_is_a_command_of_the_dispatcher_listed_in_help(app: App) -> None:
    now = time.time()
    await record(
        app.registry,
        call(now - 2, OWNER, turn_id="a", tokens=(4_100, 0, 350)),
        call(now - 1, OTHER, turn_id="b", tokens=(3_900, 0, 220)),
    )

    reply = await app.dispatcher.on_text(TextContext("clawdia", OWNER, "/usage", user=OWNER))
    help_text = await app.dispatcher.on_text(TextContext("clawdia", OWNER, "/help", user=OWNER))

    assert reply.text.startswith("📊 Usage of Clawdia — today is ")
    assert "\nToday: $0.0031 · 8,570 tokens · 2 calls\n" in reply.text
    assert "• Daily allowance: $0.0031 of $0.05 · 6 %" in reply.text
    assert "/usage (what the model cost today and this month)" in help_text.text


async def test_the_days_grants_are_listed_and_raise_what_the_limits_allow(app: App) -> None:
    now = time.time()
    today = periods("Europe/Paris", datetime.fromtimestamp(now, UTC)).day
    await record(app.registry, call(now - 1, OWNER, turn_id="a", tokens=(4_100, 0, 350)))
    more = AllowMorePayload(agent="clawdia", user=OWNER, day=today, amount=0.02, unit="money")
    proposal = Proposal(kind="allow_more", summary="Allow $0.02 more today",
                        payload=more.model_dump(), confirm_label="➕ Allow")  # fmt: skip
    where = Where("clawdia", OWNER, OWNER, "Europe/Paris")
    offer = await app.dispatcher.desk.stage(where, "Limit reached.", [("memory", proposal)],
                                            key="msg-1")  # fmt: skip
    await tap_in(app, OWNER, "msg-1", offer, "Allow")

    owner = (await app.dispatcher.on_text(TextContext("clawdia", OWNER, "/usage", user=OWNER))).text
    other = (await app.dispatcher.on_text(TextContext("clawdia", OTHER, "/usage", user=OTHER))).text

    assert "• Daily allowance: $0.0017 of $0.07 ($0.05 + $0.02 allowed today) · 2 %" in owner
    assert re.search(r"\nAllowed more today:\n• \+\$0\.02 for you at [0-9]{2}:[0-9]{2}\n", owner)
    assert "Allowed more today" not in other  # the owner's grant is theirs to see
    assert "• Daily allowance: $0.0017 of $0.07 ($0.05 + $0.02 allowed today)" in other


async def test_status_has_one_line_of_usage(app: App) -> None:
    now = time.time()
    await record(
        app.registry,
        call(now - 2, OWNER, turn_id="a", tokens=(4_100, 0, 350)),
        call(now - 1, OTHER, turn_id="b", tokens=None),
    )

    status = (
        await app.dispatcher.on_text(TextContext("clawdia", OWNER, "/status", user=OWNER))
    ).text

    usage = [line for line in status.splitlines() if line.startswith("📊")]
    assert usage == [
        "📊 Usage: today $0.0017 (2 calls, 1 of unknown cost), this month $0.0017 (2 calls, "
        "1 of unknown cost) · daily allowance 3 % · monthly allowance 0 % · /usage"
    ]
