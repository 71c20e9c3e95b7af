"""Model-written Markdown to Telegram's plain text and entities, with the model's words kept.

telegramify-markdown converts (see formatting.py for what becomes an entity); around it, the
text stays what the model wrote:

- **List numbers as written.** The converter numbers an ordered list's items from its start
  (``0001.`` reads ``1.``, ``3.`` after ``1.`` reads ``2.``, ``7)`` reads ``7.``). It is told to
  end item numbers with a private-use character the text does not hold, so each item's number
  is found exactly and replaced by the marker the source has; entity offsets move with it.
- **Text that looks like HTML stays text.** ``Vec<String>``, ``<b>`` or ``<br>`` outside code
  are raw HTML to Markdown, which the converter drops with the words in it; their ``<`` is
  escaped first.
- **An ordered item's task box stays as typed** (``1. [ ] milk``): the converter would put a
  box glyph in place of the number. Bullet items' boxes become ✅ / ☑ as usual.
- **Headings without decoration**: the converter's default puts 📌 ✏ 📚 🔖 before levels 1-4;
  here a heading is its words, bold (and underlined for levels 1-2).

The source is read with pyromark and the converter's own options, and the ``$`` and ``~`` the
converter would re-read as text are escaped here first, so both see the same list items; if
they still disagree (a ``||spoiler||`` across lines, which the converter turns into HTML tags
before parsing, can do it), ``MarkupMismatch`` is raised and the caller sends plain text.
"""

from __future__ import annotations

import bisect
import re
from itertools import accumulate, pairwise

import pyromark
import telegramify_markdown
from telegram import MessageEntity
from telegramify_markdown.config import RenderConfig
from telegramify_markdown.converter import STANDARD_OPTIONS

_MARKER = re.compile(rb"[ \t]*(\d{1,9}[.)])")  # CommonMark: at most 9 digits, then . or )
_PRIVATE_USE = range(0xE000, 0xF900)
_MAX_ROUNDS = 50  # escaping rounds; each escapes at least one character for good
_LITERAL = ("Code", "InlineMath", "DisplayMath", "Html", "InlineHtml")  # a backslash shows


class MarkupMismatch(Exception):
    """The converter's list items are not the ones the source has."""


def convert(markdown: str) -> tuple[str, list[MessageEntity]]:
    """Markdown to the text a message shows and its entities (offsets in UTF-16 units)."""
    source, events = _escaped(markdown)
    markers = _ordered_markers(source.encode(), events)
    sentinel = next(chr(c) for c in _PRIVATE_USE if chr(c) not in source)
    config = RenderConfig.isolated()
    symbols = config.markdown_symbol
    symbols.ordered_list_suffix = sentinel
    symbols.heading_level_1 = symbols.heading_level_2 = ""
    symbols.heading_level_3 = symbols.heading_level_4 = ""
    text, found = telegramify_markdown.convert(source, config=config)
    return _renumbered(text, [_from_converter(e) for e in found], markers, sentinel)


def _events(source: str) -> list[tuple[object, int, int]]:
    return [
        (event, where["start"], where["end"])
        for event, where in pyromark.events_with_range(source, options=STANDARD_OPTIONS)
    ]


def _escaped(markdown: str) -> tuple[str, list[tuple[object, int, int]]]:
    """The source with a backslash before the ``<`` of raw HTML (and before the delimiters
    the converter takes as text), and the ``[`` of an ordered item's task box as ``&#91;``
    (a backslash would make ``\\[ … \\]`` LaTeX), until the parser finds none; and the
    parser's events for it.

    An escape changes how the text after it parses (``$5** `$`` is math until its ``$`` is
    escaped, and then the backtick in it opens a code span), so a round's escapes, all found
    in the text before any of them, may put another one in code, where its backslash shows.
    Such a round is made again with only its first escape; if even that one is in code
    then, ``MarkupMismatch``."""
    source = markdown
    made: list[int] = []  # byte offsets of the escapes so far, in source
    events = _events(source)
    for _ in range(_MAX_ROUNDS):
        data = source.encode()
        found = _to_escape(data, events)
        if not found:
            return source, events
        for batch in (found, dict([min(found.items())])):
            source, moved = _with_escapes(data, batch, made)
            events = _events(source)
            if not _in_literals(moved, source.encode(), events):
                break
        else:
            raise MarkupMismatch("an escape would show in code")
        made = moved
    raise MarkupMismatch("too much raw HTML to keep as text")


def _with_escapes(data: bytes, found: dict[int, bytes], made: list[int]) -> tuple[str, list[int]]:
    """``data`` with ``found`` replaced, and where the escapes ``made`` and ``found`` then are."""
    bounds = sorted({0, *found, len(data)})
    text = b"".join(
        found[a] + data[a + 1 : b] if a in found else data[a:b] for a, b in pairwise(bounds)
    ).decode()
    starts = sorted(found)
    growth = [0, *accumulate(len(found[a]) - 1 for a in starts)]

    def moved(offset: int) -> int:
        return offset + growth[bisect.bisect_left(starts, offset)]

    return text, sorted(moved(offset) for offset in [*made, *found])


def _in_literals(offsets: list[int], data: bytes, events: list[tuple[object, int, int]]) -> bool:
    """Whether any of ``offsets`` lies in code, math or HTML, which keep a backslash (math
    the next round escapes as text is not kept: ``$a \\$b$5`` is three words then)."""
    for event, start, end in events:
        if not isinstance(event, dict) or _literal_pair(data, event, start, end):
            continue
        opened = event.get("Start")
        if any(kind in event for kind in _LITERAL) or (
            isinstance(opened, dict) and "CodeBlock" in opened
        ):
            at = bisect.bisect_left(offsets, start)
            if at < len(offsets) and offsets[at] < end:
                return True
    return False


def _to_escape(data: bytes, events: list[tuple[object, int, int]]) -> dict[int, bytes]:
    """Byte offset → the bytes that replace the (ASCII) character there."""
    lists: list[int | None] = []  # the open lists: start number, None for bullets
    found: dict[int, bytes] = {}
    for event, start, end in events:
        if not isinstance(event, dict):
            continue
        opened, closed = event.get("Start"), event.get("End")
        if isinstance(opened, dict) and "List" in opened:
            lists.append(opened["List"])
        elif isinstance(closed, dict) and "List" in closed and lists:
            lists.pop()
        elif "Html" in event or "InlineHtml" in event:
            # An HTML block's first line starts with its tag: escaped, the block is gone and
            # the next round sees its other lines as Markdown.
            at = start + len(data[start:end]) - len(data[start:end].lstrip(b" \t"))
            if data[at : at + 1] == b"<":
                found[at] = b"\\<"
        elif "TaskListMarker" in event and lists and lists[-1] is not None:
            found[start] = b"&#91;"  # in place of the '[' of "[ ]"
        elif _literal_pair(data, event, start, end):
            # The opening one only: the closing one may lie in a code span once this is text.
            found[start] = b"\\" + data[start : start + 1]
    return found


def _literal_pair(data: bytes, event: dict[str, object], start: int, end: int) -> bool:
    """Delimiters the converter reads as text and escapes before it parses again, escaped
    here first so that both parse the same text: ``$`` math closed right before a digit
    (``$10.49 (~$11.20)``: two prices) and a single ``~`` around words ("approximately")."""
    if event.get("Start") == "Strikethrough":
        return data[start + 1 : start + 2] != b"~"
    return "InlineMath" in event and data[end : end + 1].isdigit()


def _ordered_markers(data: bytes, events: list[tuple[object, int, int]]) -> list[str]:
    """Each ordered list item's marker as written (``0001.``, ``3)``), in document order."""
    lists: list[int | None] = []
    markers: list[str] = []
    for event, start, _ in events:
        if not isinstance(event, dict):
            continue
        opened, closed = event.get("Start"), event.get("End")
        if isinstance(opened, dict) and "List" in opened:
            lists.append(opened["List"])
        elif isinstance(closed, dict) and "List" in closed and lists:
            lists.pop()
        elif opened == "Item" and lists and lists[-1] is not None:
            match = _MARKER.match(data, start)
            if match is None:
                raise MarkupMismatch(f"no list number at byte {start}")
            markers.append(match.group(1).decode())
    return markers


def _renumbered(
    text: str, entities: list[MessageEntity], markers: list[str], sentinel: str
) -> tuple[str, list[MessageEntity]]:
    """The converter's ``<n><sentinel>`` item numbers replaced by the source's markers."""
    numbers = list(re.finditer(rf"\d+{re.escape(sentinel)}", text))
    if len(numbers) != len(markers):
        raise MarkupMismatch(f"{len(numbers)} list numbers rendered, {len(markers)} written")
    pieces: list[str] = []
    ends: list[int] = []  # UTF-16 offset just past each replaced number, in the converter's text
    changes: list[int] = []
    last, units = 0, 0
    for number, marker in zip(numbers, markers, strict=True):
        before = text[last : number.start()]
        units += len(before) + sum(1 for char in before if ord(char) > 0xFFFF)
        units += len(number.group())  # digits and the sentinel: one unit each
        pieces += [before, marker]
        ends.append(units)
        changes.append(len(marker) - len(number.group()))
        last = number.end()
    pieces.append(text[last:])
    shift = [0, *accumulate(changes)]

    def moved(offset: int) -> int:
        return offset + shift[bisect.bisect_right(ends, offset)]

    return "".join(pieces), [
        moved_entity(e, moved(e.offset), moved(e.offset + e.length) - moved(e.offset))
        for e in entities
    ]


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


def moved_entity(entity: MessageEntity, offset: int, length: int) -> MessageEntity:
    """``entity`` at another place: its kind and attributes kept."""
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
