"""The fake Bot API, driven by the real python-telegram-bot client."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import AsyncIterator

import anyio
import httpx
import pytest
from telegram import (
    Bot,
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    Message,
    MessageEntity,
    Update,
)
from telegram.constants import ChatAction, ParseMode
from telegram.error import (
    BadRequest,
    Conflict,
    EndPointNotFound,
    Forbidden,
    InvalidToken,
    NetworkError,
    RetryAfter,
)

from fakes.telegram_api import FakeTelegram

pytestmark = pytest.mark.anyio

TOKEN = "123456:AAH-fake_secret"
USER = 42
KEYBOARD = InlineKeyboardMarkup(
    [[InlineKeyboardButton("Confirm", callback_data="pa:c:act_1"),
      InlineKeyboardButton("Cancel", callback_data="pa:x:act_1")]]
)  # fmt: skip


@pytest.fixture
async def served() -> AsyncIterator[tuple[FakeTelegram, str]]:
    fake = FakeTelegram()
    fake.add_bot(TOKEN, username="clawdia_bot")
    async with fake.serve() as base:
        yield fake, base


@pytest.fixture
def fake(served: tuple[FakeTelegram, str]) -> FakeTelegram:
    return served[0]


@pytest.fixture
async def bot(served: tuple[FakeTelegram, str]) -> AsyncIterator[Bot]:
    async with Bot(TOKEN, base_url=f"{served[1]}/bot") as bot:
        yield bot


@pytest.fixture
def chat(fake: FakeTelegram) -> int:
    """The user has written to the bot, so the bot may write back."""
    fake.user_message(TOKEN, USER, "hello")
    return USER


async def test_get_me_describes_the_bot(bot: Bot) -> None:
    me = await bot.get_me()
    assert (me.id, me.username, me.is_bot) == (123456, "clawdia_bot", True)


async def test_unknown_and_revoked_tokens_raise_invalid_token(
    fake: FakeTelegram, served: tuple[FakeTelegram, str], bot: Bot
) -> None:
    with pytest.raises(InvalidToken, match="rejected by the server") as rejected:
        async with Bot("999:unknown", base_url=f"{served[1]}/bot"):
            pass
    assert str(rejected.value.__cause__) == "Unauthorized"
    fake.revoke(TOKEN)
    with pytest.raises(InvalidToken, match="Unauthorized"):
        await bot.get_me()


async def test_an_unknown_method_is_not_found(bot: Bot) -> None:
    with pytest.raises(EndPointNotFound):
        await bot.do_api_request("sendTelepathy")


async def test_updates_come_back_until_a_higher_offset_confirms_them(
    fake: FakeTelegram, bot: Bot
) -> None:
    first = fake.user_message(TOKEN, USER, "one")
    second = fake.user_message(TOKEN, USER, "/start now")
    assert second == first + 1

    updates = await bot.get_updates(timeout=0)
    assert [u.update_id for u in updates] == [first, second]
    one, start = updates[0].message, updates[1].message
    assert one is not None
    assert start is not None
    assert one.text == "one"
    assert start.parse_entities([MessageEntity.BOT_COMMAND]) == {start.entities[0]: "/start"}
    assert [u.update_id for u in await bot.get_updates(offset=first + 1, timeout=0)] == [second]
    assert await bot.get_updates(offset=second + 1, timeout=0) == ()
    assert fake.pending(TOKEN) == []


async def test_a_long_poll_wakes_up_when_a_message_arrives(fake: FakeTelegram, bot: Bot) -> None:
    received: list[Update] = []

    async def poll() -> None:
        received.extend(await bot.get_updates(timeout=30))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(poll)
            await fake.wait_for(lambda: len(fake.calls("getUpdates")) == 1)
            fake.user_message(TOKEN, USER, "wake up")
    (update,) = received
    assert update.message is not None
    assert (update.message.text, update.message.chat.type) == ("wake up", "private")


async def test_a_long_poll_with_nothing_to_deliver_answers_empty(bot: Bot) -> None:
    assert await bot.get_updates(timeout=dt.timedelta(seconds=0.1)) == ()


async def test_a_newer_poller_ends_the_older_one_with_conflict(
    fake: FakeTelegram, served: tuple[FakeTelegram, str], bot: Bot
) -> None:
    errors: list[Exception] = []

    async def poll() -> None:
        try:
            await bot.get_updates(timeout=30)
        except Conflict as error:
            errors.append(error)

    async with Bot(TOKEN, base_url=f"{served[1]}/bot") as other:
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(poll)
                await fake.wait_for(lambda: len(fake.calls("getUpdates")) == 1)
                assert await other.get_updates(timeout=0) == ()
    assert "terminated by other getUpdates request" in str(errors[0])


async def test_the_conflict_switch_refuses_every_poll(fake: FakeTelegram, bot: Bot) -> None:
    fake.conflict(TOKEN)
    with pytest.raises(Conflict, match="only one bot instance"):
        await bot.get_updates(timeout=0)
    fake.conflict(TOKEN, on=False)
    assert await bot.get_updates(timeout=0) == ()


async def test_allowed_updates_drop_other_kinds(fake: FakeTelegram, bot: Bot) -> None:
    fake.user_message(TOKEN, USER, "not wanted")
    assert await bot.get_updates(timeout=0, allowed_updates=["callback_query"]) == ()
    assert fake.pending(TOKEN) == []


async def test_media_messages_have_realistic_payloads(fake: FakeTelegram, bot: Bot) -> None:
    fake.user_media(TOKEN, USER, "photo", caption="the view")
    fake.user_media(TOKEN, USER, "voice")
    fake.user_media(TOKEN, USER, "sticker")
    fake.user_media(TOKEN, USER, "document")
    photo, voice, sticker, document = [u.effective_message for u in await bot.get_updates()]
    assert photo is not None
    assert (photo.caption, [p.width for p in photo.photo]) == ("the view", [90, 320, 1280])
    assert len({p.file_id for p in photo.photo}) == 3
    assert voice is not None
    assert voice.voice is not None
    assert voice.voice.mime_type == "audio/ogg"
    assert sticker is not None
    assert sticker.sticker is not None
    assert sticker.sticker.emoji == "👍"
    assert document is not None
    assert document.document is not None
    assert document.document.file_name == "notes.pdf"


async def test_a_sent_message_is_recorded_with_per_chat_ids(
    fake: FakeTelegram, bot: Bot, chat: int
) -> None:
    message = await bot.send_message(chat, "Sunny", reply_markup=KEYBOARD)
    assert message.message_id == 2  # the user's "hello" was 1
    assert message.from_user is not None
    assert message.from_user.username == "clawdia_bot"
    reply = await bot.send_message(chat, "and warm", reply_to_message_id=1)
    assert reply.reply_to_message is not None
    assert reply.reply_to_message.text == "hello"
    sent = fake.sent(TOKEN, chat)
    assert [(s.message_id, s.text, s.reply_to) for s in sent] == [(2, "Sunny", None),
                                                                 (3, "and warm", 1)]  # fmt: skip
    assert sent[0].reply_markup == KEYBOARD.to_dict()


async def test_a_chat_the_bot_never_heard_from_is_not_found(bot: Bot) -> None:
    with pytest.raises(BadRequest, match="Chat not found"):
        await bot.send_message(777, "hi")


async def test_text_length_is_counted_in_utf16_units(
    fake: FakeTelegram, bot: Bot, chat: int
) -> None:
    await bot.send_message(chat, "x" * 4096)
    with pytest.raises(BadRequest, match="Message is too long"):
        await bot.send_message(chat, "x" * 4097)
    with pytest.raises(BadRequest, match="Message is too long"):
        await bot.send_message(chat, "😀" * 2049)  # 2049 characters, 4098 UTF-16 units
    with pytest.raises(BadRequest, match="Message text is empty"):
        await bot.send_message(chat, "")


async def test_html_is_parsed_into_text_and_entities(
    fake: FakeTelegram, bot: Bot, chat: int
) -> None:
    html = '<b>Sunny</b>, 20 &lt;°C&gt; <a href="https://example.org/?a=1&amp;b=2">map</a>'
    message = await bot.send_message(chat, html, parse_mode=ParseMode.HTML)
    assert message.text == "Sunny, 20 <°C> map"
    assert [(e.type, e.offset, e.length, e.url) for e in message.entities] == [
        ("bold", 0, 5, None), ("text_link", 15, 3, "https://example.org/?a=1&b=2"),
    ]  # fmt: skip
    assert (fake.sent(TOKEN)[0].source, fake.sent(TOKEN)[0].parse_mode) == (html, "HTML")


@pytest.mark.parametrize(
    ("text", "mode", "reason"),
    [
        ("a <tag> here", ParseMode.HTML, 'unsupported start tag "tag" at byte offset 2'),
        ("<b>bold", ParseMode.HTML, 'can\'t find end tag corresponding to start tag "b"'),
        (
            "<b><i>x</b></i>",
            ParseMode.HTML,
            'unmatched end tag at byte offset 7, expected "</i>", found "</b>"',
        ),
        (
            "Version 1.0",
            ParseMode.MARKDOWN_V2,
            "character '.' is reserved and must be escaped with the preceding '\\'",
        ),
        ("*bold", ParseMode.MARKDOWN_V2, "can't find end of bold entity at byte offset 0"),
    ],
)
async def test_markup_telegram_cannot_parse_is_a_bad_request(
    bot: Bot, chat: int, text: str, mode: str, reason: str
) -> None:
    with pytest.raises(BadRequest) as refused:
        await bot.send_message(chat, text, parse_mode=mode)
    # PTB drops "Bad Request: " and capitalizes: the rest of the message is lower-cased
    assert refused.value.message == f"Can't parse entities: {reason}"


async def test_markdown_v2_escapes_and_entities(bot: Bot, chat: int) -> None:
    message = await bot.send_message(chat, r"*Done* in 1\.5 s 😀 _ok_", parse_mode="MarkdownV2")
    assert message.text == "Done in 1.5 s 😀 ok"
    assert [(e.type, e.offset, e.length) for e in message.entities] == [
        ("bold", 0, 4), ("italic", 17, 2),
    ]  # fmt: skip


async def test_explicit_entities_must_lie_within_the_text(bot: Bot, chat: int) -> None:
    inside = MessageEntity(MessageEntity.BOLD, offset=3, length=2)  # "😀 ok" is 5 units
    message = await bot.send_message(chat, "😀 ok", entities=[inside])
    assert message.entities == (inside,)
    with pytest.raises(BadRequest, match="Can't parse entities"):
        await bot.send_message(chat, "😀 ok", entities=[MessageEntity("bold", 4, 2)])


async def test_callback_data_over_64_bytes_is_refused(bot: Bot, chat: int) -> None:
    await bot.send_message(chat, "ok", reply_markup=InlineKeyboardMarkup.from_button(
        InlineKeyboardButton("64", callback_data="é" * 32)))  # fmt: skip
    too_long = InlineKeyboardButton("66", callback_data="é" * 33)
    with pytest.raises(BadRequest, match="Button_data_invalid"):
        await bot.send_message(chat, "no", reply_markup=InlineKeyboardMarkup.from_button(too_long))


async def test_a_blocked_user_is_forbidden(fake: FakeTelegram, bot: Bot, chat: int) -> None:
    fake.block(TOKEN, chat)
    with pytest.raises(Forbidden, match="bot was blocked by the user"):
        await bot.send_message(chat, "still there?")
    with pytest.raises(Forbidden):
        await bot.send_chat_action(chat, ChatAction.TYPING)


async def test_a_rate_limit_raises_retry_after(
    fake: FakeTelegram, bot: Bot, chat: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PTB_TIMEDELTA", "true")
    fake.fail_next("sendMessage", 429, retry_after=3)
    with pytest.raises(RetryAfter) as limited:
        await bot.send_message(chat, "too fast")
    assert limited.value.retry_after == dt.timedelta(seconds=3)
    assert (await bot.send_message(chat, "later")).text == "later"
    assert [s.text for s in fake.sent(TOKEN)] == ["later"]


@pytest.mark.parametrize(
    ("status", "reason"), [(500, "Internal Server Error"), (502, "Bad Gateway")]
)
async def test_server_errors_raise_network_error(
    fake: FakeTelegram, bot: Bot, chat: int, status: int, reason: str
) -> None:
    fake.fail_next("sendMessage", status)
    with pytest.raises(NetworkError, match=reason) as failed:
        await bot.send_message(chat, "hi")
    assert not isinstance(failed.value, BadRequest)


async def test_a_held_call_hangs_until_released(fake: FakeTelegram, bot: Bot, chat: int) -> None:
    fake.hold("sendMessage")
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(bot.send_message, chat, "eventually")
            await fake.wait_for(lambda: len(fake.calls("sendMessage")) == 1)
            assert fake.sent(TOKEN) == []
            fake.release("sendMessage")
    assert [s.text for s in fake.sent(TOKEN)] == ["eventually"]


async def test_a_tap_carries_its_message_and_is_answered_once(
    fake: FakeTelegram, bot: Bot, chat: int
) -> None:
    message = await bot.send_message(chat, "Add milk?", reply_markup=KEYBOARD)
    query_id = fake.tap(TOKEN, USER, message.message_id, "pa:c:act_1")
    (update,) = await bot.get_updates(timeout=0, offset=fake.pending(TOKEN)[-1])
    query = update.callback_query
    assert query is not None
    assert (query.id, query.data) == (query_id, "pa:c:act_1")
    assert isinstance(query.message, Message)
    assert (query.message.message_id, query.message.reply_markup) == (message.message_id, KEYBOARD)

    assert await bot.answer_callback_query(query_id, text="Added")
    assert [(a.query_id, a.text) for a in fake.callback_answers(TOKEN)] == [(query_id, "Added")]
    with pytest.raises(BadRequest, match="Query is too old"):
        await bot.answer_callback_query(query_id)
    with pytest.raises(ValueError, match="no button"):
        fake.tap(TOKEN, USER, message.message_id, "pa:c:act_2")


async def test_edit_message_text_applies_once_and_refuses_no_change(
    fake: FakeTelegram, bot: Bot, chat: int
) -> None:
    message = await bot.send_message(chat, "Add milk?", reply_markup=KEYBOARD)
    edited = await bot.edit_message_text("Added milk", chat, message.message_id)
    assert isinstance(edited, Message)
    assert (edited.text, edited.edit_date is None) == ("Added milk", False)
    assert edited.reply_markup is None  # an edit without reply_markup removes the keyboard
    (sent,) = fake.sent(TOKEN)
    assert (sent.text, [e.text for e in sent.edits]) == ("Added milk", ["Added milk"])

    with pytest.raises(BadRequest, match="Message is not modified"):
        await bot.edit_message_text("Added milk", chat, message.message_id)
    with pytest.raises(BadRequest, match="Message to edit not found"):
        await bot.edit_message_text("x", chat, 999)
    with pytest.raises(BadRequest, match="Message can't be edited"):
        await bot.edit_message_text("x", chat, 1)  # the user's own message


async def test_chat_actions_are_recorded(fake: FakeTelegram, bot: Bot, chat: int) -> None:
    assert await bot.send_chat_action(chat, ChatAction.TYPING)
    assert [a.action for a in fake.actions(TOKEN, chat)] == ["typing"]
    with pytest.raises(BadRequest, match="Wrong parameter action"):
        await bot.send_chat_action(chat, "dancing")


async def test_the_delivery_hook_runs_after_updates_are_sent(fake: FakeTelegram, bot: Bot) -> None:
    delivered: list[tuple[str, list[int]]] = []

    async def hook(token: str, ids: list[int]) -> None:
        delivered.append((token, ids))

    fake.after_updates_delivered = hook
    update_id = fake.user_message(TOKEN, USER, "hi")
    await bot.get_updates(timeout=0)
    await fake.wait_for(lambda: bool(delivered))
    assert delivered == [(TOKEN, [update_id])]


async def test_wait_for_raises_at_its_deadline(fake: FakeTelegram) -> None:
    with pytest.raises(TimeoutError):
        await fake.wait_for(lambda: False, timeout_s=0.05)


async def test_json_and_form_bodies_are_both_accepted(
    served: tuple[FakeTelegram, str], chat: int
) -> None:
    markup = {"inline_keyboard": [[{"text": "Go", "callback_data": "go"}]]}
    form = {"chat_id": str(chat), "text": "f", "reply_markup": json.dumps(markup)}
    async with httpx.AsyncClient(base_url=f"{served[1]}/bot{TOKEN}") as client:
        as_json = await client.post(
            "/sendMessage", json=form | {"chat_id": chat, "reply_markup": markup}
        )
        as_form = await client.post("/sendMessage", data=form)
        not_json = await client.post("/sendMessage", data=form | {"reply_markup": str(markup)})
        as_query = await client.get("/getMe")
        unknown = await client.post("/sendTelepathy")
    assert as_json.json()["result"]["reply_markup"] == markup
    assert as_form.json()["result"]["reply_markup"] == markup
    assert not_json.status_code == 400
    assert not_json.json()["description"] == "Bad Request: can't parse reply_markup JSON object"
    assert as_query.json()["result"]["username"] == "clawdia_bot"
    assert unknown.status_code == 404
    assert unknown.json() == {"ok": False, "error_code": 404, "description": "Not Found"}


async def test_control_endpoints_drive_a_demo(
    fake: FakeTelegram, served: tuple[FakeTelegram, str], bot: Bot
) -> None:
    async with httpx.AsyncClient(base_url=f"{served[1]}/_control") as control:
        said = (await control.post("/message", json={"user_id": USER, "text": "hi"})).json()
        (update,) = await bot.get_updates(timeout=0)
        assert update.update_id == said["update_id"]
        reply = await bot.send_message(USER, "Add milk?", reply_markup=KEYBOARD)

        listed = (await control.get("/sent", params={"chat_id": USER})).json()
        assert [(m["message_id"], m["text"]) for m in listed] == [(reply.message_id, "Add milk?")]
        tap = {
            "token": TOKEN,
            "user_id": USER,
            "message_id": reply.message_id,
            "data": "pa:x:act_1",
        }
        tapped = (await control.post("/tap", json=tap)).json()
        wrong = await control.post("/tap", json=tap | {"data": "nope"})
    (update,) = await bot.get_updates(offset=update.update_id + 1, timeout=0)
    assert update.callback_query is not None
    assert update.callback_query.id == tapped["callback_query_id"]
    assert wrong.status_code == 400
