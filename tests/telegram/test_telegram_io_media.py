"""Media updates describe their file, and download_media hands it on as MCP content: through
the in-memory MCP client against the fake Bot API, with real media made here."""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastmcp import Client
from fastmcp.client.client import CallToolResult
from mcp_types import AudioContent, BlobResourceContents, EmbeddedResource, ImageContent

from fakes.audio import ogg_opus, probe, wav
from fakes.images import jpeg
from fakes.serving import free_port
from fakes.telegram_api import FakeTelegram
from fakes.tool_calls import call, call_error
from mcp_telegram_io.models import normalize
from mcp_telegram_io.poller import PollPolicy
from mcp_telegram_io.server import build_server
from mcp_telegram_io.settings import TelegramIOSettings
from meshkit.settings import CONFIG_ERROR_EXIT, load_settings
from meshkit.wire.telegram_io import TRY_LATER

pytestmark = pytest.mark.anyio

ADA = "7100000001:AAFakeTokenForAda00000123456789abcdef"
USER = 42
ICS = (
    b"BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//clawmesh tests//EN\r\nBEGIN:VEVENT\r\n"
    b"UID:flight-1@example.com\r\nDTSTAMP:20260301T090000Z\r\nDTSTART:20260314T071500Z\r\n"
    b"DTEND:20260314T093000Z\r\nSUMMARY:Flight to Lisbon\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
)
NOTHING = "nothing was downloaded"
QUIET = ("httpx", "httpx2", "httpcore", "httpcore2")  # as meshkit.logs quiets them


SIZES = [(w, h, jpeg(w, h)) for w, h in ((90, 68), (320, 240), (800, 600), (1280, 960))]
BIG_PHOTO = (2560, 1920, jpeg(2560, 1920))


@asynccontextmanager
async def telegram_io(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **settings: Any
) -> AsyncIterator[tuple[FakeTelegram, Client[Any], TelegramIOSettings]]:
    fake = FakeTelegram()
    fake.add_bot(ADA)
    agents = tmp_path / "agents.yaml"
    agents.write_text("agents:\n  ada: {bot_token_env: ADA_TOKEN}\n")
    monkeypatch.setenv("PTB_TIMEDELTA", "true")
    monkeypatch.setenv("ADA_TOKEN", ADA)
    async with fake.serve() as base:
        config = TelegramIOSettings(
            api_base=base, agents=agents, data_dir=tmp_path / "data", pace_s=0, **settings
        )
        policy = PollPolicy(timeout_s=1, backoff_initial_s=0.05, park_check_s=0.05)
        async with Client(build_server(config, policy=policy)) as client:
            yield fake, client, config


async def arrivals(client: Client[Any], *update_ids: int) -> list[dict[str, Any]]:
    """The updates ``update_ids`` once the poller has stored them (leased, not acked)."""
    seen: dict[int, dict[str, Any]] = {}
    with anyio.fail_after(10):
        while not set(update_ids) <= set(seen):
            got = await call(client, "next_updates", max=100, wait_s=5)
            seen |= {update["update_id"]: update for update in got["updates"]}
    return [seen[n] for n in update_ids]


async def arrived(client: Client[Any], update_id: int) -> dict[str, Any]:
    return (await arrivals(client, update_id))[0]


def only(result: CallToolResult) -> Any:
    """The file's content block (the first), after checking the JSON text that follows it
    says what the structured content says."""
    block, text = result.content
    assert json.loads(getattr(text, "text", "")) == result.structured_content
    return block


# -- what an update says of its file ---------------------------------------------------------


def raw(message: dict[str, Any]) -> str:
    chat = {"id": USER, "type": "private", "first_name": "Ann"}
    user = {"id": USER, "is_bot": False, "first_name": "Ann"}
    body = {"message_id": 7, "date": 1_700_000_000, "chat": chat, "from": user} | message
    return json.dumps({"update_id": 5, "message": body})


def ids(n: int) -> dict[str, Any]:
    return {"file_id": f"F{n}", "file_unique_id": f"U{n}"}


@pytest.mark.parametrize(
    ("message", "described"),
    [
        (
            {"voice": ids(1) | {"duration": 3, "mime_type": "audio/ogg", "file_size": 27150}},
            {"kind": "voice", "mime_type": "audio/ogg", "file_size": 27150, "duration": 3},
        ),
        (
            {"voice": ids(1) | {"duration": 2}},
            {"kind": "voice", "mime_type": "audio/ogg", "duration": 2},
        ),
        (
            {"audio": ids(2) | {"duration": 184, "file_name": "song.mp3", "file_size": 29481}},
            {
                "kind": "audio",
                "file_name": "song.mp3",
                "mime_type": "audio/mpeg",
                "file_size": 29481,
                "duration": 184,
            },
        ),
        (
            {"audio": ids(2) | {"duration": 4, "mime_type": "audio/x-wav"}},
            {"kind": "audio", "mime_type": "audio/x-wav", "duration": 4},
        ),
        (
            {"video_note": ids(3) | {"length": 384, "duration": 7, "file_size": 498311}},
            {
                "kind": "video_note",
                "mime_type": "video/mp4",
                "file_size": 498311,
                "duration": 7,
                "width": 384,
                "height": 384,
            },
        ),
        (
            {"document": ids(4) | {"file_name": "trip.ics", "mime_type": "text/calendar"}},
            {"kind": "document", "file_name": "trip.ics", "mime_type": "text/calendar"},
        ),
        (
            {"document": ids(4) | {"file_name": "notes.txt"}},
            {"kind": "document", "file_name": "notes.txt", "mime_type": "text/plain"},
        ),
        (
            {"document": ids(4)},
            {"kind": "document", "mime_type": "application/octet-stream"},
        ),
        (
            {
                "sticker": ids(5)
                | {
                    "width": 512,
                    "height": 512,
                    "is_animated": False,
                    "is_video": False,
                    "type": "regular",
                    "file_size": 21870,
                }
            },
            {
                "kind": "sticker",
                "mime_type": "image/webp",
                "file_size": 21870,
                "width": 512,
                "height": 512,
            },
        ),
        (
            {
                "sticker": ids(5)
                | {
                    "width": 512,
                    "height": 512,
                    "is_animated": True,
                    "is_video": False,
                    "type": "regular",
                }
            },
            {
                "kind": "sticker",
                "mime_type": "application/x-tgsticker",
                "width": 512,
                "height": 512,
            },
        ),
        (
            {
                "video": ids(6)
                | {
                    "width": 1920,
                    "height": 1080,
                    "duration": 12,
                    "mime_type": "video/quicktime",
                    "file_name": "clip.mov",
                }
            },
            {
                "kind": "video",
                "file_name": "clip.mov",
                "mime_type": "video/quicktime",
                "duration": 12,
                "width": 1920,
                "height": 1080,
            },
        ),
        (  # an animation comes with a document of the same file, for old clients
            {
                "animation": ids(7) | {"width": 320, "height": 180, "duration": 2},
                "document": ids(7) | {"file_name": "cat.gif.mp4", "mime_type": "video/mp4"},
            },
            {
                "kind": "animation",
                "mime_type": "video/mp4",
                "duration": 2,
                "width": 320,
                "height": 180,
            },
        ),
    ],
)
def test_normalize_describes_the_file_of_each_kind(
    message: dict[str, Any], described: dict[str, Any]
) -> None:
    update = normalize("ada", "7100000001", 5, raw(message | {"caption": "see"}), 1)
    assert (update.kind, update.media, update.text) == ("media", described["kind"], "see")
    assert update.file is not None
    expected = {"file_name": None, "file_size": None, "duration": None, "width": None,
                "height": None} | described  # fmt: skip
    assert update.file.model_dump() == expected


def test_media_without_a_file_and_other_updates_have_no_file_description() -> None:
    location = normalize("ada", "1", 5, raw({"location": {"latitude": 1, "longitude": 2}}), 1)
    text = normalize("ada", "1", 5, raw({"text": "hi"}), 1)
    broken = normalize("ada", "1", 5, raw({"voice": {"duration": 3}}), 1)  # no file_id
    assert (location.kind, location.media, location.file) == ("media", "location", None)
    assert (text.kind, text.file) == ("text", None)
    assert (broken.kind, broken.media, broken.file) == ("media", "voice", None)
    assert "file" in text.model_dump()  # the field is there for every update, null here


@pytest.mark.parametrize(
    ("sizes", "bound", "chosen"),
    [
        ([(90, 68), (320, 240), (800, 600), (1280, 960), (2560, 1920)], 1280, (1280, 960)),
        ([(90, 68), (320, 240), (800, 600), (1280, 960), (2560, 1920)], 1279, (800, 600)),
        ([(90, 68), (320, 240), (800, 600), (1280, 960), (2560, 1920)], 2560, (2560, 1920)),
        ([(68, 90), (240, 320), (600, 800), (960, 1280)], 800, (600, 800)),  # portrait
        ([(1600, 1200), (2560, 1920)], 1280, (1600, 1200)),  # all larger: the smallest
        ([(1280, 960)], 320, (1280, 960)),
    ],
)
def test_a_photo_is_described_in_the_largest_size_within_the_bound(
    sizes: list[tuple[int, int]], bound: int, chosen: tuple[int, int]
) -> None:
    photo = [ids(w) | {"width": w, "height": h, "file_size": w * h // 10} for w, h in sizes]
    update = normalize("ada", "1", 5, raw({"photo": photo}), 1, photo_max_side=bound)
    assert update.file is not None
    assert (update.file.width, update.file.height) == chosen
    assert update.file.file_size == chosen[0] * chosen[1] // 10
    assert (update.file.kind, update.file.mime_type) == ("photo", "image/jpeg")


async def test_next_updates_describe_the_files_telegram_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with telegram_io(tmp_path, monkeypatch, photo_max_side=800) as (fake, client, _):
        voice = ogg_opus(3)
        sent = [
            fake.user_media(ADA, USER, "voice", content=voice, duration=3),
            fake.user_media(ADA, USER, "photo", sizes=SIZES, caption="the view"),
            fake.user_document(ADA, USER, "trip.ics", ICS, caption="my flights"),
            fake.user_media(ADA, USER, "video_note", duration=7),
        ]
        updates = await arrivals(client, *sent)
    files = [u["file"] for u in updates]
    texts = [u["text"] for u in updates[1:3]]
    assert files == [
        {"kind": "voice", "file_name": None, "mime_type": "audio/ogg", "file_size": len(voice),
         "duration": 3, "width": None, "height": None},
        {"kind": "photo", "file_name": None, "mime_type": "image/jpeg",
         "file_size": len(SIZES[2][2]), "duration": None, "width": 800, "height": 600},
        {"kind": "document", "file_name": "trip.ics", "mime_type": "text/calendar",
         "file_size": len(ICS), "duration": None, "width": None, "height": None},
        {"kind": "video_note", "file_name": None, "mime_type": "video/mp4", "file_size": 498311,
         "duration": 7, "width": 384, "height": 384},
    ]  # fmt: skip
    assert texts == ["the view", "my flights"]


# -- downloads -------------------------------------------------------------------------------


async def test_a_photo_downloads_as_an_image_of_the_size_within_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with telegram_io(tmp_path, monkeypatch) as (fake, client, _):
        n = fake.user_media(ADA, USER, "photo", sizes=[*SIZES, BIG_PHOTO])
        update = await arrived(client, n)
        result = await client.call_tool("download_media", {"id": update["id"]})
        downloads = fake.downloads(ADA)
    image = only(result)
    assert isinstance(image, ImageContent)
    assert image.mime_type == "image/jpeg"
    assert base64.b64decode(image.data) == SIZES[3][2]  # 1280 x 960, not 2560 x 1920
    assert result.structured_content == {
        "kind": "photo", "mime_type": "image/jpeg", "file_name": None,
        "size": len(SIZES[3][2]), "duration": None,
    }  # fmt: skip
    assert [d.size for d in downloads] == [len(SIZES[3][2])]


async def test_a_voice_note_downloads_as_ogg_opus_audio(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    voice = ogg_opus(4)
    async with telegram_io(tmp_path, monkeypatch) as (fake, client, _):
        update = await arrived(client, fake.user_media(ADA, USER, "voice", content=voice))
        result = await client.call_tool("download_media", {"id": update["id"]})
    audio = only(result)
    assert isinstance(audio, AudioContent)
    assert audio.mime_type == "audio/ogg"
    data = base64.b64decode(audio.data)
    assert data == voice
    assert (probe(data).container, probe(data).seconds) == ("ogg", 4)
    assert result.structured_content == {
        "kind": "voice", "mime_type": "audio/ogg", "file_name": None, "size": len(voice),
        "duration": 3,  # what the fake's voice note says (Telegram's rounded seconds)
    }  # fmt: skip


async def test_an_audio_file_downloads_as_audio_of_its_type(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tone = wav(1.5)
    async with telegram_io(tmp_path, monkeypatch) as (fake, client, _):
        n = fake.user_media(
            ADA, USER, "audio", content=tone, duration=2, file_name="tone.wav",
            mime_type="audio/wav",
        )  # fmt: skip
        result = await client.call_tool("download_media", {"id": (await arrived(client, n))["id"]})
    audio = only(result)
    assert isinstance(audio, AudioContent)
    assert (audio.mime_type, base64.b64decode(audio.data)) == ("audio/wav", tone)
    assert probe(tone).seconds == 1.5
    assert result.structured_content == {
        "kind": "audio", "mime_type": "audio/wav", "file_name": "tone.wav", "size": len(tone),
        "duration": 2,
    }  # fmt: skip


async def test_a_document_downloads_as_an_embedded_resource_with_its_name_and_type(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with telegram_io(tmp_path, monkeypatch) as (fake, client, _):
        ics = await arrived(client, fake.user_document(ADA, USER, "my trip.ics", ICS))
        # ack first: an acked update's file can still be fetched (acked updates are kept)
        assert (await call(client, "ack", ids=[ics["id"]]))["acked"] == 1
        result = await client.call_tool("download_media", {"id": ics["id"]})
        note = await arrived(client, fake.user_media(ADA, USER, "video_note", content=b"mp4"))
        round_video = only(await client.call_tool("download_media", {"id": note["id"]}))
    embedded = only(result)
    assert isinstance(embedded, EmbeddedResource)
    resource = embedded.resource
    assert isinstance(resource, BlobResourceContents)
    assert str(resource.uri).startswith("telegram-file:AgAD")
    assert str(resource.uri).endswith("/my%20trip.ics")
    assert resource.mime_type == "text/calendar"
    assert base64.b64decode(resource.blob) == ICS
    assert result.structured_content == {
        "kind": "document", "mime_type": "text/calendar", "file_name": "my trip.ics",
        "size": len(ICS), "duration": None,
    }  # fmt: skip
    assert isinstance(round_video, EmbeddedResource)
    assert isinstance(round_video.resource, BlobResourceContents)
    assert round_video.resource.mime_type == "video/mp4"
    assert base64.b64decode(round_video.resource.blob) == b"mp4"


async def test_the_tool_is_internal_read_only_and_declares_what_it_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with telegram_io(tmp_path, monkeypatch) as (_, client, _):
        tools = {tool.name: tool for tool in await client.list_tools()}
    tool = tools["download_media"]
    assert tool.meta is not None
    assert tool.meta["fastmcp"]["tags"] == ["internal"]
    assert tool.annotations is not None
    assert (tool.annotations.read_only_hint, tool.annotations.idempotent_hint) == (True, True)
    assert tool.output_schema is not None
    assert set(tool.output_schema["properties"]) == {
        "kind", "mime_type", "file_name", "size", "duration",
    }  # fmt: skip
    assert tool.input_schema["properties"]["id"]["maxLength"] == 100


# -- refusals --------------------------------------------------------------------------------


async def test_a_file_over_max_file_bytes_is_refused_before_telegram_is_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with telegram_io(tmp_path, monkeypatch, max_file_bytes=2000) as (fake, client, _):
        n = fake.user_document(ADA, USER, "big.ics", ICS * 20)
        error = await call_error(client, "download_media", id=(await arrived(client, n))["id"])
        asked = fake.calls("getFile")
        downloads = fake.downloads(ADA)
    assert error == (
        f"too big to download: the document is {len(ICS) * 20 / 1024:.1f} KB, telegram-io "
        "downloads files of 2.0 KB at most; nothing was downloaded"
    )
    assert (asked, downloads) == ([], [])


async def test_a_file_telegram_says_is_over_the_bound_is_not_downloaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The update says 3,125 bytes for the 320-pixel size (an estimate), getFile 50,000."""
    photo = jpeg(1280, 960) + bytes(50_000 - len(jpeg(1280, 960)))
    settings = {"max_file_bytes": 10_000, "photo_max_side": 320}
    async with telegram_io(tmp_path, monkeypatch, **settings) as (fake, client, _):
        update = await arrived(client, fake.user_media(ADA, USER, "photo", content=photo))
        assert update["file"]["file_size"] < 10_000
        error = await call_error(client, "download_media", id=update["id"])
        asked, downloads = len(fake.calls("getFile")), fake.downloads(ADA)
    assert error.startswith("too big to download: the photo is 48.8 KB, telegram-io downloads")
    assert (asked, downloads) == (1, [])


async def test_telegrams_file_is_too_big_and_invalid_file_id_are_refusals_for_good(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with telegram_io(tmp_path, monkeypatch) as (fake, client, _):
        n = fake.user_media(ADA, USER, "video_note", duration=60)
        update = await arrived(client, n)
        fake.fail_next("getFile", 400, description="Bad Request: file is too big")
        too_big = await call_error(client, "download_media", id=update["id"])
        fake.fail_next("getFile", 400, description="Bad Request: invalid file_id")
        invalid = await call_error(client, "download_media", id=update["id"])
        downloads = fake.downloads(ADA)
    assert too_big == (
        "too big to download: Telegram gives bots files of 20 MB at most; nothing was downloaded"
    )
    assert invalid == "Telegram refused the file: Invalid file_id"
    assert downloads == []


async def test_an_update_without_a_file_and_an_unknown_update_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with telegram_io(tmp_path, monkeypatch) as (fake, client, _):
        text = await arrived(client, fake.user_message(ADA, USER, "hello"))
        no_file = await call_error(client, "download_media", id=text["id"])
        unknown = await call_error(client, "download_media", id="7100000001:12345")
        malformed = await call_error(client, "download_media", id="hello")
        asked = fake.calls("getFile")
    assert no_file == f"update {text['id']!r} has no file to download"
    assert unknown == (
        "no update '7100000001:12345' is kept here: pass the 'id' of a media update from "
        "next_updates (acked updates are forgotten after 48 h)"
    )
    assert malformed == "'hello' is not an update id; pass the 'id' fields of next_updates"
    assert asked == []


async def test_telegram_out_of_reach_says_try_again_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with telegram_io(tmp_path, monkeypatch) as (fake, client, config):
        update = await arrived(client, fake.user_media(ADA, USER, "voice", content=ogg_opus(1)))
        fake.fail_next("getFile", 502)  # nginx's page, as when the Bot API is down
        bad_gateway = await call_error(client, "download_media", id=update["id"])
        fake.fail_next("getFile", 429, retry_after=7)
        rate_limited = await call_error(client, "download_media", id=update["id"])
    # The same inbox, served by a process whose Telegram is nowhere to be reached.
    gone = config.model_copy(update={"api_base": f"http://127.0.0.1:{free_port()}"})
    async with Client(build_server(gone, polling=False)) as client:
        unreachable = await call_error(client, "download_media", id=update["id"])
    assert bad_gateway == f"{TRY_LATER}Telegram cannot be reached right now; {NOTHING}"
    assert rate_limited == f"{TRY_LATER}Telegram rate-limits this bot for 7 s; {NOTHING}"
    assert unreachable == bad_gateway


async def test_the_bot_token_appears_in_no_error_and_no_log_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    for name in QUIET:  # the loggers that print request URLs are quieted, as a server has them
        caplog.set_level(logging.WARNING, logger=name)
    caplog.set_level(logging.INFO)  # (last: the capturing handler takes this level)
    errors = []
    async with telegram_io(tmp_path, monkeypatch, max_file_bytes=100_000) as (fake, client, _):
        voice = await arrived(client, fake.user_media(ADA, USER, "voice", content=ogg_opus(2)))
        big = await arrived(client, fake.user_document(ADA, USER, "x.ics", ICS * 1000))
        assert not (await client.call_tool("download_media", {"id": voice["id"]})).is_error
        errors.append(await call_error(client, "download_media", id=big["id"]))
        for status in (400, 500, 502):
            fake.fail_next("getFile", status)
            errors.append(await call_error(client, "download_media", id=voice["id"]))
        fake.revoke(ADA)
        errors.append(await call_error(client, "download_media", id=voice["id"]))
    assert errors[-1] == "Telegram refused this bot's token; nothing was downloaded"
    assert [e for e in errors if ADA in e or ADA.partition(":")[2] in e] == []
    logged = [r.getMessage() for r in caplog.records] + [caplog.text]
    assert [line for line in logged if ADA.partition(":")[2] in line] == []
    assert any("downloaded the voice of update" in r.getMessage() for r in caplog.records)
    assert "file/bot" not in caplog.text  # no download URL, with or without its token


# -- settings --------------------------------------------------------------------------------


def test_a_max_file_bytes_above_telegrams_20_mb_stops_the_start_with_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TELEGRAM_MAX_FILE_BYTES", str(20 * 1024 * 1024 + 1))
    with pytest.raises(SystemExit) as stop:
        load_settings(TelegramIOSettings)
    assert stop.value.code == CONFIG_ERROR_EXIT
    assert capsys.readouterr().err.splitlines() == [
        "configuration error: TELEGRAM_MAX_FILE_BYTES is invalid: Telegram lets bots download "
        "files of 20971520 bytes (20 MB) at most: set it to 20971520 or less"
    ]


def test_the_download_settings_default_to_telegrams_limit_and_1280_pixels(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("TELEGRAM_MAX_FILE_BYTES", "TELEGRAM_PHOTO_MAX_SIDE"):
        monkeypatch.delenv(name, raising=False)
    settings = load_settings(TelegramIOSettings)
    assert (settings.max_file_bytes, settings.photo_max_side) == (20_971_520, 1280)
    monkeypatch.setenv("TELEGRAM_MAX_FILE_BYTES", "1048576")
    monkeypatch.setenv("TELEGRAM_PHOTO_MAX_SIDE", "800")
    settings = load_settings(TelegramIOSettings)
    assert (settings.max_file_bytes, settings.photo_max_side) == (1_048_576, 800)
