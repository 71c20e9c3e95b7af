"""The fake Bot API's drafts, files and media updates, driven by the real python-telegram-bot
client."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import pytest
from telegram import Bot, Message, MessageOriginUser
from telegram.constants import ParseMode
from telegram.error import BadRequest, Forbidden, RetryAfter

from fakes.telegram_api import FakeTelegram

pytestmark = pytest.mark.anyio

TOKEN = "123456:AAH-fake_secret"
OTHER = "654321:AAH-other_secret"
USER = 42
GROUP = -1001234
OGG = b"OggS\x00\x02" + bytes(range(256)) * 40
ICS = b"BEGIN:VCALENDAR\r\nVERSION:2.0\r\nEND:VCALENDAR\r\n"


@pytest.fixture(autouse=True)
def timedeltas(monkeypatch: pytest.MonkeyPatch) -> None:
    """Durations as PTB's next major version gives them (and without its warning)."""
    monkeypatch.setenv("PTB_TIMEDELTA", "true")


@pytest.fixture
async def served() -> AsyncIterator[tuple[FakeTelegram, str]]:
    fake = FakeTelegram()
    fake.add_bot(TOKEN, username="clawdia_bot")
    fake.add_bot(OTHER)
    async with fake.serve() as base:
        yield fake, base


@pytest.fixture
def fake(served: tuple[FakeTelegram, str]) -> FakeTelegram:
    return served[0]


@pytest.fixture
async def bot(served: tuple[FakeTelegram, str]) -> AsyncIterator[Bot]:
    base = served[1]
    async with Bot(TOKEN, base_url=f"{base}/bot", base_file_url=f"{base}/file/bot") as bot:
        yield bot


@pytest.fixture
def chat(fake: FakeTelegram) -> int:
    """The user has written to the bot, so the bot may write back."""
    fake.user_message(TOKEN, USER, "hello")
    return USER


def refused(wording: str) -> str:
    """What PTB makes of Telegram's 400 "Bad Request: <wording>", as a pattern: the prefix
    dropped and the rest capitalised (``str.capitalize``, which lowers the other letters)."""
    return f"^{re.escape(wording.capitalize())}$"


async def latest(bot: Bot) -> Message:
    """The message of the last update delivered."""
    message = (await bot.get_updates(timeout=0))[-1].message
    assert message is not None
    return message


# -- drafts ----------------------------------------------------------------------------------


async def test_a_draft_is_recorded_and_never_becomes_a_message(
    fake: FakeTelegram, bot: Bot, chat: int
) -> None:
    assert await bot.send_message_draft(chat, 7) is True
    assert await bot.send_message_draft(chat, 7, "Checking <b>rain</b>", parse_mode=ParseMode.HTML)
    drafts = fake.drafts(TOKEN, chat)
    assert [(d.draft_id, d.text) for d in drafts] == [(7, ""), (7, "Checking rain")]
    assert drafts[1].entities == [{"type": "bold", "offset": 9, "length": 4}]
    assert fake.sent(TOKEN) == []
    assert fake.drafts(TOKEN, chat_id=99) == []


@pytest.mark.parametrize(
    ("draft_id", "text", "wording"),
    [
        (0, "hi", "draft_id must be non-zero"),
        (None, "hi", "draft_id must be non-zero"),
        (3, "x" * 4097, "text is too long"),
    ],
)
async def test_a_bad_draft_is_refused_as_telegram_words_it(
    fake: FakeTelegram, bot: Bot, chat: int, draft_id: Any, text: str, wording: str
) -> None:
    with pytest.raises(BadRequest, match=refused(wording)):
        await bot.send_message_draft(chat, draft_id, text)  # PTB drops a None
    assert fake.drafts(TOKEN) == []


async def test_a_draft_needs_a_private_chat_the_bot_may_write_to(
    fake: FakeTelegram, bot: Bot, chat: int
) -> None:
    fake.user_message(TOKEN, USER, "hi all", chat_id=GROUP, chat_type="group")
    with pytest.raises(BadRequest, match=refused("TEXTDRAFT_PEER_INVALID")):
        await bot.send_message_draft(GROUP, 1, "typing")
    with pytest.raises(BadRequest, match=refused("chat not found")):
        await bot.send_message_draft(77, 1, "typing")
    fake.block(TOKEN, chat)
    with pytest.raises(Forbidden, match="bot was blocked by the user"):
        await bot.send_message_draft(chat, 1, "typing")
    assert fake.drafts(TOKEN) == []


async def test_refused_drafts_are_a_bad_request_until_switched_off(
    fake: FakeTelegram, bot: Bot, chat: int
) -> None:
    fake.refuse_drafts(TOKEN)
    with pytest.raises(BadRequest, match=refused("method sendMessageDraft is not available")):
        await bot.send_message_draft(chat, 1, "typing")
    fake.refuse_drafts(TOKEN, on=False)
    assert await bot.send_message_draft(chat, 1, "typing")
    assert [d.text for d in fake.drafts(TOKEN)] == ["typing"]


async def test_draft_refusals_carry_telegrams_words_in_their_case(
    fake: FakeTelegram, served: tuple[FakeTelegram, str], chat: int
) -> None:
    fake.user_message(TOKEN, USER, "hi all", chat_id=GROUP, chat_type="group")
    async with httpx.AsyncClient(base_url=f"{served[1]}/bot{TOKEN}") as http:
        group = await http.post("/sendMessageDraft", json={"chat_id": GROUP, "draft_id": 1})
        fake.refuse_drafts(TOKEN)
        unavailable = await http.post("/sendMessageDraft", json={"chat_id": chat, "draft_id": 1})
    assert [(a.status_code, a.json()["description"]) for a in (group, unavailable)] == [
        (400, "Bad Request: TEXTDRAFT_PEER_INVALID"),
        (400, "Bad Request: method sendMessageDraft is not available"),
    ]


async def test_drafts_can_be_failed_and_held_like_other_methods(
    fake: FakeTelegram, bot: Bot, chat: int
) -> None:
    fake.fail_next("sendMessageDraft", 429, retry_after=2)
    with pytest.raises(RetryAfter):
        await bot.send_message_draft(chat, 1, "too fast")
    fake.hold("sendMessageDraft")
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(bot.send_message_draft, chat, 1, "eventually")
            await fake.wait_for(lambda: len(fake.calls("sendMessageDraft")) == 2)
            assert fake.drafts(TOKEN) == []
            fake.release("sendMessageDraft")
    assert [d.text for d in fake.drafts(TOKEN)] == ["eventually"]


# -- files -----------------------------------------------------------------------------------


async def test_a_voice_note_downloads_as_its_exact_bytes(fake: FakeTelegram, bot: Bot) -> None:
    fake.user_media(TOKEN, USER, "voice", content=OGG, duration=5)
    voice = (await latest(bot)).voice
    assert voice is not None
    assert (voice.duration, voice.file_size) == (dt.timedelta(seconds=5), len(OGG))
    file = await bot.get_file(voice)
    assert file.file_size == len(OGG)
    assert file.file_path is not None
    assert file.file_path.endswith(".oga")
    assert bytes(await file.download_as_bytearray()) == OGG
    (download,) = fake.downloads(TOKEN)
    assert (download.size, file.file_path.endswith(f"/{download.file_path}")) == (len(OGG), True)


async def test_the_largest_photo_size_downloads_as_its_own_bytes(
    fake: FakeTelegram, bot: Bot
) -> None:
    sizes = [(1280, 960, b"\xff\xd8large"), (90, 68, b"\xff\xd8small")]
    fake.user_media(TOKEN, USER, "photo", sizes=sizes, caption="the view")
    message = await latest(bot)
    assert [(p.width, p.height) for p in message.photo] == [(90, 68), (1280, 960)]
    largest = await bot.get_file(message.photo[-1])
    assert bytes(await largest.download_as_bytearray()) == b"\xff\xd8large"
    smallest = await bot.get_file(message.photo[0])
    assert bytes(await smallest.download_as_bytearray()) == b"\xff\xd8small"


async def test_one_photo_content_serves_every_size(fake: FakeTelegram, bot: Bot) -> None:
    jpeg = b"\xff\xd8" + bytes(100_000)
    fake.user_media(TOKEN, USER, "photo", content=jpeg)
    photo = (await latest(bot)).photo
    assert [p.width for p in photo] == [90, 320, 800, 1280]
    assert photo[-1].file_size == len(jpeg)
    estimates = [p.file_size or 0 for p in photo]
    assert estimates == sorted(set(estimates))  # smaller sizes, smaller files
    file = await bot.get_file(photo[-1])
    assert file.file_path is not None
    assert file.file_path.endswith(".jpg")
    assert bytes(await file.download_as_bytearray()) == jpeg


async def test_a_document_downloads_with_its_name_and_type(fake: FakeTelegram, bot: Bot) -> None:
    fake.user_document(TOKEN, USER, "trip.ics", ICS, caption="my flights")
    message = await latest(bot)
    document = message.document
    assert document is not None
    assert (document.file_name, document.mime_type) == ("trip.ics", "text/calendar")
    assert (document.file_size, message.caption) == (len(ICS), "my flights")
    file = await bot.get_file(document.file_id)
    assert file.file_path is not None
    assert "/documents/file_" in file.file_path
    assert file.file_path.endswith(".ics")
    assert bytes(await file.download_as_bytearray()) == ICS


async def test_media_without_content_downloads_placeholder_bytes(
    fake: FakeTelegram, bot: Bot
) -> None:
    fake.user_media(TOKEN, USER, "sticker")
    sticker = (await latest(bot)).sticker
    assert sticker is not None
    file = await bot.get_file(sticker)
    assert len(await file.download_as_bytearray()) == sticker.file_size


async def test_a_file_over_20_mb_is_too_big_to_get(fake: FakeTelegram, bot: Bot) -> None:
    fake.user_media(TOKEN, USER, "document", file_size=20 * 1024 * 1024)
    fake.user_media(TOKEN, USER, "document", file_size=21 * 1024 * 1024, file_name="big.zip")
    at_limit, too_big = [u.effective_message for u in await bot.get_updates(timeout=0)]
    assert at_limit is not None
    assert at_limit.document is not None
    assert too_big is not None
    assert too_big.document is not None
    assert (await bot.get_file(at_limit.document)).file_size == 20 * 1024 * 1024
    with pytest.raises(BadRequest, match=refused("file is too big")):
        await bot.get_file(too_big.document)


async def test_a_file_id_the_bot_was_never_given_is_invalid(
    fake: FakeTelegram, served: tuple[FakeTelegram, str], bot: Bot
) -> None:
    with pytest.raises(BadRequest, match=refused("invalid file_id")):
        await bot.get_file("AwACAgIAAxkBAAI-nonsense")
    fake.user_media(TOKEN, USER, "voice", content=OGG)
    voice = (await latest(bot)).voice
    assert voice is not None
    async with Bot(OTHER, base_url=f"{served[1]}/bot") as other:
        with pytest.raises(BadRequest, match=refused("invalid file_id")):
            await other.get_file(voice.file_id)


async def test_the_file_server_answers_404_for_unknown_paths_and_other_tokens(
    fake: FakeTelegram, served: tuple[FakeTelegram, str], bot: Bot
) -> None:
    fake.user_media(TOKEN, USER, "voice", content=OGG)
    voice = (await latest(bot)).voice
    assert voice is not None
    path = (await bot.get_file(voice)).file_path
    assert path is not None
    path = path.rpartition(f"/file/bot{TOKEN}/")[2]
    async with httpx.AsyncClient(base_url=f"{served[1]}/file") as http:
        for url in (f"/bot{TOKEN}/voice/file_999.oga", f"/bot{OTHER}/{path}", f"/bot1:x/{path}"):
            answer = await http.get(url)
            assert answer.status_code == 404
            assert answer.json() == {"ok": False, "error_code": 404, "description": "Not Found"}
        served_file = await http.get(f"/bot{TOKEN}/{path}")
    assert served_file.headers["content-type"] == "application/octet-stream"
    assert served_file.content == OGG
    assert [d.file_path for d in fake.downloads(TOKEN)] == [path]
    assert fake.downloads(OTHER) == []


async def test_get_file_can_be_failed_like_other_methods(fake: FakeTelegram, bot: Bot) -> None:
    fake.user_media(TOKEN, USER, "voice", content=OGG)
    voice = (await latest(bot)).voice
    assert voice is not None
    fake.fail_next("getFile", 400, description="Bad Request: wrong file_id")
    with pytest.raises(BadRequest, match=refused("wrong file_id")):
        await bot.get_file(voice)
    assert (await bot.get_file(voice)).file_size == len(OGG)


async def test_forget_clears_drafts_and_downloads(fake: FakeTelegram, bot: Bot, chat: int) -> None:
    await bot.send_message_draft(chat, 1, "typing")
    fake.user_media(TOKEN, USER, "voice", content=OGG)
    voice = (await latest(bot)).voice
    assert voice is not None
    await (await bot.get_file(voice)).download_as_bytearray()
    fake.forget()
    assert (fake.drafts(TOKEN), fake.downloads(TOKEN)) == ([], [])
    assert bytes(await (await bot.get_file(voice)).download_as_bytearray()) == OGG


# -- media updates ---------------------------------------------------------------------------


async def test_media_updates_parse_into_ptb_objects_with_their_fields(
    fake: FakeTelegram, bot: Bot
) -> None:
    sender = {"id": 7, "is_bot": False, "first_name": "Ann"}
    forwarded = {"type": "user", "sender_user": sender, "date": 1_700_000_000}
    fake.user_media(TOKEN, USER, "voice", content=OGG, duration=4)
    fake.user_media(TOKEN, USER, "audio", content=b"ID3tune", duration=200,
                    file_name="tune.mp3", media={"performer": "Nina", "title": "Tune"})  # fmt: skip
    fake.user_media(TOKEN, USER, "video_note", content=b"mp4", duration=9)
    fake.user_media(TOKEN, USER, "document", content=ICS, file_name="trip.ics",
                    mime_type="text/calendar", forward_origin=forwarded)  # fmt: skip
    fake.user_media(TOKEN, USER, "photo", content=b"\xff\xd8jpeg", caption="look")
    updates = await bot.get_updates(timeout=0)
    voice, audio, note, document, photo = [u.message for u in updates]
    assert voice is not None
    assert voice.voice is not None
    assert (voice.voice.duration, voice.voice.mime_type, voice.voice.file_size) == (
        dt.timedelta(seconds=4), "audio/ogg", len(OGG),
    )  # fmt: skip
    assert audio is not None
    assert audio.audio is not None
    assert (audio.audio.performer, audio.audio.title, audio.audio.file_name) == (
        "Nina", "Tune", "tune.mp3",
    )  # fmt: skip
    assert (audio.audio.duration, audio.audio.mime_type, audio.audio.file_size) == (
        dt.timedelta(seconds=200), "audio/mpeg", 7,
    )  # fmt: skip
    assert note is not None
    assert note.video_note is not None
    assert (note.video_note.length, note.video_note.duration, note.video_note.file_size) == (
        384, dt.timedelta(seconds=9), 3,
    )  # fmt: skip
    assert document is not None
    assert document.document is not None
    assert (document.document.file_name, document.document.mime_type) == (
        "trip.ics", "text/calendar",
    )  # fmt: skip
    assert isinstance(document.forward_origin, MessageOriginUser)
    assert document.forward_origin.sender_user.first_name == "Ann"
    assert photo is not None
    assert (photo.caption, [p.width for p in photo.photo]) == ("look", [90, 320, 800, 1280])
    assert len({p.file_unique_id for p in photo.photo}) == 4


async def test_a_field_the_object_does_not_have_is_refused_at_injection(
    fake: FakeTelegram,
) -> None:
    with pytest.raises(ValueError, match="a photo has no duration"):
        fake.user_media(TOKEN, USER, "photo", duration=3)
    with pytest.raises(ValueError, match="a voice has no file_name"):
        fake.user_media(TOKEN, USER, "voice", file_name="a.ogg")
    with pytest.raises(ValueError, match="content sets the file_size"):
        fake.user_media(TOKEN, USER, "voice", content=OGG, file_size=3)
    with pytest.raises(ValueError, match="content sets the file_size"):
        fake.user_media(TOKEN, USER, "photo", content=b"jpeg", sizes=[(90, 68, b"jpeg")])
