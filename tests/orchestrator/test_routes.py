"""The routes: each button's data and each update kind has one handler; the rest is refused.

In-process clawdia (fakes/world.py): real servers, the fake model. Its registry has no
scheduler, so a reminder's button is refused like an unknown one and ``/jobs`` is no
command of it.
"""

from __future__ import annotations

from typing import get_args

import pytest

from fakes.world import World, clawdia
from meshkit.wire.telegram_io import Kind
from orchestrator.channels.telegram_answer import UpdateAnswerer
from orchestrator.channels.telegram_io import TelegramIO
from orchestrator.channels.telegram_media import MEDIA_LIMITS, MediaReader
from orchestrator.core.actions import NO_LONGER_ACTIVE
from orchestrator.core.callbacks import (
    PREFIXES,
    ChoiceTap,
    ForgetTap,
    ReminderTap,
    Tap,
    decode,
    decode_choice,
    decode_forget,
    decode_grant_end,
    decode_reminder,
    encode,
    encode_choice,
    encode_forget,
    encode_grant_end,
    encode_reminder,
    prefix_of,
)
from orchestrator.core.replies import Reply
from orchestrator.core.routes import Deliver, TapContext, TextContext

pytestmark = pytest.mark.anyio

CHAT = "4242"

# One button of each format core/callbacks.py writes.
EVERY_FORMAT = [
    encode(Tap("action", "confirm", "act_0123456789ab")),
    encode(Tap("action", "cancel", "act_0123456789ab")),
    encode(Tap("action", "grant", "act_0123456789ab")),
    encode(Tap("batch", "confirm", "bat_0123456789ab")),
    encode(Tap("batch", "cancel", "bat_0123456789ab")),
    encode_choice(ChoiceTap("q_0123456789ab", 0)),
    encode_choice(ChoiceTap("q_0123456789ab", None)),
    encode_forget(ForgetTap("mem_0123456789ab")),
    encode_reminder(ReminderTap("done", "fir_0123456789ab")),
    encode_reminder(ReminderTap("snooze_10", "fir_0123456789ab")),
    encode_reminder(ReminderTap("snooze_60", "fir_0123456789ab")),
    encode_grant_end("grt_0123456789ab"),
]
DECODERS = (decode, decode_choice, decode_forget, decode_reminder, decode_grant_end)


async def test_every_callback_format_and_update_kind_has_exactly_one_route(world: World) -> None:
    for data in EVERY_FORMAT:  # one reader for each: a tap cannot be two things
        assert sum(read(data) is not None for read in DECODERS) == 1, data
    async with clawdia(world) as app:
        taps = app.dispatcher.tap_routes
        assert {prefix_of(data) for data in EVERY_FORMAT} == set(taps) == PREFIXES
        io = TelegramIO(app.registry, consumer="test", run="test")
        reader = MediaReader(io, None, limits=MEDIA_LIMITS, meter=None)
        answerer = UpdateAnswerer(
            app.dispatcher, io, typing_after_s=0.3, typing_every_s=4.0, reader=reader,
            sleep=_never,
        )  # fmt: skip
        assert set(answerer.routes) == set(get_args(Kind))
        listed = app.dispatcher.commands()
        assert list(listed) == [
            "/new", "/memory", "/stop", "/status", "/grants", "/audit", "/reload", "/help",
            "/usage",  # memory keeps the usage
        ]  # fmt: skip


@pytest.mark.parametrize(
    "data",
    [
        "",
        "zz:c:act_0123456789ab",  # no such route
        "pa:c:act_0123456789ab",  # well formed, but no such action
        "pb:z:bat_0123456789ab",
        "cl:q_0123456789ab:9",
        "mf:mem_nothex",
        "rm:d:fir_0123456789ab",  # no scheduler here: no reminder of ours was ever sent
        "rm:x:fir_0123456789ab",
    ],
)
async def test_an_unknown_or_forged_button_is_refused_and_nothing_runs(
    world: World, data: str
) -> None:
    notices: list[str] = []
    changed: list[Reply] = []

    async def answer(notice: str) -> None:
        notices.append(notice)

    async def edit(reply: Reply) -> None:
        changed.append(reply)

    async def deliver(reply: Reply) -> str:
        changed.append(reply)
        return "2"

    async with clawdia(world) as app:
        tap = TapContext(
            "clawdia", CHAT, CHAT, "1", data, answer, edit, Deliver("2", deliver), "bot:7", "1"
        )
        await app.dispatcher.on_callback(tap)
    assert notices == [NO_LONGER_ACTIVE]
    assert changed == []  # no message edited, none sent
    assert world.llm.requests == []  # no turn


async def test_a_command_no_component_gave_is_unknown_and_not_listed(world: World) -> None:
    async with clawdia(world) as app:
        jobs = (await app.dispatcher.on_text(TextContext("clawdia", CHAT, "/jobs", user=CHAT))).text
        listed = (
            await app.dispatcher.on_text(TextContext("clawdia", CHAT, "/help", user=CHAT))
        ).text
        started = (
            await app.dispatcher.on_text(TextContext("clawdia", CHAT, "/start", user=CHAT))
        ).text
    assert jobs.startswith("I don't know /jobs. Commands: /new (start a fresh conversation)")
    assert "/jobs" not in listed
    assert "/help (what I can do)" in listed
    assert started == listed  # Telegram's first command is /help, unlisted
    assert world.llm.requests == []


async def _never(_: float) -> None:
    return None
