"""``download_media``: a media update's file as MCP content (``media.py`` fetches it).

    the file                            its content block
    photo                               ImageContent, image/jpeg
    voice note                          AudioContent, its type (audio/ogg)
    audio file                          AudioContent, its type, else audio/mpeg
    any other (document, video note,    EmbeddedResource with BlobResourceContents: uri
      video, animation, sticker)        ``telegram-file:<file_unique_id>[/<file name>]``,
                                        its type

then ``Downloaded`` (kind, type, name, size, duration) as JSON text, and as the result's
structured content.
"""

from __future__ import annotations

import base64
from typing import Annotated, Any
from urllib.parse import quote

from fastmcp import FastMCP
from fastmcp.tools.base import ToolResult
from mcp_types import (
    AudioContent,
    BlobResourceContents,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    TextContent,
)
from pydantic import Field

from mcp_telegram_io.media import Download, Media
from mcp_telegram_io.models import DEFAULT_TYPES, Downloaded
from meshkit.tool_classes import internal

URI_SCHEME = "telegram-file"

UpdateId = Annotated[
    str,
    Field(
        min_length=3,
        max_length=100,
        description="the 'id' of a media update from next_updates ('<bot>:<update_id>')",
    ),
]


def add_media_tools(mcp: FastMCP[Any], media: Media) -> None:
    @mcp.tool(
        **internal(title="Download a media file", read_only=True, idempotent=True),
        output_schema=Downloaded.model_json_schema(),
    )
    async def download_media(id: UpdateId) -> ToolResult:
        """Fetch the file of a media update (its ``file``): a photo as an image, a voice note
        or audio file as audio, any other file as an embedded resource; with what it is
        (``Downloaded``).

        Refused, downloading nothing, when the update has no file or it is larger than
        telegram-io downloads ("too big to download: ..."); "Try again later: ..." when
        Telegram cannot be reached now. Acked updates can still be fetched for a while.
        """
        got = await media.download(id)
        described = Downloaded(
            kind=got.file.kind,
            mime_type=_type(got),
            file_name=got.file.file_name,
            size=len(got.data),
            duration=got.file.duration,
        )
        return ToolResult(
            content=[_content(got), TextContent(text=described.model_dump_json())],
            structured_content=described.model_dump(),
        )


def _content(got: Download) -> ContentBlock:
    data = base64.b64encode(got.data).decode("ascii")
    kind, mime_type = got.file.kind, _type(got)
    if kind == "photo":
        return ImageContent(data=data, mime_type=mime_type)
    if kind in {"voice", "audio"}:
        return AudioContent(data=data, mime_type=mime_type)
    uri = f"{URI_SCHEME}:{got.unique_id}"
    if got.file.file_name:
        uri += "/" + quote(got.file.file_name, safe="")
    return EmbeddedResource(resource=BlobResourceContents(uri=uri, mime_type=mime_type, blob=data))


def _type(got: Download) -> str:
    return got.file.mime_type or DEFAULT_TYPES.get(got.file.kind, "application/octet-stream")
