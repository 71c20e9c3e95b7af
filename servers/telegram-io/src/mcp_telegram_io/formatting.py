"""Model-written Markdown to Telegram messages: plain text plus entities, in parts that fit.

Messages go out with ``entities=`` and no ``parse_mode``: telegramify-markdown turns the
Markdown into plain text and ``MessageEntity`` spans, so Telegram is never handed a string it
could fail to parse. Its rendering: bold, italic, strikethrough, ``code``, ``pre`` (with the
fence's language), ``text_link``, ``||spoiler||`` and ``blockquote`` (``expandable_blockquote``
past 200 units) become entities; a heading becomes an emoji marker (📌 ✏ 📚 🔖 for H1-H4)
followed by bold text, underlined too for H1-H2; list items start with "⦁ " or "1. ";
tables become a ``pre`` block; raw HTML is dropped.

Splitting rules:

- Telegram measures text and entity offsets in UTF-16 code units (😀 counts 2). Every length
  here is in those units; a part holds at most ``limit`` of them (4096 is Telegram's limit).
- A cut goes at the last blank line that fits, else the last line break, else the last
  whitespace, else anywhere (never inside a surrogate pair).
- A cut never falls inside an entity short enough to fit in a part (unless entities cross, as
  ``**a ||b** c||`` makes them, and leave no way around). An entity longer than a part (a
  huge code block) is cut like text, and each part carries its own clipped copy.
- Whitespace at a cut is dropped and no part is empty, except that a part starting inside a
  ``pre`` block keeps the indentation of its first line, as Telegram does.
- ``render`` never raises on any text: if the converter fails, the input goes out as plain text.
"""

import bisect
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate

import telegramify_markdown
from telegram import MessageEntity

logger = logging.getLogger(__name__)

TEXT_LIMIT = 4096
CALLBACK_DATA_MAX_BYTES = 64

_BLANK_LINE = re.compile(r"\n[ \t\r]*\n")
_WHITESPACE = re.compile(r"[^\S\u00a0\u2007\u202f]")  # no-break spaces do not break


@dataclass(frozen=True)
class Part:
    """One message: text and the entities in it, offsets in UTF-16 units from its start."""

    text: str
    entities: tuple[MessageEntity, ...] = ()


def utf16_len(text: str) -> int:
    """Length as Telegram counts it: characters beyond U+FFFF take two UTF-16 units."""
    return len(text) + sum(1 for char in text if ord(char) > 0xFFFF)


def render(markdown: str, limit: int = TEXT_LIMIT) -> list[Part]:
    """Markdown to the parts of a reply; no parts for empty or blank text."""
    _check_limit(limit)
    try:
        text, found = telegramify_markdown.convert(markdown)
        return _split(text, [_from_converter(e) for e in found], limit)
    except Exception:  # the boundary of a third-party parser: a reply goes out regardless
        logger.warning("Markdown conversion failed; sending the text unformatted", exc_info=True)
        return _split(markdown, [], limit)


def plain_parts(text: str, limit: int = TEXT_LIMIT) -> list[str]:
    """The raw text in parts, for when Telegram refuses the formatting."""
    _check_limit(limit)
    return [part.text for part in _split(text, [], limit)]


def check_callback_data(data: str) -> str:
    """``data`` itself if Telegram accepts it as a button's callback_data."""
    try:
        size = len(data.encode("utf-8"))
    except UnicodeEncodeError:
        raise ValueError("callback data must be valid Unicode text (no lone surrogates)") from None
    if not 1 <= size <= CALLBACK_DATA_MAX_BYTES:
        raise ValueError(
            f"callback data must be 1-{CALLBACK_DATA_MAX_BYTES} bytes in UTF-8; use a short "
            f"key (an id) and keep the payload elsewhere; got {size}"
        )
    return data


def _check_limit(limit: int) -> None:
    if limit < 2:
        raise ValueError(f"limit must be at least 2 UTF-16 units (one emoji); got {limit}")


def _from_converter(entity: telegramify_markdown.MessageEntity) -> MessageEntity:
    # The converter never emits the user or date_time kinds, the only fields left out.
    return MessageEntity(
        entity.type,
        entity.offset,
        entity.length,
        url=entity.url,
        language=entity.language,
        custom_emoji_id=entity.custom_emoji_id,
    )


def _moved(entity: MessageEntity, offset: int, length: int) -> MessageEntity:
    return MessageEntity(
        entity.type,
        offset,
        length,
        url=entity.url,
        user=entity.user,
        language=entity.language,
        custom_emoji_id=entity.custom_emoji_id,
        date_time_format=entity.date_time_format,
        unix_time=entity.unix_time,
    )


def _split(text: str, entities: Sequence[MessageEntity], limit: int) -> list[Part]:
    n = len(text)
    units = [0, *accumulate(2 if ord(char) > 0xFFFF else 1 for char in text)]
    spans: list[tuple[int, int, MessageEntity]] = []  # str indices [start, stop)
    for entity in entities:
        start = min(bisect.bisect_left(units, entity.offset), n)
        stop = min(bisect.bisect_left(units, entity.offset + entity.length), n)
        if start < stop:
            spans.append((start, stop, entity))
    depth = [0] * (n + 2)  # nested[i]: how many entities that fit in a part contain a cut at i
    for start, stop, _ in spans:
        if units[stop] - units[start] <= limit:
            depth[start + 1] += 1
            depth[stop] -= 1
    nested = list(accumulate(depth))
    pre = [(start, stop) for start, stop, entity in spans if entity.type == MessageEntity.PRE]

    parts: list[Part] = []
    pos = _skip_blank(text, 0, pre)
    while pos < n:
        if units[n] - units[pos] <= limit:
            cut = n
        else:
            end = bisect.bisect_right(units, units[pos] + limit) - 1
            cut = _find_cut(text, pos, end, nested)
        stop = pos + len(text[pos:cut].rstrip())
        if stop > pos:
            parts.append(_part(text, units, spans, pos, stop))
        pos = _skip_blank(text, cut, pre)
    return parts


def _find_cut(text: str, pos: int, end: int, nested: Sequence[int]) -> int:
    """Where to cut ``text[pos:]`` so that the part ends by ``end``, inside as few entities
    as possible: none, unless entities cross (``**a ||b** c||``) and leave no way around."""
    fewest = min(nested[pos + 1 : end + 1])
    spaces = [m.start() for m in _WHITESPACE.finditer(text, pos + 1, end + 1)]
    kinds: list[Callable[[int], bool]] = [
        lambda i: _BLANK_LINE.match(text, i) is not None,
        lambda i: text[i] == "\n",
        lambda i: True,
    ]
    for kind in kinds:
        for i in reversed(spaces):
            if kind(i) and nested[i] <= fewest:
                return i
    return next((i for i in range(end, pos, -1) if nested[i] <= fewest), end)


def _skip_blank(text: str, pos: int, pre: Sequence[tuple[int, int]]) -> int:
    """Start of the next part: past the whitespace, but not past code indentation."""
    stop = pos
    while stop < len(text) and text[stop].isspace():
        stop += 1
    line_start = text.rfind("\n", 0, stop) + 1
    if line_start >= pos and any(start <= line_start and stop < end for start, end in pre):
        return line_start
    return stop


def _part(
    text: str,
    units: Sequence[int],
    spans: Sequence[tuple[int, int, MessageEntity]],
    start: int,
    stop: int,
) -> Part:
    clipped = [
        _moved(entity, units[lo] - units[start], units[hi] - units[lo])
        for lo, hi, entity in ((max(a, start), min(b, stop), e) for a, b, e in spans)
        if lo < hi
    ]
    clipped.sort(key=lambda e: (e.offset, -e.length))
    return Part(text[start:stop], tuple(clipped))
