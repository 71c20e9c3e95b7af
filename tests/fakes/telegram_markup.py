"""What the Telegram Bot API accepts as message text, entities and inline keyboards.

``render`` gives the text a message shows and its entities (offsets and lengths in UTF-16 code
units), from ``text`` with explicit ``entities`` or with ``parse_mode`` HTML or MarkdownV2, parsed
as Telegram parses them. Markup Telegram refuses raises its 400 "can't parse entities: ..."
with the byte offset where the source went wrong; MarkdownV2 "> quote" lines give no entity;
legacy Markdown is taken as plain text. The shown text must not be blank nor exceed 4096 UTF-16
units (``shown`` parses without these checks, for a draft's text); explicit entities need a
known type, must lie inside the text and carry what their type requires (``url``, ``user``,
``custom_emoji_id``).

``markup`` checks a ``reply_markup``: every inline keyboard button has a text and either
callback data of 1-64 bytes or another action.

``Refused`` is an answer with ``"ok": false``; ``bad`` is a 400 worded as the real API words it.
"""

from __future__ import annotations

import html
import re
from typing import Any

Body = dict[str, Any]

MAX_TEXT = 4096  # UTF-16 code units, after entity parsing
ENTITY_TYPES = {
    "mention", "hashtag", "cashtag", "bot_command", "url", "email", "phone_number", "bold",
    "italic", "underline", "strikethrough", "spoiler", "blockquote", "expandable_blockquote",
    "code", "pre", "text_link", "text_mention", "custom_emoji",
}  # fmt: skip
ENTITY_NEEDS = {"text_link": "url", "text_mention": "user", "custom_emoji": "custom_emoji_id"}
BUTTON_ACTIONS = {
    "url", "login_url", "switch_inline_query", "switch_inline_query_current_chat", "pay",
    "web_app", "copy_text", "switch_inline_query_chosen_chat", "callback_game",
}  # fmt: skip
HTML_TAGS = {
    "b": "bold", "strong": "bold", "i": "italic", "em": "italic", "u": "underline",
    "ins": "underline", "s": "strikethrough", "strike": "strikethrough", "del": "strikethrough",
    "a": "text_link", "code": "code", "pre": "pre", "tg-spoiler": "spoiler", "span": "spoiler",
    "blockquote": "blockquote",
}  # fmt: skip
HTML_TAG = re.compile(r"<(/?)([^\s>]*)")  # the name ends at a space or ">"
HTML_ATTR = re.compile(r"""([\w-]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))""")
HTML_REF = re.compile(r"&(#\d+|#x[\da-fA-F]+|lt|gt|amp|quot);")  # others stay literal text
MD_RESERVED = frozenset("_*[]()~`>#+-=|{}.!\\")
MD_OPEN = {
    "*": "bold", "_": "italic", "__": "underline", "~": "strikethrough", "||": "spoiler",
    "`": "code", "```": "pre", "[": "text_link", "![": "text_link",
}  # fmt: skip
MD_CLOSE = {"bold": "*", "italic": "_", "underline": "__", "strikethrough": "~",
            "spoiler": "||", "code": "`", "pre": "```", "text_link": "]"}  # fmt: skip
MD_NAMES = {"text_link": "TextUrl"}  # the rest are capitalised: "Bold", "Italic"...
MD_LANGUAGE = re.compile(r"([^\s`]*)\n")


class Refused(Exception):
    """An answer with ``"ok": false``."""

    def __init__(self, status: int, description: str, parameters: Body | None = None) -> None:
        super().__init__(description)
        self.status, self.description, self.parameters = status, description, parameters


def bad(description: str) -> Refused:
    return Refused(400, f"Bad Request: {description}")


def utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def markup(markup: Any) -> Body | None:
    if markup is not None and not isinstance(markup, dict):
        raise bad("can't parse reply keyboard markup JSON object")
    if markup is None or "inline_keyboard" not in markup:
        return markup
    rows = markup["inline_keyboard"]
    if not isinstance(rows, list) or not all(isinstance(row, list) for row in rows):
        raise bad('can\'t parse inline keyboard: field "inline_keyboard" must be an Array')
    for button in (button for row in rows for button in row):
        data = button.get("callback_data") if isinstance(button, dict) else None
        if not isinstance(button, dict) or not isinstance(button.get("text"), str):
            raise bad('can\'t parse inline keyboard button: Field "text" must be of type String')
        if data is not None and not 1 <= len(str(data).encode()) <= 64:
            raise bad("BUTTON_DATA_INVALID")
        if data is None and not BUTTON_ACTIONS & set(button):
            raise bad("can't parse inline keyboard button: Text buttons are unallowed in the "
                      "inline keyboard")  # fmt: skip
    return markup


def render(source: str, mode: str | None, entities: Any) -> tuple[str, list[Body], str | None]:
    """The text a message shows and its entities, from text + entities or parse_mode."""
    text, entities = shown(source, mode, entities)
    if not text.strip():
        raise bad("message text is empty")
    if utf16(text) > MAX_TEXT:
        raise bad("message is too long")
    return text, entities, mode


def shown(source: str, mode: str | None, entities: Any) -> tuple[str, list[Body]]:
    """The text shown and its entities, of any length (``render`` checks a message's)."""
    if entities is not None:  # explicit entities win over parse_mode
        return source, _check_entities(source, entities)
    if mode is None or mode == "Markdown":  # legacy Markdown is not checked
        return source, []
    if mode.lower() in ("html", "markdownv2"):
        return (_parse_html if mode.lower() == "html" else _parse_markdown_v2)(source)
    raise bad(f"unsupported parse_mode {mode!r}")


def _check_entities(text: str, entities: Any) -> list[Body]:
    if not isinstance(entities, list):
        raise bad("can't parse entities JSON object")
    size = utf16(text)
    for n, entity in enumerate(entities):
        kind = entity.get("type") if isinstance(entity, dict) else None
        if kind not in ENTITY_TYPES or not isinstance(entity, dict):
            raise bad(f"can't parse entities: entity {n}: unsupported type {kind!r}")
        offset, length = entity.get("offset"), entity.get("length")
        if not isinstance(offset, int) or not isinstance(length, int) or offset < 0 or length < 1:
            raise bad(f"can't parse entities: entity {n} ({kind}): bad offset or length")
        if offset + length > size:
            raise bad(f"can't parse entities: entity {n} ({kind}) at {offset}+{length} ends "
                      f"beyond the text ({size} UTF-16 units)")  # fmt: skip
        if kind in ENTITY_NEEDS and not entity.get(ENTITY_NEEDS[kind]):
            raise bad(f"can't parse entities: entity {n} ({kind}) needs {ENTITY_NEEDS[kind]}")
    return sorted(entities, key=lambda e: (e["offset"], -e["length"]))


class _Writer:
    """The text a message shows, with entities at UTF-16 offsets."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.entities: list[Body] = []

    def put(self, text: str) -> None:
        self.parts.append(text)
        self.size += utf16(text)

    def close(self, start: int, entity: Body | None) -> None:
        if entity is not None and self.size > start:
            self.entities.append(entity | {"offset": start, "length": self.size - start})

    def result(self) -> tuple[str, list[Body]]:
        return "".join(self.parts), sorted(self.entities, key=lambda e: (e["offset"], -e["length"]))


def _markup_error(message: str) -> Refused:
    return bad(f"can't parse entities: {message}")


def _at(source: str, index: int) -> int:
    return len(source[:index].encode())  # Telegram reports byte offsets


def _parse_html(source: str) -> tuple[str, list[Body]]:
    out, i = _Writer(), 0
    opened: list[tuple[str, int, Body | None]] = []  # tag, start, entity
    while i < len(source):
        if source[i] == "&" and (ref := HTML_REF.match(source, i)):
            out.put(html.unescape(ref[0]))
            i = ref.end()
            continue
        if source[i] != "<":
            out.put(source[i])
            i += 1
            continue
        tag, at = HTML_TAG.match(source, i), _at(source, i)
        assert tag is not None  # every "<" starts one
        name, end = tag[2].lower(), source.find(">", tag.end())
        if end < 0 and (tag[1] or tag.end() == len(source)):
            raise _markup_error(f"Unclosed {'end' if tag[1] else 'start'} tag at byte offset {at}")
        if not tag[1] and name not in HTML_TAGS:
            raise _markup_error(f'Unsupported start tag "{name}" at byte offset {at}')
        if end < 0:
            raise _markup_error(f"Unclosed start tag at byte offset {at}")
        rest, i = source[tag.end() : end], end + 1
        if tag[1]:
            if not opened:
                raise _markup_error(f"Unexpected end tag at byte offset {at}")
            if name and name != opened[-1][0]:
                raise _markup_error(f'Unmatched end tag at byte offset {at}, expected '
                                    f'"</{opened[-1][0]}>", found "</{name}>"')  # fmt: skip
            out.close(*opened.pop()[1:])
            continue
        found = HTML_ATTR.finditer(rest)
        attrs = {m[1].lower(): html.unescape(m[2] or m[3] or m[4]) for m in found}
        entity: Body | None = {"type": HTML_TAGS[name]}
        if name == "blockquote" and "expandable" in rest:
            entity = {"type": "expandable_blockquote"}
        elif name == "a":
            entity = {"type": "text_link", "url": attrs["href"]} if attrs.get("href") else None
        elif name == "span" and attrs.get("class") != "tg-spoiler":
            raise _markup_error('Tag "span" must have class "tg-spoiler"')
        elif name == "code" and opened and opened[-1][0] == "pre":
            language = attrs.get("class", "").removeprefix("language-")
            if language and (pre := opened[-1][2]) is not None:
                pre["language"], entity = language, None
        opened.append((name, out.size, entity))
    if opened:
        raise _markup_error(f'Can\'t find end tag corresponding to start tag "{opened[-1][0]}"')
    return out.result()


def _parse_markdown_v2(source: str) -> tuple[str, list[Body]]:
    out, i = _Writer(), 0
    opened: list[tuple[str, int, int, Body | None]] = []  # kind, start, source index, entity
    while i < len(source):
        c, inside = source[i], opened[-1][0] if opened else None
        if c == "\\" and i + 1 < len(source) and 0 < ord(source[i + 1]) <= 126:
            out.put(source[i + 1])
            i += 2
        elif c not in MD_RESERVED or (inside in ("code", "pre") and c != "`"):
            out.put(c)
            i += 1
        elif c == ">" and not opened and (i == 0 or source[i - 1] == "\n"):
            i += 1  # a quoted line: accepted, without a blockquote entity
        elif (
            inside
            and source.startswith(MD_CLOSE[inside], i)
            and not (inside == "italic" and source.startswith("__", i))
        ):
            kind, start, _, entity = opened.pop()
            i += len(MD_CLOSE[kind])
            if kind == "text_link":  # [text](url); without a URL no entity
                entity = None
                if source.startswith("(", i):
                    end = _url_end(source, i + 1)
                    if end < 0:
                        at = _at(source, i)
                        raise _markup_error(f"Can't find end of a URL at byte offset {at}")
                    entity = {"type": kind, "url": re.sub(r"\\(.)", r"\1", source[i + 1 : end])}
                    i = end + 1
            out.close(start, entity)
        else:
            mark = next((m for m in ("```", "__", "||", "![") if source.startswith(m, i)), c)
            if (opening := MD_OPEN.get(mark)) is None:
                raise _markup_error(
                    f"Character '{c}' is reserved and must be escaped with the preceding '\\'"
                )
            begin, i, started = i, i + len(mark), {"type": opening}
            if opening == "pre" and (language := MD_LANGUAGE.match(source, i)):
                started |= {"language": language[1]} if language[1] else {}
                i = language.end()
            opened.append((opening, out.size, begin, started))
    if opened:
        kind, _, begin, _ = opened[-1]
        name = MD_NAMES.get(kind, kind.capitalize())
        raise _markup_error(f"Can't find end of {name} entity at byte offset {_at(source, begin)}")
    return out.result()


def _url_end(source: str, i: int) -> int:
    while i < len(source):
        if source[i] == ")":
            return i
        i += 2 if source[i] == "\\" else 1
    return -1
