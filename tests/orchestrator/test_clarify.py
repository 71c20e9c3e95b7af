"""clarify, through the dispatcher and the console: the turn ends with the question, the answer
(a tap, Other + text, or text to an open question) starts the next turn with the question
in the window; unanswered questions expire. Real memory server (embedded, real SQLite, on
a clock the tests move), the fake model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from fakes.clocked import CLOCK
from fakes.responses_api import call, calls, text
from fakes.world import World, clawdia, recording_console
from orchestrator.app import App
from orchestrator.channels.console import Console
from orchestrator.core.actions import NO_LONGER_ACTIVE
from orchestrator.core.clarify import EXPIRED, OTHER, TYPE_IT
from orchestrator.core.replies import Reply
from orchestrator.core.routes import Deliver, TapContext, TextContext

pytestmark = pytest.mark.anyio

CHAT = "4242"
WHICH = "Which Paris do you mean?"
CHOICES = ["Paris, France", "Paris, Texas"]


def ask(question: str = WHICH, choices: list[str] | None = CHOICES) -> Any:
    return calls(call("clarify", question=question, choices=choices))


class Chat:
    """A chat as Telegram gives it: each reply a new message; taps answered; edits kept."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.messages: list[Reply] = []
        self.notices: list[str] = []
        self.edits: list[tuple[str, Reply]] = []  # (message id, new content)

    async def deliver(self, reply: Reply) -> str:
        self.messages.append(reply)
        return str(len(self.messages))

    async def say(self, message: str) -> Reply:
        async def edit_message(message_id: str, reply: Reply) -> None:
            self.edits.append((message_id, reply))

        return await self.app.dispatcher.on_text(
            TextContext(
                "clawdia",
                CHAT,
                message,
                user=CHAT,
                deliver=Deliver(str(len(self.messages) + 1), self.deliver),
                edit_message=edit_message,
            ),
        )

    async def tap(
        self, label: str, message: int, tap_id: str | None = None, *, on: int | None = None
    ) -> None:
        """Tap the button ``label`` of ``message``; ``on``: its data, replayed on that
        other message of the chat."""
        tapped = str(on or message)

        async def answer(notice: str) -> None:
            self.notices.append(notice)

        async def edit(reply: Reply) -> None:
            self.edits.append((tapped, reply))

        data = next(b.data for row in self.messages[message - 1].buttons for b in row
                    if b.label == label)  # fmt: skip
        await self.app.dispatcher.on_callback(TapContext(
            "clawdia", CHAT, CHAT, tapped, data, answer, edit,
            deliver=Deliver(str(len(self.messages) + 1), self.deliver), tap_id=tap_id, key=tapped,
        ))  # fmt: skip


def user_messages(body: dict[str, Any]) -> list[str]:
    return [i["content"] for i in body["input"] if i.get("role") == "user"]


def labels(reply: Reply) -> list[str]:
    return [button.label for row in reply.buttons for button in row]


@pytest.fixture
async def app(world: World) -> AsyncIterator[App]:
    async with clawdia(world) as app:
        yield app


async def test_a_question_with_choices_ends_the_turn_and_a_tap_answers_it(
    world: World, app: App
) -> None:
    chat = Chat(app)
    world.llm.script(ask())
    asked = await chat.say("Weather in Paris?")
    assert len(world.llm.requests) == 1  # the turn ended with the question
    assert asked.text == f"❓ {WHICH}"
    assert labels(asked) == [*CHOICES, OTHER]

    world.llm.script(text("Sunny in Paris, Texas."))
    await chat.tap("Paris, Texas", message=1)

    assert chat.notices == ["→ Paris, Texas"]
    assert chat.edits == [("1", Reply(f"❓ {WHICH}\n→ Paris, Texas"))]
    assert chat.messages[-1].text == "Sunny in Paris, Texas."
    body = world.llm.requests[-1]
    assert user_messages(body) == ["Weather in Paris?", "Paris, Texas"]
    said = [i for i in body["input"] if i.get("role") == "assistant"]
    assert said[-1]["content"] == WHICH or WHICH in str(said[-1]["content"])
    assert any(i.get("name") == "clarify" for i in body["input"])  # the question is in the window


async def test_a_second_tap_answers_nothing_more(world: World, app: App) -> None:
    chat = Chat(app)
    world.llm.script(ask(), text("Sunny."))
    await chat.say("Weather in Paris?")
    await chat.tap("Paris, France", message=1)
    await chat.tap("Paris, Texas", message=1)

    assert chat.notices == ["→ Paris, France", "Already answered."]
    assert len(world.llm.requests) == 2


async def test_a_choice_replayed_on_another_message_of_the_chat_answers_nothing(
    world: World, app: App
) -> None:
    chat = Chat(app)
    world.llm.script(text("Hello!"), ask())
    await chat.say("hi")
    await chat.say("Weather in Paris?")
    await chat.tap("Paris, Texas", message=2, on=1)  # the question's data, on the greeting

    assert chat.notices == [NO_LONGER_ACTIVE]
    assert chat.edits == []
    assert len(world.llm.requests) == 2  # no turn
    world.llm.script(text("Sunny in Paris, Texas."))
    await chat.tap("Paris, Texas", message=2)  # where it was shown, it still answers
    assert chat.notices[-1] == "→ Paris, Texas"


async def test_a_tap_handed_over_again_after_a_crash_is_still_the_answer_and_stored_once(
    world: World, app: App
) -> None:
    # The channel hands a tap over again when the orchestrator died before acking it: its
    # turn may not have run. The same tap redoes it; the conversation keeps it once.
    chat = Chat(app)
    world.llm.script(ask(), text("Sunny in Paris, Texas."), text("Sunny again."))
    await chat.say("Weather in Paris?")
    await chat.tap("Paris, Texas", message=1, tap_id="bot:101")
    await chat.tap("Paris, Texas", message=1, tap_id="bot:101")

    assert chat.notices == ["→ Paris, Texas", "→ Paris, Texas"]
    assert len(world.llm.requests) == 3  # the turn, redone
    world.llm.script(text("You're welcome."))
    await chat.say("thanks")
    assert user_messages(world.llm.requests[-1]) == ["Weather in Paris?", "Paris, Texas", "thanks"]


async def test_another_tap_on_an_answered_question_answers_nothing_more(
    world: World, app: App
) -> None:
    chat = Chat(app)
    world.llm.script(ask(), text("Sunny."))
    await chat.say("Weather in Paris?")
    await chat.tap("Paris, Texas", message=1, tap_id="bot:101")
    await chat.tap("Paris, Texas", message=1, tap_id="bot:102")  # a double tap

    assert chat.notices == ["→ Paris, Texas", "Already answered."]
    assert len(world.llm.requests) == 2


async def test_the_other_tap_handed_over_again_after_the_typed_answer_answers_nothing(
    world: World, app: App
) -> None:
    chat = Chat(app)
    world.llm.script(ask(), text("Cloudy in Paris, Kentucky."))
    await chat.say("Weather in Paris?")
    await chat.tap(OTHER, message=1, tap_id="bot:101")
    await chat.say("Paris, Kentucky")
    await chat.tap(OTHER, message=1, tap_id="bot:101")

    assert chat.notices == [TYPE_IT, "Already answered."]
    assert len(world.llm.requests) == 2


async def test_other_then_text_answers_with_the_text(world: World, app: App) -> None:
    chat = Chat(app)
    world.llm.script(ask())
    await chat.say("Weather in Paris?")
    await chat.tap(OTHER, message=1)
    assert chat.notices == [TYPE_IT]
    assert chat.edits[-1] == ("1", Reply(f"❓ {WHICH}\n✏️ (type your answer)"))

    world.llm.script(text("Cloudy in Paris, Kentucky."))
    await chat.say("Paris, Kentucky")

    assert chat.edits[-1] == ("1", Reply(f"❓ {WHICH}\n→ Paris, Kentucky"))
    assert user_messages(world.llm.requests[-1]) == ["Weather in Paris?", "Paris, Kentucky"]
    assert chat.messages[-1].text == "Cloudy in Paris, Kentucky."


async def test_an_open_question_is_answered_by_the_next_text(world: World, app: App) -> None:
    chat = Chat(app)
    world.llm.script(ask("What should the reminder say?", None))
    asked = await chat.say("Remind me tomorrow")
    assert (asked.text, asked.buttons) == ("❓ What should the reminder say?", [])

    world.llm.script(text("Noted."), text("Hello again."))
    await chat.say("Call the dentist")
    await chat.say("hi")  # answered already: an ordinary message

    assert chat.edits == [("1", Reply("❓ What should the reminder say?\n→ Call the dentist"))]


async def test_an_expired_question_answers_expired_and_a_later_text_is_a_normal_message(
    world: World, app: App
) -> None:
    chat = Chat(app)
    world.llm.script(ask())
    await chat.say("Weather in Paris?")
    CLOCK.advance(3601)
    await chat.tap("Paris, France", message=1)
    await chat.tap("Paris, Texas", message=1)  # tapped before the edit removed it

    assert chat.notices == [EXPIRED, EXPIRED]
    assert chat.edits == [("1", Reply(f"❓ {WHICH}\n⌛ expired"))]  # drawn expired once
    assert len(world.llm.requests) == 1  # no turn

    world.llm.script(ask("Open question?", None))
    await chat.say("Weather in Lyon?")
    CLOCK.advance(3601)
    world.llm.script(text("Lyon: rain."))
    await chat.say("Lyon, then")

    assert len(chat.edits) == 1  # the expired open question was not redrawn with the text


async def test_the_console_numbers_the_choices_and_takes_a_number_or_typed_text(
    world: World, app: App
) -> None:
    written: list[str] = []
    world.llm.script(ask(), text("Sunny in Paris, France."))
    world.llm.script(ask("Which day?", ["Today"]), text("Tomorrow it rains."))

    async def lines() -> AsyncIterator[str]:
        for line in ["Weather in Paris?", "1", "And later?", "2", "Tomorrow"]:
            yield line + "\n"

    console = Console(app.dispatcher, "clawdia", write=written.append, color=False)
    await console.run(lines())

    output = "\n".join(written)
    assert f"❓ {WHICH}\n  [1] Paris, France\n  [2] Paris, Texas\n  [3] {OTHER}" in output
    assert "→ Paris, France" in written
    assert "Sunny in Paris, France." in written
    assert f"  [2] {OTHER}" in written
    assert "  (→ Tomorrow)" in written
    assert "Tomorrow it rains." in written


async def test_the_console_clears_thinking_before_every_line_and_shows_it_during_a_taps_turn(
    world: World, app: App
) -> None:
    world.llm.script(ask(), text("Sunny in Paris, Texas."))
    world.llm.script(ask("Which day?", ["Today"]), text("Tomorrow it rains."))
    shown: list[tuple[str, str]] = []

    async def lines() -> AsyncIterator[str]:
        for line in ["Weather in Paris?", "2", "And later?", "2", "Tomorrow"]:
            yield line + "\n"

    console = recording_console(app, shown)
    await console.run(lines())

    thinking, written = False, []
    for kind, value in shown:
        if kind == "status":
            thinking = value == "thinking…"
        else:
            written.append((value, thinking))
    assert not any(standing for _, standing in written), written  # a line never joins it
    # Between the tap's answer and the reply the model works: "thinking…" stands there.
    edited = shown.index(("line", "→ Paris, Texas"))
    replied = shown.index(("line", "Sunny in Paris, Texas."))
    assert ("status", "thinking…") in shown[edited:replied]
    assert "  (→ Tomorrow)" in [line for line, _ in written]
