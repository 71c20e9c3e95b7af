"""python-telegram-bot's Bot on telegram-io's httpx2 backend: real HTTP, local servers."""

from __future__ import annotations

import json
import socket
from typing import Any

import anyio
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from telegram import Bot, InputFile
from telegram.error import NetworkError, TimedOut
from telegram.request import RequestData
from telegram.request._requestparameter import RequestParameter

from fakes.serving import serving
from fakes.telegram_api import FakeTelegram
from mcp_telegram_io.request import Httpx2Request, SharedClient

pytestmark = pytest.mark.anyio

TOKEN = "7100000001:AAFakeTokenForAda00000123456789abcdef"


async def test_a_bot_talks_to_the_bot_api_through_it() -> None:
    fake = FakeTelegram()
    fake.add_bot(TOKEN, name="Ada")
    client = SharedClient(connections=4)
    async with fake.serve() as base:
        bot = Bot(
            TOKEN,
            base_url=f"{base}/bot",
            request=Httpx2Request(client),
            get_updates_request=Httpx2Request(client),
        )
        async with bot:
            me = await bot.get_me()
            fake.user_message(TOKEN, 42, "hi")
            updates = await bot.get_updates(timeout=1)
            sent = await bot.send_message(42, "hello *there*", parse_mode="MarkdownV2")
    assert me.first_name == "Ada"
    assert sent.text == "hello there"
    assert [u.message.text for u in updates if u.message] == ["hi"]
    assert [s.text for s in fake.sent(TOKEN, 42)] == ["hello there"]
    # (``async with bot`` asks getMe once itself)
    assert [c.method for c in fake.calls()] == ["getMe", "getMe", "getUpdates", "sendMessage"]


def form_and_files() -> Starlette:
    async def echo(request: Request) -> JSONResponse:
        form = await request.form()
        fields: dict[str, Any] = {}
        for key, value in form.multi_items():
            if isinstance(value, str):
                fields[key] = value
            else:
                fields[key] = {"filename": value.filename, "bytes": len(await value.read())}
        return JSONResponse({"ok": True, "result": fields})

    return Starlette(routes=[Route("/echo", echo, methods=["POST"])])


async def test_parameters_go_as_a_form_and_files_as_multipart() -> None:
    client = SharedClient(connections=2)
    request = Httpx2Request(client)
    document = InputFile(b"x" * 3000, filename="list.txt", attach=True)
    data = RequestData(
        [
            RequestParameter.from_input("chat_id", 42),
            RequestParameter.from_input("caption", "the list"),
            RequestParameter.from_input("document", document),
        ]
    )
    async with serving(form_and_files()) as base, request:
        status, body = await request.do_request(f"{base}/echo", "POST", data)
    assert status == 200
    result = json.loads(body)["result"]
    assert result["chat_id"] == "42"
    assert result["caption"] == "the list"
    assert result["document"] == f"attach://{document.attach_name}"
    assert result[document.attach_name] == {"filename": "list.txt", "bytes": 3000}


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_an_unreachable_api_is_a_network_error() -> None:
    request = Httpx2Request(SharedClient(connections=2), connect_timeout=2)
    async with request:
        with pytest.raises(NetworkError, match=r"httpx2\.ConnectError"):
            await request.do_request(f"http://127.0.0.1:{closed_port()}/bot/getMe", "POST")


def silent() -> Starlette:
    async def never(_: Request) -> JSONResponse:
        await anyio.sleep(1.5)
        return JSONResponse({})

    return Starlette(routes=[Route("/slow", never, methods=["POST"])])


async def test_a_slow_answer_times_out_and_a_full_pool_says_the_request_was_not_sent() -> None:
    client = SharedClient(connections=1)
    request = Httpx2Request(client, read_timeout=0.2, pool_timeout=0.2)
    async with serving(silent()) as base, request:
        with pytest.raises(TimedOut):
            await request.do_request(f"{base}/slow", "POST")
        errors: list[Exception] = []

        async def attempt() -> None:
            try:
                await request.do_request(f"{base}/slow", "POST", read_timeout=1)
            except TimedOut as error:
                errors.append(error)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(attempt)  # holds the only connection for 1 s
            tasks.start_soon(attempt)  # waits 0.2 s for it: pool timeout
    assert len(errors) == 2
    assert any("was *not* sent" in str(error) for error in errors)


async def test_the_shared_client_closes_with_the_last_user_only() -> None:
    client = SharedClient(connections=2)
    first, second = Httpx2Request(client), Httpx2Request(client)
    await first.initialize()
    await second.initialize()
    await first.initialize()  # twice: still one user
    http = client.get()
    await first.shutdown()
    open_after_first = not http.is_closed
    await second.shutdown()
    assert (open_after_first, http.is_closed) == (True, True)
    with pytest.raises(RuntimeError, match="not initialized"):
        await first.do_request("http://127.0.0.1:9/", "POST")
    await first.initialize()  # opens a new one
    assert not client.get().is_closed
    await first.shutdown()
