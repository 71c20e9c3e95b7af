import logging
import random

import pytest
from telegram import MessageEntity

from mcp_telegram_io.formatting import (
    Part,
    check_callback_data,
    plain_parts,
    render,
    utf16_len,
)
from mcp_telegram_io.markup import MarkupMismatch, convert


def _only(markdown: str) -> Part:
    parts = render(markdown)
    assert len(parts) == 1
    return parts[0]


def _covered(part: Part, entity: MessageEntity) -> str:
    """The text an entity covers, located by UTF-16 offsets as Telegram does."""
    units = part.text.encode("utf-16-le")
    return units[2 * entity.offset : 2 * (entity.offset + entity.length)].decode("utf-16-le")


def _assert_well_formed(parts: list[Part], limit: int) -> None:
    for part in parts:
        assert part.text.strip()
        assert utf16_len(part.text) <= limit
        assert part.text == part.text.rstrip()
        for entity in part.entities:
            assert entity.offset >= 0
            assert entity.length > 0
            assert entity.offset + entity.length <= utf16_len(part.text)


def _assert_same_formatting_as_unsplit(markdown: str, parts: list[Part], limit: int) -> None:
    """Every entity of the whole text is whole in one part if it fits, else clipped per part."""
    try:
        text, entities = convert(markdown)
    except MarkupMismatch:  # render sends such a text unformatted
        text, entities = markdown, []
    placed = []
    cursor = 0
    for part in parts:
        start = text.index(part.text, cursor)
        cursor = start + len(part.text)
        begin = utf16_len(text[:start])
        placed.append((begin, begin + utf16_len(part.text), part))
    assert "".join(text.split()) == "".join("".join(part.text.split()) for part in parts)
    # Entities that cross (``**a ||b** c||``) may leave no cut outside them all.
    crossing = any(
        a.offset < b.offset < a.offset + a.length < b.offset + b.length
        for a in entities
        for b in entities
    )
    pieces = 0
    for entity in entities:
        end = entity.offset + entity.length
        found = [
            (max(entity.offset, begin), min(end, stop), begin, part)
            for begin, stop, part in placed
            if max(entity.offset, begin) < min(end, stop)
        ]
        if entity.length <= limit and not crossing:
            assert len(found) <= 1, f"{entity} was split though it fits"
        for low, high, begin, part in found:
            assert any(
                e.type == entity.type and e.offset == low - begin and e.length == high - low
                for e in part.entities
            )
        pieces += len(found)
    assert pieces == sum(len(part.entities) for part in parts)


def test_bold_italic_strike_code_and_link_become_entities_at_their_offsets() -> None:
    part = _only("**bold** *it* ~~gone~~ `x = 1` [docs](https://example.com/a)")

    assert part.text == "bold it gone x = 1 docs"
    found = [(e.type, e.offset, e.length, _covered(part, e)) for e in part.entities]
    assert found == [
        (MessageEntity.BOLD, 0, 4, "bold"),
        (MessageEntity.ITALIC, 5, 2, "it"),
        (MessageEntity.STRIKETHROUGH, 8, 4, "gone"),
        (MessageEntity.CODE, 13, 5, "x = 1"),
        (MessageEntity.TEXT_LINK, 19, 4, "docs"),
    ]
    assert part.entities[-1].url == "https://example.com/a"


def test_a_fenced_code_block_becomes_a_pre_entity_with_its_language() -> None:
    part = _only("Run this:\n\n```python\ndef f():\n    return 1\n```\n")

    assert part.text == "Run this:\n\ndef f():\n    return 1"
    (pre,) = part.entities
    assert (pre.type, pre.language) == (MessageEntity.PRE, "python")
    assert _covered(part, pre) == "def f():\n    return 1"


def test_spoilers_become_spoiler_entities() -> None:
    part = _only("the killer is ||the butler||")

    (spoiler,) = part.entities
    assert spoiler.type == MessageEntity.SPOILER
    assert _covered(part, spoiler) == "the butler"


def test_headings_lists_and_quotes_render_as_plain_telegram_text() -> None:
    part = _only("# Plan\n\n- eggs\n- milk\n\n1. shop\n2. cook\n\n> so it goes")

    assert part.text == "Plan\n\n⦁ eggs\n⦁ milk\n\n1. shop\n2. cook\n\nso it goes"
    kinds = {(e.type, _covered(part, e)) for e in part.entities}
    assert kinds == {
        (MessageEntity.BOLD, "Plan"),
        (MessageEntity.UNDERLINE, "Plan"),
        (MessageEntity.BLOCKQUOTE, "so it goes"),
    }


def test_utf16_len_counts_an_emoji_as_two_units() -> None:
    assert utf16_len("") == 0
    assert utf16_len("abc") == 3
    assert utf16_len("é漢") == 2
    assert utf16_len("😀") == 2
    assert utf16_len("a😀b👍") == 6


def test_an_entity_after_an_emoji_is_offset_in_utf16_units() -> None:
    part = _only("😀😀 **bold**")

    (bold,) = part.entities
    assert (bold.offset, bold.length) == (5, 4)
    assert _covered(part, bold) == "bold"


def test_empty_or_blank_text_gives_no_parts() -> None:
    assert render("") == []
    assert render(" \n\n\t ") == []
    assert plain_parts("") == []
    assert plain_parts("  \n ") == []


def test_a_6000_character_reply_is_split_at_paragraphs_into_ordered_parts() -> None:
    words = [f"w{i}" for i in range(1200)]
    paragraphs = [" ".join(words[i : i + 20]) for i in range(0, len(words), 20)]
    reply = "\n\n".join(paragraphs)
    assert 6000 <= len(reply) <= 7000

    parts = render(reply)

    assert len(parts) == 2
    _assert_well_formed(parts, 4096)
    assert [w for part in parts for w in part.text.split()] == words
    assert reply.startswith(parts[0].text + "\n\n")
    assert parts[1].text.startswith("w")


def test_a_split_never_falls_inside_a_bold_span_that_fits_in_a_part() -> None:
    reply = "a " * 2000 + "**" + "bold words " * 10 + "end**" + " tail" * 500

    parts = render(reply)

    assert len(parts) == 2
    _assert_well_formed(parts, 4096)
    assert parts[0].text.endswith("a a")
    assert parts[0].entities == ()
    bold = parts[1].entities[0]
    assert (bold.type, bold.offset) == (MessageEntity.BOLD, 0)
    assert _covered(parts[1], bold) == "bold words " * 10 + "end"


def test_a_code_block_longer_than_a_message_is_split_into_code_blocks() -> None:
    code = "\n".join(f"    value_{i} = compute({i})" for i in range(400))
    assert len(code) > 4096

    parts = render(f"```python\n{code}\n```", limit=4096)

    assert len(parts) >= 3
    _assert_well_formed(parts, 4096)
    for part in parts:
        (pre,) = part.entities
        assert (pre.type, pre.language) == (MessageEntity.PRE, "python")
        assert (pre.offset, pre.length) == (0, utf16_len(part.text))
    # Cuts fall at line ends, and each part keeps its first line's indentation.
    assert "\n".join(part.text for part in parts) == code


def test_a_long_line_without_spaces_is_hard_cut() -> None:
    line = "".join(str(i % 10) for i in range(10_000))

    parts = render(line)

    assert [len(part.text) for part in parts] == [4096, 4096, 1808]
    assert "".join(part.text for part in parts) == line


def test_a_hard_cut_never_splits_an_emoji() -> None:
    parts = render("😀" * 3000)

    assert [utf16_len(part.text) for part in parts] == [4096, 1904]
    assert all(set(part.text) == {"😀"} for part in parts)
    assert [part.text for part in render("😀" * 5, limit=5)] == ["😀😀", "😀😀", "😀"]


def test_a_line_break_is_preferred_to_a_space_and_a_space_to_a_hard_cut() -> None:
    assert plain_parts("one two\nthree four five", limit=16) == ["one two", "three four five"]
    assert plain_parts("one two three four", limit=10) == ["one two", "three four"]
    assert plain_parts("one\n\ntwo\nthree", limit=13) == ["one", "two\nthree"]


def test_every_entity_of_every_part_lies_within_its_part() -> None:
    blocks = [
        "## Section\n\nSome **bold**, some *italic*, a [link](https://example.com) 😀.",
        "- item with `code`\n- item with ~~strike~~ and ||spoiler||",
        "> a quote with **bold** inside\n> over two lines",
        "```sh\necho 'hello'\nls -la\n```",
    ]
    markdown = "\n\n".join(blocks * 40)

    for limit in (50, 200, 4096):
        parts = render(markdown, limit=limit)
        _assert_well_formed(parts, limit)
        _assert_same_formatting_as_unsplit(markdown, parts, limit)


_TOKENS = [
    "word", "longer", "x", "é", "漢字", "😀", "👨‍👩‍👧", "🇺🇦", " ", " ", " ", "\n", "\n\n",
    "**", "*", "_", "~~", "~", "`", "```", "```python\n", "||", "[", "](https://example.com)",
    "# ", "## ", "- ", "1. ", "> ", "\t", "    ", "<b>", "\\", "$", "|", "---\n",
]  # fmt: skip


def _generated(rng: random.Random) -> str:
    tokens = []
    for _ in range(rng.choice([0, 5, 50, 400, 1500])):
        if rng.random() < 0.02:
            tokens.append(rng.choice("ab😀") * rng.randint(20, 300))
        else:
            tokens.append(rng.choice(_TOKENS))
    return "".join(tokens)


def test_generated_inputs_always_give_parts_that_fit_with_entities_in_bounds(
    caplog: pytest.LogCaptureFixture,
) -> None:
    rng = random.Random(20240611)
    caplog.set_level(logging.WARNING)

    for _ in range(300):
        limit = rng.choice([2, 3, 7, 40, 256, 4096])
        markdown = _generated(rng)[: 300 if limit < 40 else None]  # tiny limits: many parts

        parts = render(markdown, limit=limit)
        _assert_well_formed(parts, limit)
        _assert_same_formatting_as_unsplit(markdown, parts, limit)

        raw = plain_parts(markdown, limit=limit)
        assert all(0 < utf16_len(text) <= limit for text in raw)
        assert "".join("".join(text.split()) for text in raw) == "".join(markdown.split())

    assert caplog.records == []  # the converter never failed, so no fallback hid a bug


def test_render_falls_back_to_plain_text_when_the_converter_fails(
    caplog: pytest.LogCaptureFixture,
) -> None:
    broken = "**bold** and a lone surrogate \ud800"  # the parser cannot encode it

    parts = render(broken)

    assert parts == [Part(broken, ())]
    assert "sending the text unformatted" in caplog.text


def test_plain_parts_splits_the_raw_text_without_touching_markdown() -> None:
    text = "**keep** the `markers`\n\n" + "word " * 1000

    parts = plain_parts(text, limit=1000)

    assert parts[0] == "**keep** the `markers`"
    assert all(utf16_len(part) <= 1000 for part in parts)
    assert " ".join(parts).split() == text.split()


def test_a_limit_below_one_emoji_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        render("hi", limit=1)
    with pytest.raises(ValueError, match="at least 2"):
        plain_parts("hi", limit=0)


def test_callback_data_of_64_bytes_is_accepted_and_65_refused() -> None:
    assert check_callback_data("a" * 64) == "a" * 64
    with pytest.raises(ValueError, match=r"callback data must be 1-64 bytes.*got 65"):
        check_callback_data("a" * 65)
    with pytest.raises(ValueError, match="got 0"):
        check_callback_data("")


def test_callback_data_is_measured_in_utf8_bytes_not_characters() -> None:
    assert check_callback_data("é" * 32) == "é" * 32
    assert check_callback_data("😀" * 16) == "😀" * 16
    with pytest.raises(ValueError, match="got 66"):
        check_callback_data("é" * 33)
    with pytest.raises(ValueError, match="got 68"):
        check_callback_data("😀" * 17)


def test_past_max_parts_the_last_part_ends_with_one_line_saying_the_text_was_cut() -> None:
    text = " ".join(f"w{i}" for i in range(2000))

    parts = render(text, limit=300, max_parts=3)

    assert len(parts) == 3
    _assert_well_formed(parts, 300)
    *kept, notice = parts[-1].text.split("\n")
    assert notice.startswith("✂ The reply was cut here: ")
    words = [w for part in parts[:-1] for w in part.text.split()] + " ".join(kept).split()
    assert words == text.split()[: len(words)]
    assert render(text, limit=300, max_parts=60)[-1].text.endswith("w1999")  # it fits: no cut
    with pytest.raises(ValueError, match="max_parts needs"):
        render(text, limit=100, max_parts=3)


def test_markdown_far_longer_than_max_parts_is_cut_before_converting_and_says_so() -> None:
    link = "[a](https://example.com/" + "y" * 990 + ")"  # a thousand characters, "a" on screen
    markdown = " ".join([link] * 30)

    parts = render(markdown, limit=300, max_parts=3)  # reads 3 * 300 * 8 = 7,200 characters

    (part,) = parts
    assert part.text.startswith("a a a a a a a ")
    assert part.text.endswith(" more characters were too long to send.")
    _assert_well_formed(parts, 300)
