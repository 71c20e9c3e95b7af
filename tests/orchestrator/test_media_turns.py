"""Voice notes, photos and files, as a user sends them to the bot: downloaded by telegram-io
from the fake Bot API, heard by the fake transcription endpoint, looked at by the fake
model, answered as a typed message is (the lean rig: real role servers, calls counted).
The audio and the images are real files, made by the tests."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from pydantic import ValidationError

from fakes.audio import ogg_opus, wav
from fakes.counted import CALLS
from fakes.images import jpeg
from fakes.lean import TEXT_TURN, TOKEN, USER, Lean, handled
from fakes.responses_api import bad_request, call, calls, text
from orchestrator.channels.telegram_media import (
    NOT_TRANSCRIBED,
    NOTHING_HEARD,
    TOO_LONG,
    UNDERSTOOD,
)
from orchestrator.config.prices import Prices
from orchestrator.core.turn import NO_IMAGES
from orchestrator.core.usage import cost_of
from orchestrator.llm.base import Usage

pytestmark = pytest.mark.anyio

BOT = TOKEN.partition(":")[0]
EXPORTS = Path(__file__).parents[1] / "calendar_server" / "exports"  # real calendar exports
VOICE_TURN = ["telegram-io.download_media", "telegram-io.send_message", *TEXT_TURN]
PHOTO_TURN = ["telegram-io.download_media", *TEXT_TURN]


def sent_texts(lean: Lean) -> list[str]:
    return [m.text for m in lean.telegram.sent(TOKEN, USER)]


def stored(update: str) -> list[dict[str, object]]:
    """The items the turn that answered ``update`` stored."""
    [record] = [c for c in CALLS.made if c.tool == "append_items"]
    assert record.arguments["turn_id"] == update
    return list(record.arguments["items"])


async def test_a_voice_note_is_heard_shown_and_answered_as_if_typed(lean: Lean) -> None:
    lean.llm.hear("What's the weather in Paris tomorrow?")
    lean.llm.script(
        calls(call("weather__get_forecast", location="Paris", days=1)), text("Sunny in Paris.")
    )
    update = (
        f"{BOT}:{lean.telegram.user_media(TOKEN, USER, 'voice', content=ogg_opus(3.2), duration=4)}"
    )

    made = await handled(update)

    assert made == VOICE_TURN  # the download and "🎤 …" beside a typed message's three
    assert sent_texts(lean) == ["🎤 “What's the weather in Paris tomorrow?”", "Sunny in Paris."]
    [heard] = lean.llm.transcriptions
    assert (heard.model, heard.filename, heard.content_type) == (
        "gpt-4o-mini-transcribe", "voice.ogg", "audio/ogg",
    )  # fmt: skip
    assert heard.seconds == pytest.approx(3.2)
    user = lean.llm.requests[0]["input"][-1]
    assert user["content"] == "What's the weather in Paris tomorrow?"
    assert stored(update)[0]["content"] == "What's the weather in Paris tomorrow?"
    usage = [r["purpose"] for r in _records()]
    assert usage.count("voice") == 1  # metered, riding with the turn it started


async def test_a_proposal_from_a_voice_note_waits_for_a_tap(lean: Lean) -> None:
    lean.llm.hear("Add oat milk to my shopping list.")
    lean.llm.script(calls(call("shopping__propose_add_to_list", name="oat milk")), text("Shall I?"))
    lean.telegram.user_media(TOKEN, USER, "voice", content=ogg_opus(2.0), duration=2)

    await lean.telegram.wait_for(lambda: len(lean.telegram.sent(TOKEN, USER)) == 2)

    reply = lean.telegram.sent(TOKEN, USER)[1]
    assert "oat milk" in reply.text
    assert reply.reply_markup is not None  # Confirm / Cancel: nothing added before the tap
    assert not any(c.tool == "confirm_add_to_list" for c in CALLS.made)


async def test_a_recording_longer_than_the_bound_is_declined_without_a_download(
    lean: Lean,
) -> None:
    update = lean.telegram.user_media(TOKEN, USER, "voice", content=ogg_opus(1.0), duration=700)

    await handled(f"{BOT}:{update}")

    assert sent_texts(lean) == [TOO_LONG.format(length="11 min 40 s", limit="10 min 0 s")]
    assert lean.telegram.downloads(TOKEN) == []
    assert lean.llm.transcriptions == []
    assert lean.llm.requests == []


async def test_silence_or_a_failed_transcription_gets_one_line(lean: Lean) -> None:
    lean.llm.hear("", bad_request("Audio file might be corrupted or unsupported", "file"))
    lean.telegram.user_media(TOKEN, USER, "voice", content=ogg_opus(1.0), duration=1)
    await lean.telegram.wait_for(lambda: len(lean.telegram.sent(TOKEN, USER)) == 1)
    lean.telegram.user_media(TOKEN, USER, "audio", content=wav(1.5), duration=2,
                             file_name="memo.wav", mime_type="audio/wav")  # fmt: skip
    await lean.telegram.wait_for(lambda: len(lean.telegram.sent(TOKEN, USER)) == 2)

    assert sent_texts(lean) == [NOTHING_HEARD, NOT_TRANSCRIBED]
    assert lean.llm.requests == []
    assert lean.llm.transcriptions[-1].filename == "memo.wav"


async def test_a_photo_goes_to_the_model_as_an_image_and_is_stored_as_words(lean: Lean) -> None:
    sizes = [(w, h, jpeg(w, h)) for w, h in ((90, 68), (320, 240), (1280, 960), (2560, 1920))]
    lean.llm.script(text("A receipt for oat milk and bread."))
    caption = "What's on this receipt?"
    update = f"{BOT}:{lean.telegram.user_media(TOKEN, USER, 'photo', sizes=sizes, caption=caption)}"

    made = await handled(update)

    assert made == PHOTO_TURN
    [request] = lean.llm.requests
    [said, image] = request["input"][-1]["content"]
    assert said == {"type": "input_text", "text": caption}
    assert image["type"] == "input_image"
    assert image["image_url"] == "data:image/jpeg;base64," + base64.b64encode(sizes[2][2]).decode()
    assert stored(update)[0]["content"] == f"[photo] {caption}"  # no bytes in memory
    assert sent_texts(lean) == ["A receipt for oat milk and bread."]


async def test_a_model_that_cannot_see_is_said_so_in_words_once(lean: Lean) -> None:
    lean.llm.script(
        bad_request(
            "Invalid content type. image_url is only supported by certain models.", "messages"
        )
    )
    lean.telegram.user_media(TOKEN, USER, "photo", content=jpeg(320, 240))
    await lean.telegram.wait_for(lambda: len(lean.telegram.sent(TOKEN, USER)) == 1)
    lean.telegram.user_media(TOKEN, USER, "photo", content=jpeg(320, 240), caption="and this?")
    await lean.telegram.wait_for(lambda: len(lean.telegram.sent(TOKEN, USER)) == 2)

    assert sent_texts(lean) == [NO_IMAGES, NO_IMAGES]
    assert len(lean.llm.requests) == 1  # not asked again


async def test_a_small_text_file_is_read_as_text(lean: Lean) -> None:
    lean.llm.script(text("Three items: eggs, flour, sugar."))
    notes = "eggs\nflour\nsugar\n"
    update = lean.telegram.user_document(TOKEN, USER, "list.txt", notes.encode(),
                                         caption="what's on it?")  # fmt: skip

    await handled(f"{BOT}:{update}")

    said = lean.llm.requests[0]["input"][-1]["content"]
    assert said == f"what's on it?\n\n📄 list.txt:\n{notes}"


async def test_other_files_and_stickers_get_one_line_saying_what_is_understood(
    lean: Lean,
) -> None:
    lean.telegram.user_document(TOKEN, USER, "report.pdf", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    await lean.telegram.wait_for(lambda: len(lean.telegram.sent(TOKEN, USER)) == 1)
    lean.telegram.user_media(TOKEN, USER, "sticker")
    await lean.telegram.wait_for(lambda: len(lean.telegram.sent(TOKEN, USER)) == 2)

    assert sent_texts(lean) == [
        UNDERSTOOD.format(what="report.pdf (application/pdf)"),
        UNDERSTOOD.format(what="a sticker"),
    ]
    assert lean.llm.requests == []


def _records() -> list[dict[str, object]]:
    """Every usage record memory was given."""
    return [
        record
        for c in CALLS.made
        if c.tool in ("append_items", "record_usage")
        for record in c.arguments.get("usage") or c.arguments.get("records") or []
    ]


def test_a_transcription_is_priced_per_minute_of_audio_and_a_price_names_its_unit() -> None:
    prices = Prices.model_validate(
        {"models": {"gpt-4o-mini-transcribe": {"per_minute": 0.003}, "gpt-5-mini": {
            "input": 0.25, "output": 2.0}}}
    )  # fmt: skip
    heard = Usage(120, 15, audio_s=90)  # the tokens it reports, priced at 0 here

    assert cost_of(heard, "gpt-4o-mini-transcribe", prices, local=False) == pytest.approx(0.0045)
    assert cost_of(Usage(1000, 100), "gpt-5-mini", prices, local=False) == pytest.approx(0.00045)
    with pytest.raises(ValidationError, match="or per_minute"):
        Prices.model_validate({"models": {"gpt-5-mini": {"input": 0.25}}})


async def test_a_forwarded_invitation_is_an_import_proposal_done_once_after_the_tap(
    lean: Lean,
) -> None:
    invitation = (EXPORTS / "outlook_eastern_weekly.ics").read_bytes()
    update = lean.telegram.user_document(
        TOKEN, USER, "invite.ics", invitation, mime_type="text/calendar",
        forward_origin={"type": "hidden_user", "sender_user_name": "Ana", "date": 1767225600},
    )  # fmt: skip
    await handled(f"{BOT}:{update}")
    [proposal] = lean.telegram.sent(TOKEN, USER)
    assert proposal.text.startswith("📅 invite.ics")
    assert "into personal?" in proposal.text
    [[add, skip]] = proposal.reply_markup["inline_keyboard"] if proposal.reply_markup else [[]]
    assert (add["text"], skip["text"]) == ("📥 Import", "Skip")

    lean.telegram.tap(TOKEN, USER, proposal.message_id, add["callback_data"])
    await lean.telegram.wait_for(lambda: bool(proposal.edits) and "Imported" in proposal.text)

    assert "Imported 1 event into personal." in proposal.text
    assert lean.llm.requests == []  # the model never read the file


async def test_a_round_video_note_is_heard_from_its_mp4(lean: Lean) -> None:
    # An ISO base media file: its ftyp box (what a transcription server reads the format
    # from), then the media data.
    mp4 = (
        b"\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom" + b"\x00\x00\x10\x08mdat" + bytes(4096)
    )
    lean.llm.hear("Call me back after lunch.")
    lean.llm.script(text("Noted."))
    update = lean.telegram.user_media(TOKEN, USER, "video_note", content=mp4, duration=4)

    await handled(f"{BOT}:{update}")

    [heard] = lean.llm.transcriptions
    assert (heard.filename, heard.content_type) == ("video_note.mp4", "video/mp4")
    assert sent_texts(lean) == ["🎤 “Call me back after lunch.”", "Noted."]
