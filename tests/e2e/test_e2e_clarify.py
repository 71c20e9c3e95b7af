"""clarify across an orchestrator restart: the question is stored by the memory server, so a
restart between the question and its answer changes nothing for the user. Real processes
(``make run``'s shape: one orchestrator with every server in it), fake Telegram and model."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from fakes.mesh import TOKENS, USER, Mesh, running_embedded, running_mesh
from fakes.responses_api import HANG, call, calls, text
from fakes.telegram_api import Sent

pytestmark = pytest.mark.anyio

CLAWDIA = TOKENS["clawdia"]
WHICH = "Which Paris do you mean?"


def labels(message: Sent) -> list[str]:
    rows = (message.reply_markup or {}).get("inline_keyboard", [])
    return [button["text"] for row in rows for button in row]


def data_of(message: Sent, label: str) -> str:
    rows = (message.reply_markup or {}).get("inline_keyboard", [])
    return next(str(b["callback_data"]) for row in rows for b in row if b["text"] == label)


async def question(mesh: Mesh) -> Sent:
    mesh.llm.script(
        calls(call("clarify", question=WHICH, choices=["Paris, France", "Paris, Texas"]))
    )
    mesh.telegram.user_message(CLAWDIA, USER, "Weather in Paris?")
    await mesh.telegram.wait_for(lambda: len(mesh.telegram.sent(CLAWDIA, USER)) == 1, 60)
    # The question is stored, bound to its message's key, before the send that acks the update.
    await mesh.all_acked()
    return mesh.telegram.sent(CLAWDIA, USER)[0]


async def restart(mesh: Mesh) -> None:
    """Stopped as ``make run`` is (SIGTERM: the question's update is acked first), started."""
    mesh.orchestrator.send_signal(signal.SIGTERM)
    assert await mesh.orchestrator.exited() == 0
    await mesh.orchestrator.start()


def notices(mesh: Mesh) -> list[str]:
    return [str(answer.text) for answer in mesh.telegram.callback_answers(CLAWDIA)]


def user_messages(mesh: Mesh) -> list[str]:
    return [i["content"] for i in mesh.llm.requests[-1]["input"] if i.get("role") == "user"]


async def test_a_question_asked_before_a_restart_is_answered_by_a_tap_after_it(
    tmp_path: Path,
) -> None:
    async with running_embedded(tmp_path) as mesh:
        asked = await question(mesh)
        assert asked.text == f"❓ {WHICH}"
        assert labels(asked) == ["Paris, France", "Paris, Texas", "✏️ Other (type answer)"]
        await restart(mesh)

        mesh.llm.script(text("Sunny in Paris, Texas."))
        mesh.telegram.tap(CLAWDIA, USER, asked.message_id, data_of(asked, "Paris, Texas"))
        await mesh.telegram.wait_for(lambda: len(mesh.telegram.sent(CLAWDIA, USER)) == 2, 60)

        assert asked.edits[-1].text == f"❓ {WHICH}\n→ Paris, Texas"
        assert labels(asked) == []  # the edit took the buttons away
        assert mesh.telegram.sent(CLAWDIA, USER)[1].text == "Sunny in Paris, Texas."
        assert [a.text for a in mesh.telegram.callback_answers(CLAWDIA)] == ["→ Paris, Texas"]
        assert user_messages(mesh) == ["Weather in Paris?", "Paris, Texas"]


async def test_other_tapped_before_a_restart_takes_the_text_typed_after_it(
    tmp_path: Path,
) -> None:
    async with running_embedded(tmp_path) as mesh:
        asked = await question(mesh)
        mesh.telegram.tap(CLAWDIA, USER, asked.message_id, data_of(asked, "✏️ Other (type answer)"))
        await mesh.telegram.wait_for(lambda: len(asked.edits) == 1, 30)
        await restart(mesh)

        mesh.llm.script(text("Cloudy in Paris, Kentucky."))
        mesh.telegram.user_message(CLAWDIA, USER, "Paris, Kentucky")
        await mesh.telegram.wait_for(lambda: len(mesh.telegram.sent(CLAWDIA, USER)) == 2, 60)
        await mesh.telegram.wait_for(lambda: len(asked.edits) == 2, 30)

        assert asked.edits[0].text == f"❓ {WHICH}\n✏️ (type your answer)"
        assert asked.edits[1].text == f"❓ {WHICH}\n→ Paris, Kentucky"
        assert mesh.telegram.sent(CLAWDIA, USER)[1].text == "Cloudy in Paris, Kentucky."
        assert user_messages(mesh) == ["Weather in Paris?", "Paris, Kentucky"]


@pytest.mark.parametrize("mode", ["embedded", "mesh"])
async def test_a_tap_whose_turn_a_crash_cut_off_is_answered_after_the_restart(
    mode: str, tmp_path: Path
) -> None:
    # The tap is recorded as the answer, then the orchestrator dies while the model works on
    # it: the tap comes back after the restart and is still the answer, its turn done once.
    shape = running_embedded if mode == "embedded" else running_mesh
    async with shape(tmp_path) as mesh:
        asked = await question(mesh)
        texas = data_of(asked, "Paris, Texas")
        mesh.llm.script(HANG, text("Sunny in Paris, Texas."))
        mesh.telegram.tap(CLAWDIA, USER, asked.message_id, texas)
        await mesh.telegram.wait_for(lambda: len(mesh.llm.requests) == 2, 60)
        await mesh.orchestrator.kill()
        mesh.llm.release()
        await mesh.orchestrator.start()
        await mesh.telegram.wait_for(lambda: len(mesh.telegram.sent(CLAWDIA, USER)) == 2, 60)

        assert mesh.telegram.sent(CLAWDIA, USER)[1].text == "Sunny in Paris, Texas."
        assert asked.edits[-1].text == f"❓ {WHICH}\n→ Paris, Texas"
        assert user_messages(mesh) == ["Weather in Paris?", "Paris, Texas"]
        assert len(mesh.llm.requests) == 3

        # A second tap, sent before the edit took the buttons off the user's screen (a double
        # tap), answers nothing again.
        mesh.telegram.tap(CLAWDIA, USER, asked.message_id, texas, forged=True)
        await mesh.telegram.wait_for(lambda: notices(mesh)[-1:] == ["Already answered."], 30)
        assert len(mesh.telegram.sent(CLAWDIA, USER)) == 2
        assert len(mesh.llm.requests) == 3
