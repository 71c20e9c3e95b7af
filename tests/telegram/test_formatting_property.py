"""A reply says what the model wrote: generated Markdown, rendered, compared with its words.

Each example is built as a small document tree, written out both as Markdown and as the text
a reader should see: the source with its markup removed. What counts as markup, and what it
becomes:

    markup in the source                          in the delivered text
    ** * _ ~~ around words (emphasis)             nothing: the words keep their entity
    `code` backticks, ``` fences and their info   nothing: the code itself, unchanged
    [words](url)                                  words (the link is an entity)
    # to ###### before a heading                  nothing: the heading's words
    > before a quoted line                        nothing (a blockquote entity)
    \\ before a punctuation character              nothing: the character
    "- ", "* ", "+ " before a bullet item          "⦁ " (a task box: ✅ or ☑ instead)
    a thematic break (---, ***)                   "————————"

Nothing else changes: words, numbers, punctuation, emoji, ordered list markers as written
(``0001.``, ``3)``, ``7.`` after ``1.``), an ordered item's ``[ ]`` box, and text that looks
like HTML (``Vec<String>``, ``<b>``). Whitespace is compared as separators only: the converter
may put blank lines or indentation differently. Out of scope: tables (a ``pre`` block with
padded columns), math (``$…$``, ``\\( … \\)``, ``\\[ … \\]``: LaTeX becomes Unicode), images.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import example, given, settings
from hypothesis import strategies as st

from mcp_telegram_io.formatting import render

WORDS = [
    "milk", "Eggs", "the", "déjà", "漢字", "😀", "👨‍👩‍👧", "🇺🇦", "0", "7", "42", "0001", "3.14",
    "1,000", "-5", "+7", "10%", "$5", "€20", "~2", "2024.", "1.", "3)", "#1", "e.g.", "R&D",
    "a/b", "(note)", "it's", "snake_case_name", "x2", "Vec<String>", "<b>", "</b>", "x<y",
    "a>b", "<br>", "C++", "?", "!",
]  # fmt: skip
CODE_LINES = [
    "print(1)", "**not bold**", "1. not a list", "<div>", "$5 $6", "# not a heading",
    "||no spoiler||", "    indented = 2", "a_b_c", "[x](y)", "0001. kept",
]  # fmt: skip
ESCAPABLE = "*_`#]<>~|\\!"  # not [: \[ … \] is LaTeX display math


@dataclass(frozen=True)
class Piece:
    markdown: str
    plain: str


def joined(pieces: list[Piece], separator: str = " ") -> Piece:
    return Piece(
        separator.join(p.markdown for p in pieces), separator.join(p.plain for p in pieces)
    )


word = st.sampled_from(WORDS).map(lambda w: Piece(w, w))
words = st.lists(word, min_size=1, max_size=4).map(joined)
escaped = st.sampled_from(ESCAPABLE).map(lambda c: Piece(f"\\{c}", c))


@st.composite
def styled(draw: st.DrawFn) -> Piece:
    inner = draw(words)
    kind = draw(st.sampled_from(["**", "*", "_", "__", "~~", "`", "link"]))
    if kind == "`":
        code = draw(st.sampled_from(CODE_LINES)).strip()
        return Piece(f"`{code}`", code)
    if kind == "link":
        path = draw(st.sampled_from(["", "a", "docs/2024", "x-y_z", "%C3%A9?q=1"]))
        return Piece(f"[{inner.markdown}](https://example.com/{path})", inner.plain)
    if kind == "~~" and "~" in (inner.markdown[0], inner.markdown[-1]):
        kind = "**"  # ~~~ would be a run of three tildes (a code fence at a line's start)
    return Piece(f"{kind}{inner.markdown}{kind}", inner.plain)


inline = st.lists(st.one_of(word, word, word, styled(), escaped), min_size=1, max_size=8).map(
    joined
)


def number_marker(number: int, width: int, delimiter: str) -> str:
    return f"{number:0{width}d}{delimiter}"


@st.composite
def list_block(draw: st.DrawFn, depth: int = 0) -> Piece:
    ordered = draw(st.booleans())
    bullet = draw(st.sampled_from("-*+"))
    delimiter = draw(st.sampled_from(".)"))
    items: list[Piece] = []
    for _ in range(draw(st.integers(1, 4))):
        if ordered:
            number = draw(st.integers(0, 999_999_999))
            marker = number_marker(number, draw(st.integers(1, 9)), delimiter)
            if len(marker) > 10:  # CommonMark: nine digits at most
                marker = number_marker(number % 1000, 4, delimiter)
            shown = marker
        else:
            marker, shown = bullet, "⦁"
        content = draw(inline)
        if draw(st.integers(0, 5)) == 0:  # a task box
            checked = draw(st.booleans())
            box = "[x]" if checked else "[ ]"
            content = Piece(f"{box} {content.markdown}", f"{box} {content.plain}")
            if not ordered:
                content, shown = Piece(content.markdown, content.plain[4:]), "✅☑"[not checked]
        item = Piece(f"{marker} {content.markdown}", f"{shown} {content.plain}")
        if depth == 0 and draw(st.integers(0, 3)) == 0:
            nested = draw(list_block(depth + 1))
            indent = " " * (len(marker) + 1)
            lines = nested.markdown.split("\n")
            item = Piece(
                item.markdown + "\n" + "\n".join(indent + line for line in lines),
                f"{item.plain} {nested.plain}",
            )
        items.append(item)
    return joined(items, "\n")


@st.composite
def block(draw: st.DrawFn) -> Piece:
    kind = draw(st.sampled_from(["paragraph", "heading", "list", "quote", "code", "rule"]))
    if kind == "paragraph":
        return joined(draw(st.lists(inline, min_size=1, max_size=3)), "\n")
    if kind == "heading":
        text = draw(inline)
        return Piece(f"{'#' * draw(st.integers(1, 6))} {text.markdown}", text.plain)
    if kind == "list":
        return draw(list_block())
    if kind == "quote":
        quoted = draw(st.lists(inline, min_size=1, max_size=3))
        return Piece("\n".join(f"> {line.markdown}" for line in quoted), joined(quoted).plain)
    if kind == "code":
        code = "\n".join(draw(st.lists(st.sampled_from(CODE_LINES), min_size=1, max_size=4)))
        language = draw(st.sampled_from(["", "python", "sh"]))
        return Piece(f"```{language}\n{code}\n```", code)
    return Piece(draw(st.sampled_from(["---", "***", "___"])), "————————")


documents = st.lists(block(), min_size=1, max_size=5).map(lambda b: joined(b, "\n\n"))


@settings(max_examples=200, deadline=None, database=None)
@given(documents, st.sampled_from([300, 4096]))
# Once the $ of "$5** `$" (math before a digit) is escaped, <div> is in code, not HTML.
@example(Piece("**$5** `$5 $6` `<div>`", "$5 $5 $6 <div>"), 300)
def test_the_delivered_text_is_the_source_without_its_markup(document: Piece, limit: int) -> None:
    parts = render(document.markdown, limit=limit)

    delivered = "\n".join(part.text for part in parts)
    assert delivered.split() == document.plain.split(), document.markdown


def test_list_numbers_are_delivered_as_written() -> None:
    markdown = "0001. foo\n0002. bar\n\nThen:\n\n1. one\n3. three\n   1) sub\n\n10. ten\n10. again"

    (part,) = render(markdown)

    # The converter alone gives 1. 2. / 1. 2. 1. 3. 4.
    assert part.text.split("\n") == [
        "0001. foo", "0002. bar", "", "Then:", "", "1. one", "3. three", "  1) sub", "10. ten",
        "10. again",
    ]  # fmt: skip


def test_text_that_looks_like_html_and_headings_are_delivered_as_written() -> None:
    (part,) = render("## Use Vec<String>\n\nThen <b>bold</b> and a<br>b.\n\n1. [ ] buy milk")

    assert part.text == "Use Vec<String>\n\nThen <b>bold</b> and a<br>b.\n\n1. [ ] buy milk"
    assert {(e.type, e.offset, e.length) for e in part.entities} == {
        ("bold", 0, 15),
        ("underline", 0, 15),
    }


def test_code_after_an_escaped_dollar_keeps_its_text() -> None:
    # "$5** `$" reads as math until its $ is escaped; then the backtick in it opens a code
    # span, and <div>, HTML before, is code: escaping its < with the $ put a \ in the code.
    (part,) = render('**$5** `$5 $6` `<div>`\n\n<a title="`"> <b>` x')

    assert part.text == '$5 $5 $6 <div>\n\n<a title=""> <b> x'
    assert {(e.type, e.offset, e.length) for e in part.entities} == {
        ("bold", 0, 2),
        ("code", 3, 5),
        ("code", 9, 5),
        ("code", 26, 6),
    }
