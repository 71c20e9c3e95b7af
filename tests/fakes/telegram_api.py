"""A fake Telegram Bot API server that follows the documented contract, for real clients.

    POST|GET /bot<TOKEN>/<method>   getMe deleteWebhook getUpdates sendMessage editMessageText
                                    editMessageReplyMarkup answerCallbackQuery sendChatAction
                                    setMyCommands sendMessageDraft getFile
    GET /file/bot<TOKEN>/<file_path>   a file's bytes, as application/octet-stream

Parameters arrive as a query string, a form (what python-telegram-bot sends: complex values
JSON-encoded inside form fields) or a JSON body. Answers are ``{"ok": true, "result": ...}`` or
``{"ok": false, "error_code": N, "description": ...}`` worded as the real API words them: 404
"Not Found" for a malformed token or an unknown method, 401 "Unauthorized" for an unknown or
revoked token, 400 "Bad Request: chat not found" for a chat the bot has never heard from, and
400 for text that is empty or over 4096 UTF-16 units, entities outside the text, callback data
outside 1-64 bytes, an edit that changes nothing (editing text without ``reply_markup`` removes
the keyboard, as it does for real) and a callback query never issued or answered twice.

``parse_mode`` HTML and MarkdownV2 are parsed as Telegram parses them: the message holds the
plain text and its entities (``Sent.source`` keeps the text as sent), and markup Telegram
refuses gets its 400 "can't parse entities: ...". MarkdownV2 "> quote" lines give no entity;
legacy Markdown is taken as plain text.

getUpdates confirms every update below ``offset``, answers at once when updates are pending or
waits up to ``timeout`` for one; ``allowed_updates`` is remembered between calls and updates of
other kinds are dropped. A second getUpdates for the same bot ends the one in progress with 409
"Conflict: terminated by other getUpdates request" (the newer request wins, as on Telegram);
``conflict(token)`` answers every getUpdates with that 409 until switched off.

sendMessageDraft (Bot API 9.3) shows a private chat an ephemeral draft: recorded in ``drafts``,
never in ``sent``, with no message id to tap or edit; its text may be empty (the app shows
"Thinking…") and has at most 4096 UTF-16 units after parsing ("text is too long"). A zero or
missing ``draft_id`` answers 400 "Bad Request: draft_id must be non-zero" (our wording: the
real text is not documented), a chat not private 400 "Bad Request: TEXTDRAFT_PEER_INVALID";
``refuse_drafts(token)`` answers each with 400 "Bad Request: method sendMessageDraft is not
available", as where drafts are refused and the caller must fall back to sendMessage.

Every file of an injected update is the bot's to fetch: getFile answers a File whose
``file_path`` (``voice/file_3.oga``, ``photos/file_4.jpg``, ``documents/file_5.ics``) serves
its bytes under ``/file/bot<TOKEN>/`` (valid for an hour on Telegram; not enforced here).
getFile refuses a file over 20 MB with 400 "Bad Request: file is too big" and a file id the
bot was never given with 400 "Bad Request: invalid file_id". The file server answers an
unknown path with 404 "Not Found" as JSON, as Telegram's does; an unknown token or another
bot's path gets the same 404 here (what Telegram answers a bad token there is not
documented). ``downloads`` records each file served, without its token.

Tests drive it in Python: ``user_message``, ``user_media`` (photo, voice, audio, video_note,
sticker, document, with their bytes or placeholder bytes), ``user_document`` and ``tap``
inject updates; ``sent``, ``drafts``, ``actions``, ``callback_answers``, ``downloads``,
``calls`` and ``pending`` read what happened; ``wait_for(predicate)`` waits for it. Faults:
``fail_next`` (429 with retry_after, 500, nginx's 502 HTML page), ``hold``/``release`` (calls
hang), ``block`` (403), ``revoke`` (401); ``after_updates_delivered`` runs once an answer
carrying updates has been written to the client. Call all of these from the event loop that
serves the app: ``async with fake.serve() as base``, then ``telegram.Bot(token,
base_url=f"{base}/bot", base_file_url=f"{base}/file/bot")``.

Standalone, for a demo: ``PYTHONPATH=tests python -m fakes.telegram_api --port 8443 --token
123:abc``; then, with ``token`` optional when one bot is served::

    curl -d '{"token": "123:abc", "user_id": 42, "text": "hi"}' localhost:8443/_control/message
    curl -d '{"user_id": 42, "message_id": 2, "data": "pa:c:act_1"}' localhost:8443/_control/tap
    curl 'localhost:8443/_control/sent?chat_id=42'
"""

from __future__ import annotations

import argparse
import itertools
import json
import mimetypes
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field
from http import HTTPStatus
from pathlib import PurePosixPath
from typing import Any, Literal
from urllib.parse import parse_qsl

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from fakes.serving import serving
from fakes.telegram_markup import MAX_TEXT, Body, Refused, bad, markup, render, shown, utf16

Hook = Callable[[str, list[int]], Awaitable[None] | None]

TOKEN = re.compile(r"\d+:[\w-]+")
COMMAND = re.compile(r"[a-z0-9_]{1,32}")  # a bot command, without its slash
CONFLICT = (
    "Conflict: terminated by other getUpdates request; "
    "make sure that only one bot instance is running"
)
NOT_MODIFIED = (
    "message is not modified: specified new message content and reply markup are exactly "
    "the same as a current content and reply markup of the message"
)
QUERY_INVALID = "query is too old and response timeout expired or query ID is invalid"
BLOCKED = "Forbidden: bot was blocked by the user"
BAD_GATEWAY = (
    "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
    "<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx/1.18.0</center>\r\n"
    "</body>\r\n</html>\r\n"
)
ACTIONS = {
    "typing", "upload_photo", "record_video", "upload_video", "record_voice", "upload_voice",
    "upload_document", "choose_sticker", "find_location", "record_video_note",
    "upload_video_note",
}  # fmt: skip
DRAFT_ID = "draft_id must be non-zero"  # the real wording is not documented
Media = Literal["photo", "voice", "audio", "video_note", "sticker", "document"]
MEDIA: dict[str, Body] = {  # the object's fields besides its ids, as a phone sends them
    "photo": {},
    "voice": {"duration": 3, "mime_type": "audio/ogg", "file_size": 27150},
    "audio": {"duration": 184, "file_name": "song.mp3", "mime_type": "audio/mpeg",
              "file_size": 2948117},
    "video_note": {"length": 384, "duration": 7, "file_size": 498311},
    "sticker": {"width": 512, "height": 512, "emoji": "👍", "set_name": "HotCherry",
                "is_animated": False, "is_video": False, "type": "regular", "file_size": 21870},
    "document": {"file_name": "notes.pdf", "mime_type": "application/pdf", "file_size": 48213},
}  # fmt: skip
FILE_PREFIX = {"photo": "AgACAgIAAxkBAAI", "voice": "AwACAgIAAxkBAAI",
               "audio": "CQACAgIAAxkBAAI", "video_note": "DQACAgIAAxkBAAI",
               "sticker": "CAACAgIAAxkBAAI", "document": "BQACAgIAAxkBAAI"}  # fmt: skip
# Where getFile puts a file, and its suffix unless its file_name has one.
FILE_PATH = {"photo": ("photos", ".jpg"), "voice": ("voice", ".oga"), "audio": ("music", ".mp3"),
             "video_note": ("video_notes", ".mp4"), "sticker": ("stickers", ".webp"),
             "document": ("documents", "")}  # fmt: skip
MAX_DOWNLOAD = 20 * 1024 * 1024  # what getFile serves to a bot


@dataclass
class Call:
    method: str
    token: str
    params: Body  # as received: form values are strings, JSON-encoded when complex
    time: float


@dataclass
class Edit:
    text: str
    entities: list[Body]
    parse_mode: str | None
    reply_markup: Body | None
    time: float


@dataclass
class Sent:
    message_id: int
    chat_id: int
    text: str  # as the user sees it: markup parsed into ``entities``
    entities: list[Body]
    parse_mode: str | None
    reply_markup: Body | None
    link_preview_options: Body | None
    reply_to: int | None
    time: float
    source: str  # the text as the request carried it
    edits: list[Edit] = field(default_factory=list)


@dataclass
class Draft:
    chat_id: int
    draft_id: int
    text: str  # as the user sees it, markup parsed; "": the "Thinking…" placeholder
    entities: list[Body]
    message_thread_id: int | None
    time: float


@dataclass
class Download:
    file_path: str
    size: int
    time: float


@dataclass
class Action:
    chat_id: int
    action: str
    time: float


@dataclass
class Answer:
    query_id: str
    text: str | None
    show_alert: bool
    time: float


@dataclass
class _Chat:
    json: Body
    last_message_id: int = 0
    messages: dict[int, Sent | Body] = field(default_factory=dict)  # Body: the user's own


@dataclass
class _File:
    file_id: str
    unique_id: str
    kind: str
    size: int
    content: bytes | None  # None: placeholder bytes of ``size``
    file_name: str | None
    path: str | None = None  # given at the first getFile


@dataclass
class _Bot:
    user: Body
    revoked: bool = False
    conflict: bool = False
    last_update_id: int = 700_000_000
    updates: list[Body] = field(default_factory=list)  # not confirmed yet
    allowed: list[str] = field(default_factory=list)  # empty: every kind
    poller: object | None = None
    chats: dict[int, _Chat] = field(default_factory=dict)
    blocked: set[int] = field(default_factory=set)
    sent: list[Sent] = field(default_factory=list)
    actions: list[Action] = field(default_factory=list)
    queries: dict[str, bool] = field(default_factory=dict)  # issued id -> answered
    answers: list[Answer] = field(default_factory=list)
    commands: list[Body] = field(default_factory=list)  # setMyCommands, default scope
    drafts: list[Draft] = field(default_factory=list)
    drafts_refused: bool = False
    files: dict[str, _File] = field(default_factory=dict)  # by file_id
    paths: dict[str, _File] = field(default_factory=dict)  # by file_path, once asked for
    downloads: list[Download] = field(default_factory=list)


@dataclass
class _Fault:
    method: str
    token: str | None
    status: int
    description: str
    parameters: Body | None
    times: int


class FakeTelegram:
    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self.after_updates_delivered: Hook | None = None
        self._bots: dict[str, _Bot] = {}
        self._calls: list[Call] = []
        self._faults: list[_Fault] = []
        self._held: set[str] = set()
        self._answers_held: set[str] = set()
        self._changed: anyio.Event | None = None
        self._closed = False
        self._file_ids = itertools.count(1001)
        self._query_ids = itertools.count(4_117_000_000_000_000_001)
        self._methods: dict[str, Callable[[_Bot, Body], Awaitable[Any]]] = {
            "getme": self._get_me, "deletewebhook": self._delete_webhook,
            "getupdates": self._get_updates, "sendmessage": self._send_message,
            "editmessagetext": self._edit_message_text,
            "editmessagereplymarkup": self._edit_message_reply_markup,
            "answercallbackquery": self._answer_callback_query,
            "sendchataction": self._send_chat_action,
            "setmycommands": self._set_my_commands,
            "sendmessagedraft": self._send_message_draft, "getfile": self._get_file,
        }  # fmt: skip
        self.app = Starlette(
            routes=[
                Route("/bot{token}/{method}", self._endpoint, methods=["GET", "POST"]),
                Route("/file/bot{token}/{path:path}", self._download, methods=["GET"]),
                Route("/_control/{action}", self._control, methods=["GET", "POST"]),
            ]
        )

    # -- set-up and faults ---------------------------------------------------------------

    def add_bot(self, token: str, *, username: str | None = None, name: str = "Fake Bot") -> None:
        if not TOKEN.fullmatch(token):
            raise ValueError("a bot token looks like <digits>:<secret>")
        bot_id = int(token.partition(":")[0])
        user = {"id": bot_id, "is_bot": True, "first_name": name}
        self._bots[token] = _Bot(user | {"username": username or f"fake{bot_id}_bot"})

    def revoke(self, token: str) -> None:
        self._bots[token].revoked = True

    def conflict(self, token: str, on: bool = True) -> None:
        """Another poller is present: every getUpdates of this bot answers 409."""
        self._bots[token].conflict = on
        self._signal()

    def block(self, token: str, chat_id: int, blocked: bool = True) -> None:
        """The user blocked the bot: calls for this chat answer 403."""
        if blocked:
            self._bots[token].blocked.add(chat_id)
        else:
            self._bots[token].blocked.discard(chat_id)

    def refuse_drafts(self, token: str, on: bool = True) -> None:
        """Drafts are not available: every sendMessageDraft of this bot answers 400."""
        self._bots[token].drafts_refused = on

    def fail_next(
        self,
        method: str,
        status: int = 429,
        *,
        retry_after: int = 3,
        times: int = 1,
        description: str | None = None,
        token: str | None = None,
    ) -> None:
        """The next ``times`` calls of ``method`` fail with ``status`` (429 carries retry_after;
        502 is nginx's HTML page, as when the API is down)."""
        parameters = {"retry_after": retry_after} if status == 429 else None
        default = f"Too Many Requests: retry after {retry_after}" if status == 429 else None
        description = description or default or HTTPStatus(status).phrase
        self._faults.append(_Fault(method.lower(), token, status, description, parameters, times))

    def hold(self, method: str, *, answers: bool = False) -> None:
        """Calls of ``method`` hang (after authentication) until ``release``. ``answers``:
        they are carried out (a message sent is in its chat and may be tapped, as the user
        may see it before the bot has Telegram's answer), and their answers hang."""
        (self._answers_held if answers else self._held).add(method.lower())

    def release(self, method: str | None = None) -> None:
        for held in (self._held, self._answers_held):
            held.difference_update([method.lower()] if method else list(held))
        self._signal()

    def forget(self) -> None:
        """Clear what was recorded (messages sent, drafts, chat actions, answers, downloads,
        calls), the faults and the holds; bots, chats, files and updates not yet confirmed
        stay."""
        for bot in self._bots.values():
            bot.sent.clear()
            bot.drafts.clear()
            bot.actions.clear()
            bot.answers.clear()
            bot.downloads.clear()
        self._calls.clear()
        self._faults.clear()
        self.release()

    def close(self) -> None:
        """End long polls and holds, so that the server can stop."""
        self._closed = True
        self.release()

    @asynccontextmanager
    async def serve(self) -> AsyncIterator[str]:
        """Serve on loopback; yield ``http://127.0.0.1:PORT``."""
        self._closed = False
        async with serving(self.app) as url:
            try:
                yield url
            finally:
                self.close()

    # -- injection -----------------------------------------------------------------------

    def user_message(
        self,
        token: str,
        user_id: int,
        text: str,
        *,
        chat_id: int | None = None,
        chat_type: str = "private",
        **fields: Any,
    ) -> int:
        """A user writes ``text``; returns the update id. A leading /command gets its entity."""
        command = text.split(maxsplit=1)[0] if text.startswith("/") else ""
        entity = {"type": "bot_command", "offset": 0, "length": utf16(command)}
        extra = {"entities": [entity]} if command else {}
        return self._incoming(token, user_id, chat_id, chat_type, {"text": text} | extra | fields)

    def user_media(
        self,
        token: str,
        user_id: int,
        kind: Media,
        *,
        content: bytes | None = None,
        chat_id: int | None = None,
        duration: int | None = None,
        file_name: str | None = None,
        mime_type: str | None = None,
        file_size: int | None = None,
        sizes: list[tuple[int, int, bytes]] | None = None,
        media: Body | None = None,
        **fields: Any,
    ) -> int:
        """A user sends a photo, voice note, audio file, video note, sticker or document;
        returns the update id. ``content``: the file's bytes, which getFile and its file URL
        serve (``file_size`` is their length); without it, placeholder bytes of a realistic
        ``file_size``. ``duration``, ``file_name``, ``mime_type`` and ``file_size`` set the
        fields the Bot API gives that object (a ``file_name`` alone implies its MIME type);
        ``media`` adds others (an audio's ``performer`` and ``title``).

        A photo is a list of sizes, smallest first, each with a file of its own: ``sizes``
        gives each (width, height, bytes); else ``content`` is served for every size, at
        widths 90/320/800/1280, the largest's ``file_size`` its length and the smaller ones'
        estimates scaled by area (getFile reports the length served); without either, the
        widths 90/320/1280 with placeholder bytes.

        ``fields`` go to the message: ``caption="..."``, or ``forward_origin={"type": "user",
        "sender_user": {"id": ..., "is_bot": false, "first_name": ...}, "date": ...}`` for a
        message forwarded from a user."""
        bot, n = self._bots[token], next(self._file_ids)
        file_id = f"{FILE_PREFIX[kind]}{n}AAHVwo3xX9kG"
        given = {"duration": duration, "file_name": file_name, "mime_type": mime_type,
                 "file_size": file_size}  # fmt: skip
        given = {name: value for name, value in given.items() if value is not None}
        unknown = [name for name in given if name not in MEDIA[kind]]
        unknown += ["sizes"] if sizes is not None and kind != "photo" else []
        if unknown:
            raise ValueError(f"a {kind} has no {', '.join(unknown)}")
        if content is not None and (file_size, sizes) != (None, None):
            raise ValueError("content sets the file_size (and a photo's sizes): pass one of them")
        if kind == "photo":
            photo = self._photo(bot, n, file_id, content, sizes, media or {})
            return self._incoming(token, user_id, chat_id, "private", {"photo": photo} | fields)
        if file_name and not mime_type and "mime_type" in MEDIA[kind]:
            given["mime_type"] = mimetypes.guess_type(file_name)[0] or "application/octet-stream"
        size = {} if content is None else {"file_size": len(content)}
        ids = {"file_id": file_id, "file_unique_id": f"AgAD{n}"}
        obj = self._register(bot, kind, ids | MEDIA[kind] | given | size | (media or {}), content)
        return self._incoming(token, user_id, chat_id, "private", {kind: obj} | fields)

    def user_document(self, token: str, user_id: int, file_name: str, content: bytes, *,
                      mime_type: str | None = None, **fields: Any) -> int:  # fmt: skip
        """A user sends ``content`` as the file ``file_name``; its MIME type is guessed from
        the name unless given. ``fields`` as for ``user_media``."""
        return self.user_media(token, user_id, "document", content=content, file_name=file_name,
                               mime_type=mime_type, **fields)  # fmt: skip

    def tap(self, token: str, user_id: int, message_id: int, data: str, *,
            chat_id: int | None = None, forged: bool = False) -> str:  # fmt: skip
        """The user taps the button with ``data`` under the bot's message; returns the query id.
        ``forged``: data that no button carries (a crafted client can send it)."""
        bot = self._bots[token]
        chat = bot.chats[user_id if chat_id is None else chat_id]
        sent = chat.messages.get(message_id)
        if not isinstance(sent, Sent):
            raise ValueError(f"the bot sent no message {message_id} to chat {chat.json['id']}")
        rows = (sent.reply_markup or {}).get("inline_keyboard", [])
        if not forged and data not in [b.get("callback_data") for row in rows for b in row]:
            raise ValueError(f"message {message_id} has no button with callback_data {data!r}")
        query_id = str(next(self._query_ids))
        bot.queries[query_id] = False
        message = self._message_json(bot, chat, sent)
        instance = str(bot.user["id"] * 7919 + chat.json["id"])
        query = {"id": query_id, "from": _user(user_id), "message": message,
                 "chat_instance": instance, "data": data}  # fmt: skip
        self._queue(bot, {"callback_query": query})
        return query_id

    # -- reading -------------------------------------------------------------------------

    def sent(self, token: str, chat_id: int | None = None) -> list[Sent]:
        return [s for s in self._bots[token].sent if chat_id in (None, s.chat_id)]

    def drafts(self, token: str, chat_id: int | None = None) -> list[Draft]:
        return [d for d in self._bots[token].drafts if chat_id in (None, d.chat_id)]

    def downloads(self, token: str) -> list[Download]:
        """The files the bot fetched from the file URLs, in order."""
        return list(self._bots[token].downloads)

    def actions(self, token: str, chat_id: int | None = None) -> list[Action]:
        return [a for a in self._bots[token].actions if chat_id in (None, a.chat_id)]

    def commands(self, token: str) -> list[Body]:
        """The bot's command menu (setMyCommands): [{"command", "description"}, ...]."""
        return list(self._bots[token].commands)

    def callback_answers(self, token: str) -> list[Answer]:
        return list(self._bots[token].answers)

    def calls(self, method: str | None = None) -> list[Call]:
        return [c for c in self._calls if method is None or c.method.lower() == method.lower()]

    def pending(self, token: str) -> list[int]:
        """Ids of the updates not confirmed yet."""
        return [u["update_id"] for u in self._bots[token].updates]

    async def wait_for(self, predicate: Callable[[], bool], timeout_s: float = 5.0) -> None:
        """Wait until ``predicate()`` holds, checked at every call and injection, and at each
        ``changed()`` (what a predicate reads outside this fake, e.g. the model's requests)."""
        with anyio.fail_after(timeout_s):
            while not predicate():
                await self._next_change()

    # -- HTTP ----------------------------------------------------------------------------

    async def _endpoint(self, request: Request) -> Response:
        token, method = request.path_params["token"], request.path_params["method"]
        params = await _params(request)
        self._calls.append(Call(method, token, params, self.clock()))
        self._signal()
        try:
            bot, handler = self._bots.get(token), self._methods.get(method.lower())
            if not TOKEN.fullmatch(token) or handler is None:
                raise Refused(404, "Not Found")
            if bot is None or bot.revoked:
                raise Refused(401, "Unauthorized")
            while method.lower() in self._held and not self._closed:
                await self._next_change()
            if fault := self._fault(method, token):
                return fault
            result = await handler(bot, params)
            self._signal()
            while method.lower() in self._answers_held and not self._closed:
                await self._next_change()
        except Refused as refused:
            return _refusal(refused)
        finally:
            self._signal()
        ids = [u["update_id"] for u in result] if method.lower() == "getupdates" else []
        delivered = BackgroundTask(self._delivered, token, ids) if ids else None
        return JSONResponse({"ok": True, "result": result}, background=delivered)

    async def _download(self, request: Request) -> Response:
        bot = self._bots.get(request.path_params["token"])
        file = bot.paths.get(request.path_params["path"]) if bot and not bot.revoked else None
        if bot is None or file is None or file.path is None:
            return _refusal(Refused(404, "Not Found"))
        content = bytes(file.size) if file.content is None else file.content
        bot.downloads.append(Download(file.path, len(content), self.clock()))
        self._signal()
        return Response(content, media_type="application/octet-stream")

    async def _control(self, request: Request) -> Response:
        args: Body = dict(request.query_params)
        if request.method == "POST":
            args |= await request.json()
        only = next(iter(self._bots)) if len(self._bots) == 1 else None
        token = args.get("token") or only
        if token not in self._bots:
            return JSONResponse({"error": "unknown bot: pass its token"}, 404)
        chat_id = int(args["chat_id"]) if args.get("chat_id") else None
        try:
            match request.path_params["action"]:
                case "message":
                    update = self.user_message(token, int(args["user_id"]), str(args["text"]),
                                               chat_id=chat_id)  # fmt: skip
                    return JSONResponse({"update_id": update})
                case "tap":
                    query = self.tap(token, int(args["user_id"]), int(args["message_id"]),
                                     str(args["data"]), chat_id=chat_id,
                                     forged=bool(args.get("forged")))  # fmt: skip
                    return JSONResponse({"callback_query_id": query})
                case "sent":
                    return JSONResponse([asdict(s) for s in self.sent(token, chat_id)])
        except (KeyError, ValueError) as error:
            return JSONResponse({"error": f"{type(error).__name__}: {error}"}, 400)
        return JSONResponse({"error": "unknown control action"}, 404)

    async def _delivered(self, token: str, ids: list[int]) -> None:
        hook = self.after_updates_delivered
        if hook is not None and (pending := hook(token, ids)) is not None:
            await pending

    # -- methods -------------------------------------------------------------------------

    async def _get_me(self, bot: _Bot, params: Body) -> Body:
        return bot.user | {"can_join_groups": True, "can_read_all_group_messages": False,
                           "supports_inline_queries": False, "can_connect_to_business": False,
                           "has_main_web_app": False}  # fmt: skip

    async def _delete_webhook(self, bot: _Bot, params: Body) -> bool:
        if _flag(params, "drop_pending_updates"):
            bot.updates.clear()
        return True

    async def _get_updates(self, bot: _Bot, params: Body) -> list[Body]:
        offset = _int(params, "offset") or 0
        limit = min(max(_int(params, "limit") or 100, 1), 100)
        timeout = max(float(params.get("timeout") or 0), 0.0)
        if (allowed := _json(params, "allowed_updates")) is not None:
            bot.allowed = list(allowed)
        if offset < 0:
            bot.updates = bot.updates[offset:]
        elif offset:
            bot.updates = [u for u in bot.updates if u["update_id"] >= offset]
        me = object()
        bot.poller = me  # the request in progress, if any, learns it lost at the signal below
        self._signal()
        try:
            with anyio.move_on_after(timeout):
                while bot.poller is me and not (bot.conflict or self._closed or _ready(bot)):
                    await self._next_change()
            if bot.poller is not me or bot.conflict:
                raise Refused(409, CONFLICT)
            return _ready(bot)[:limit]
        finally:
            if bot.poller is me:
                bot.poller = None

    async def _send_message(self, bot: _Bot, params: Body) -> Body:
        text, entities, mode = _text(params)
        chat = self._chat(bot, params)
        keyboard = markup(_json(params, "reply_markup"))
        reply = _json(params, "reply_parameters") or {}
        reply_to = reply.get("message_id")
        if reply_to is not None and reply_to not in chat.messages:
            if not reply.get("allow_sending_without_reply"):
                raise bad("message to be replied not found")
            reply_to = None
        chat.last_message_id += 1
        sent = Sent(chat.last_message_id, chat.json["id"], text, entities, mode, keyboard,
                    _json(params, "link_preview_options"), reply_to, self.clock(),
                    str(params["text"]))  # fmt: skip
        chat.messages[sent.message_id] = sent
        bot.sent.append(sent)
        return self._message_json(bot, chat, sent)

    async def _send_message_draft(self, bot: _Bot, params: Body) -> bool:
        if bot.drafts_refused:
            raise bad("method sendMessageDraft is not available")
        if not (draft_id := _int(params, "draft_id")):
            raise bad(DRAFT_ID)
        chat = self._chat(bot, params)
        if chat.json["type"] != "private":
            raise bad("TEXTDRAFT_PEER_INVALID")
        source, mode = str(params.get("text") or ""), params.get("parse_mode") or None
        text, entities = shown(source, mode, _json(params, "entities"))
        if utf16(text) > MAX_TEXT:
            raise bad("text is too long")
        thread = _int(params, "message_thread_id")
        bot.drafts.append(Draft(chat.json["id"], draft_id, text, entities, thread, self.clock()))
        return True

    async def _edit_message_text(self, bot: _Bot, params: Body) -> Body:
        chat, sent = self._editable(bot, params)
        text, entities, mode = _text(params)
        return self._edit(bot, chat, sent, Edit(text, entities, mode,
                          markup(_json(params, "reply_markup")), self.clock()))  # fmt: skip

    async def _edit_message_reply_markup(self, bot: _Bot, params: Body) -> Body:
        chat, sent = self._editable(bot, params)
        keyboard = markup(_json(params, "reply_markup"))
        edit = Edit(sent.text, sent.entities, sent.parse_mode, keyboard, self.clock())
        return self._edit(bot, chat, sent, edit)

    async def _answer_callback_query(self, bot: _Bot, params: Body) -> bool:
        query_id = str(params.get("callback_query_id") or "")
        if bot.queries.get(query_id) is not False:
            raise bad(QUERY_INVALID)
        text = params.get("text")
        if text and len(text) > 200:
            raise bad("MESSAGE_TOO_LONG")
        bot.queries[query_id] = True
        bot.answers.append(Answer(query_id, text, _flag(params, "show_alert"), self.clock()))
        return True

    async def _send_chat_action(self, bot: _Bot, params: Body) -> bool:
        chat = self._chat(bot, params)
        if params.get("action") not in ACTIONS:
            raise bad("wrong parameter action in request")
        bot.actions.append(Action(chat.json["id"], params["action"], self.clock()))
        return True

    async def _set_my_commands(self, bot: _Bot, params: Body) -> bool:
        raw = params.get("commands")
        commands = json.loads(raw) if isinstance(raw, str) else raw
        if not isinstance(commands, list) or len(commands) > 100:
            raise bad("can't parse commands JSON object")
        for command in commands:
            name, text = command.get("command", ""), command.get("description", "")
            if not COMMAND.fullmatch(name):
                raise bad("BOT_COMMAND_INVALID")
            if not 1 <= len(text) <= 256:
                raise bad("command description is empty or too long")
        bot.commands = [
            {"command": c["command"], "description": c["description"]} for c in commands
        ]
        return True

    async def _get_file(self, bot: _Bot, params: Body) -> Body:
        file = bot.files.get(str(params.get("file_id") or ""))
        if file is None:
            raise bad("invalid file_id")
        if file.size > MAX_DOWNLOAD:
            raise bad("file is too big")
        if file.path is None:
            folder, suffix = FILE_PATH[file.kind]
            suffix = PurePosixPath(file.file_name or "").suffix or suffix
            file.path = f"{folder}/file_{len(bot.paths) + 1}{suffix}"
            bot.paths[file.path] = file
        return {"file_id": file.file_id, "file_unique_id": file.unique_id,
                "file_size": file.size, "file_path": file.path}  # fmt: skip

    # -- helpers -------------------------------------------------------------------------

    def _chat(self, bot: _Bot, params: Body) -> _Chat:
        if params.get("chat_id") in (None, ""):
            raise bad("chat_id is empty")
        chat_id = _int(params, "chat_id", bad("chat not found"))
        if (chat := bot.chats.get(chat_id or 0)) is None:
            raise bad("chat not found")
        if chat_id in bot.blocked:
            raise Refused(403, BLOCKED)
        return chat

    def _editable(self, bot: _Bot, params: Body) -> tuple[_Chat, Sent]:
        chat = self._chat(bot, params)
        message = chat.messages.get(_int(params, "message_id") or 0)
        if message is None:
            raise bad("message to edit not found")
        if not isinstance(message, Sent):
            raise bad("message can't be edited")
        return chat, message

    def _edit(self, bot: _Bot, chat: _Chat, sent: Sent, edit: Edit) -> Body:
        if (edit.text, edit.entities, edit.reply_markup) == (
            sent.text, sent.entities, sent.reply_markup,
        ):  # fmt: skip
            raise bad(NOT_MODIFIED)
        sent.edits.append(edit)
        sent.text, sent.entities, sent.parse_mode = edit.text, edit.entities, edit.parse_mode
        sent.reply_markup = edit.reply_markup
        return self._message_json(bot, chat, sent)

    def _message_json(self, bot: _Bot, chat: _Chat, sent: Sent) -> Body:
        message = {"message_id": sent.message_id, "from": bot.user, "chat": chat.json,
                   "date": int(sent.time), "text": sent.text}  # fmt: skip
        if sent.edits:
            message["edit_date"] = int(sent.edits[-1].time)
        if sent.entities:
            message["entities"] = sent.entities
        if sent.reply_markup and "inline_keyboard" in sent.reply_markup:
            message["reply_markup"] = sent.reply_markup
        if sent.reply_to is not None:
            replied = chat.messages[sent.reply_to]
            replied = (
                replied if isinstance(replied, dict) else self._message_json(bot, chat, replied)
            )
            message["reply_to_message"] = replied
        return message

    def _incoming(self, token: str, user_id: int, chat_id: int | None, chat_type: str,
                  fields: Body) -> int:  # fmt: skip
        bot = self._bots[token]
        chat_id = user_id if chat_id is None else chat_id
        if (chat := bot.chats.get(chat_id)) is None:
            chat_json = {"id": chat_id, "title": f"Group {chat_id}", "type": chat_type}
            if chat_type == "private":
                chat_json = {"id": chat_id, "first_name": _user(user_id)["first_name"],
                             "type": "private"}  # fmt: skip
            chat = bot.chats[chat_id] = _Chat(chat_json)
        chat.last_message_id += 1
        message = {"message_id": chat.last_message_id, "from": _user(user_id),
                   "chat": chat.json, "date": int(self.clock())} | fields  # fmt: skip
        chat.messages[chat.last_message_id] = message
        return self._queue(bot, {"message": message})

    def _photo(self, bot: _Bot, n: int, file_id: str, content: bytes | None,
               sizes: list[tuple[int, int, bytes]] | None, media: Body) -> list[Body]:  # fmt: skip
        shots: list[tuple[int, int, int, bytes | None]]  # width, height, file_size, bytes
        if sizes is not None:
            shots = [(w, h, len(data), data) for w, h, data in sorted(sizes, key=_area)]
        elif content is not None:
            shots = [(w, w * 3 // 4, max(1, len(content) * w * w // 1280**2), content)
                     for w in (90, 320, 800, 1280)]  # fmt: skip
        else:  # the three sizes placeholder photos always had
            shots = [(w, w * 3 // 4, w * w // 10, None) for w in (90, 320, 1280)]
        photo = []
        for w, h, size, data in shots:
            ids = {"file_id": f"{file_id}{w}", "file_unique_id": f"AQAD{n}{w}"}
            dims = {"width": w, "height": h, "file_size": size}
            photo.append(self._register(bot, "photo", ids | dims | media, data))
        return photo

    def _register(self, bot: _Bot, kind: str, media: Body, content: bytes | None) -> Body:
        """``media``'s file is the bot's to fetch: ``content``, or placeholder bytes."""
        size = media["file_size"] if content is None else len(content)
        bot.files[media["file_id"]] = _File(media["file_id"], media["file_unique_id"], kind, size,
                                            content, media.get("file_name"))  # fmt: skip
        return media

    def _queue(self, bot: _Bot, update: Body) -> int:
        bot.last_update_id += 1
        bot.updates.append({"update_id": bot.last_update_id} | update)
        self._signal()
        return bot.last_update_id

    def _fault(self, method: str, token: str) -> Response | None:
        for fault in self._faults:
            if fault.method == method.lower() and fault.token in (None, token):
                fault.times -= 1
                if fault.times <= 0:
                    self._faults.remove(fault)
                if fault.status == 502:
                    return Response(BAD_GATEWAY, 502, media_type="text/html")
                raise Refused(fault.status, fault.description, fault.parameters)
        return None

    def changed(self) -> None:
        """Something outside this fake that a ``wait_for`` predicate reads has changed."""
        self._signal()

    async def _next_change(self) -> None:
        self._changed = self._changed or anyio.Event()
        await self._changed.wait()

    def _signal(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = None


async def _params(request: Request) -> Body:
    params: Body = dict(request.query_params)
    kind = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if kind == "application/json":
        body = await request.json()
        params |= body if isinstance(body, dict) else {}
    elif kind == "multipart/form-data":
        form = await request.form()
        params |= {k: v for k, v in form.items() if isinstance(v, str)}
    else:
        params |= dict(parse_qsl((await request.body()).decode(), keep_blank_values=True))
    return params


def _refusal(refused: Refused) -> Response:
    body = {"ok": False, "error_code": refused.status, "description": refused.description}
    return JSONResponse(body | ({"parameters": refused.parameters} if refused.parameters else {}),
                        refused.status)  # fmt: skip


def _json(params: Body, name: str) -> Any:
    value = params.get(name)
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        raise bad(f"can't parse {name} JSON object") from None


def _int(params: Body, name: str, refusal: Refused | None = None) -> int | None:
    value = params.get(name)
    try:
        return None if value in (None, "") else int(value)
    except (TypeError, ValueError):
        raise refusal or bad(f"invalid {name} specified") from None


def _flag(params: Body, name: str) -> bool:
    return params.get(name) in (True, "true", "True", "1", 1)


def _user(user_id: int) -> Body:
    return {"id": user_id, "is_bot": False, "first_name": f"User {user_id}", "language_code": "en"}


def _area(size: tuple[int, int, bytes]) -> int:
    return size[0] * size[1]


def _ready(bot: _Bot) -> list[Body]:
    if bot.allowed:  # updates of other kinds are never delivered, as if never created
        bot.updates = [u for u in bot.updates if set(u) & set(bot.allowed)]
    return list(bot.updates)


def _text(params: Body) -> tuple[str, list[Body], str | None]:
    """The text a message shows, its entities and parse mode, from the request."""
    source, mode = str(params.get("text") or ""), params.get("parse_mode") or None
    return render(source, mode, _json(params, "entities"))


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m fakes.telegram_api",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8443)
    parser.add_argument("--token", action="append", required=True, help="a bot to serve")
    args = parser.parse_args()
    fake = FakeTelegram()
    for token in args.token:
        fake.add_bot(token)
    uvicorn.run(fake.app, host=args.host, port=args.port, access_log=False)  # URLs hold tokens


if __name__ == "__main__":
    main()
