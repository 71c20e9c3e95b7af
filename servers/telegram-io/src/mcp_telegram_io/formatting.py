"""Model-written Markdown to Telegram messages: plain text plus entities, in parts that fit.

Messages go out with ``entities=`` and no ``parse_mode``: telegramify-markdown (through
markup.py, which keeps the model's words and list numbers as written) turns the Markdown into
plain text and ``MessageEntity`` spans, so Telegram is never handed a string it could fail to
parse. Its rendering: bold, italic, strikethrough, ``code``, ``pre`` (with the fence's
language), ``text_link``, ``||spoiler||`` and ``blockquote`` (``expandable_blockquote`` past
200 units) become entities; a heading becomes its text in bold, underlined too for H1-H2;
bullet items start with "⦁ " (task boxes: ✅ ☑), ordered items with their number as written;
a thematic break becomes "————————"; tables become a ``pre`` block; images become 🖼 and their
alt text.

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
- With ``max_parts``, a text that needs more parts is cut: the last part holds what fits
  beside one last line, ``CUT_NOTICE``, that says the reply was cut and how much was left out.
- ``render`` never raises on any text: if the converter fails, the input goes out as plain text.
"""

import bisect
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate

from telegram import MessageEntity

from mcp_telegram_io.markup import MarkupMismatch, convert, moved_entity

logger = logging.getLogger(__name__)

TEXT_LIMIT = 4096
CUT_NOTICE = "✂ The reply was cut here: {omitted} more characters were too long to send."
SOURCE_PER_UNIT = 8  # Markdown read for each unit the parts hold: more is cut unread
CUT_ROOM = 120  # the notice with the largest count, and room for some text before it
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


def render(markdown: str, limit: int = TEXT_LIMIT, max_parts: int | None = None) -> list[Part]:
    """Markdown to the parts of a reply (at most ``max_parts``); none for blank text."""
    _check_limit(limit, max_parts)
    more = 0  # source characters left out before converting: far more than the parts hold
    if max_parts is not None and len(markdown) > (most := max_parts * limit * SOURCE_PER_UNIT):
        markdown, more = markdown[:most], len(markdown) - most
    try:
        text, entities = convert(markdown)
    except MarkupMismatch as error:  # e.g. a ||spoiler|| across list items: keep every word
        logger.info("Markdown lists could not be matched (%s); sending the text unformatted", error)
        text, entities = markdown, []
    except Exception:  # the boundary of a third-party parser: a reply goes out regardless
        logger.warning("Markdown conversion failed; sending the text unformatted", exc_info=True)
        text, entities = markdown, []
    return _split(text, entities, limit, max_parts, more)


def plain_parts(text: str, limit: int = TEXT_LIMIT, max_parts: int | None = None) -> list[str]:
    """The raw text in parts, for when Telegram refuses the formatting."""
    _check_limit(limit, max_parts)
    return [part.text for part in _split(text, [], limit, max_parts)]


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


def _check_limit(limit: int, max_parts: int | None = None) -> None:
    if limit < 2:
        raise ValueError(f"limit must be at least 2 UTF-16 units (one emoji); got {limit}")
    if max_parts is not None and (max_parts < 1 or limit < CUT_ROOM):
        raise ValueError(
            f"max_parts needs at least one part of {CUT_ROOM} units (for the notice of a cut); "
            f"got {max_parts} of {limit}"
        )


def _split(
    text: str,
    entities: Sequence[MessageEntity],
    limit: int,
    max_parts: int | None = None,
    more: int = 0,
) -> list[Part]:
    """``text`` in parts; ``more``: characters already cut from its end (the last part
    says so)."""
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

    def cut_at(pos: int, room: int) -> int:
        if units[n] - units[pos] <= room:
            return n
        end = bisect.bisect_right(units, units[pos] + room) - 1
        return _find_cut(text, pos, end, nested)

    def part_of(start: int, stop: int) -> Part:
        return _part(text, units, spans, start, stop)

    parts: list[Part] = []
    pos = _skip_blank(text, 0, pre)
    while pos < n:
        cut = cut_at(pos, limit)
        after = _skip_blank(text, cut, pre)
        last = max_parts is not None and len(parts) == max_parts - 1
        if (last and after < n) or (more and (last or after >= n)):
            return [*parts, _cut_part(text, pos, limit, cut_at, part_of, more=more)]
        stop = pos + len(text[pos:cut].rstrip())
        if stop > pos:
            parts.append(part_of(pos, stop))
        pos = after
    return parts


def _cut_part(
    text: str,
    pos: int,
    limit: int,
    cut_at: Callable[[int, int], int],
    part_of: Callable[[int, int], Part],
    *,
    more: int,
) -> Part:
    """The last part allowed: what fits beside the notice, then the notice on a line of its
    own (only the notice, when the limit leaves no room beside it)."""
    notice = CUT_NOTICE.format(omitted=f"{len(text) - pos + more:,}")
    room = limit - utf16_len(notice) - 2
    cut = cut_at(pos, room) if room > 0 else pos
    stop = pos + len(text[pos:cut].rstrip())
    notice = CUT_NOTICE.format(omitted=f"{len(text) - stop + more:,}")  # never longer
    if stop == pos:
        return Part(notice)
    kept = part_of(pos, stop)
    return Part(f"{kept.text}\n\n{notice}", kept.entities)


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
        moved_entity(entity, units[lo] - units[start], units[hi] - units[lo])
        for lo, hi, entity in ((max(a, start), min(b, stop), e) for a, b, e in spans)
        if lo < hi
    ]
    clipped.sort(key=lambda e: (e.offset, -e.length))
    return Part(text[start:stop], tuple(clipped))
