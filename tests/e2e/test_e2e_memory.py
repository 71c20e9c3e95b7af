"""Remember by tap across real processes: every server its own HTTP process (memory and
pending-actions apart: pending-actions signs, memory holds only its public key), the
orchestrator another, fake Telegram and model. The user asks, taps 💾 Remember, later turns
follow the rule, /memory lists it and 🗑 forgets it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from fakes.mesh import TOKENS, Mesh, running_mesh
from fakes.responses_api import call, calls, text
from fakes.telegram_api import Sent

pytestmark = pytest.mark.anyio

CLAWDIA = TOKENS["clawdia"]
RULE = "Use metric units and no emojis"


def data_of(message: Sent, label: str) -> str:
    rows = (message.reply_markup or {}).get("inline_keyboard", [])
    return next(str(b["callback_data"]) for row in rows for b in row if label in b["text"])


@pytest.fixture(scope="module")
async def mesh(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Mesh]:
    async with running_mesh(tmp_path_factory.mktemp("mesh")) as mesh:
        yield mesh


@pytest.fixture
def user(mesh: Mesh) -> int:
    """A user of the shared mesh of their own: a note about them is theirs alone."""
    return mesh.new_user()


async def said(mesh: Mesh, user: int, words: str) -> Sent:
    before = len(mesh.telegram.sent(CLAWDIA, user))
    mesh.telegram.user_message(CLAWDIA, user, words)
    await mesh.telegram.wait_for(lambda: len(mesh.telegram.sent(CLAWDIA, user)) > before, 60)
    return mesh.telegram.sent(CLAWDIA, user)[before]


async def tapped(mesh: Mesh, user: int, message: Sent, label: str) -> Sent:
    edits = len(message.edits)
    mesh.telegram.tap(CLAWDIA, user, message.message_id, data_of(message, label))
    await mesh.telegram.wait_for(lambda: len(message.edits) > edits, 30)
    return message


async def test_remember_tap_rule_in_later_turns_then_forget_from_the_memory_list(
    mesh: Mesh, user: int
) -> None:
    mesh.llm.script(
        calls(call("memory__propose_remember", text=RULE, scope="user")),
        text("I'll keep that in mind once you confirm."),
    )
    proposal = await said(mesh, user, "From now on, metric units and no emojis please")
    assert "Remember about you: " + RULE in proposal.text
    await tapped(mesh, user, proposal, "💾 Remember")
    assert proposal.edits[-1].text.endswith(
        f"✅ Memory: Remember about you: {RULE} — Remembered: {RULE}"
    )

    mesh.llm.script(text("It is 12 °C in Paris."))
    await said(mesh, user, "How warm is it in Paris?")
    assert f"- [about this user] {RULE}" in mesh.llm.requests[-1]["instructions"]

    listing = await said(mesh, user, "/memory")
    assert listing.text == f"What I remember (🗑 forgets one):\n1. [about this user] {RULE}"
    await tapped(mesh, user, listing, "🗑 1")
    assert listing.edits[-1].text.startswith(f"✅ Memory: Forget: {RULE} — Forgotten: {RULE}")
    assert "I remember nothing for you yet" in listing.edits[-1].text

    mesh.llm.script(text("Hello!"))
    await said(mesh, user, "hi")
    assert RULE not in mesh.llm.requests[-1]["instructions"]
    assert len(mesh.llm.requests) == 4  # the taps and /memory never reached the model


async def tapped_again(mesh: Mesh, user: int, message: Sent, data: str) -> str:
    """``data`` tapped on ``message`` though it shows no such button any more (a double tap
    racing the edit, or a crafted client): the answer the tap got."""
    answers = len(mesh.telegram.callback_answers(CLAWDIA))
    mesh.telegram.tap(CLAWDIA, user, message.message_id, data, forged=True)
    await mesh.telegram.wait_for(lambda: len(mesh.telegram.callback_answers(CLAWDIA)) > answers, 30)
    return mesh.telegram.callback_answers(CLAWDIA)[answers].text or ""


async def test_a_forget_replayed_on_another_message_changes_nothing_and_second_taps_edit_nothing(
    mesh: Mesh, user: int
) -> None:
    mesh.llm.script(
        calls(call("memory__propose_remember", text=RULE, scope="user")),
        text("I'll keep that in mind once you confirm."),
    )
    proposal = await said(mesh, user, "From now on, metric units and no emojis please")
    remember = data_of(proposal, "💾 Remember")
    await tapped(mesh, user, proposal, "💾 Remember")
    again = await tapped_again(mesh, user, proposal, remember)
    listing = await said(mesh, user, "/memory")
    listed, forget = listing.text, data_of(listing, "🗑 1")
    elsewhere = await tapped_again(mesh, user, proposal, forget)  # on the proposal's message
    kept = await said(mesh, user, "/memory")
    await tapped(mesh, user, listing, "🗑 1")
    twice = await tapped_again(mesh, user, listing, forget)
    after = await said(mesh, user, "/memory")  # every tap before it has been handled

    assert again == "already done"
    assert elsewhere == "That button is no longer active."
    assert kept.text == listed  # still remembered
    assert twice == "Already forgotten."
    assert "I remember nothing for you yet" in after.text
    # One edit for each tap that did something: none refused as "message is not modified".
    assert [len(proposal.edits), len(listing.edits)] == [1, 1]
    assert len(mesh.telegram.calls("editMessageText")) == 2
