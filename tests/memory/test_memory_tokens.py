"""The offline token estimate: conservative, from an item's JSON text."""

import pytest

from mcp_memory.tokens import ITEM_OVERHEAD, encode, estimate, estimate_text


@pytest.mark.parametrize(
    ("text", "expected"),
    [("", 0), ("abcd", 2), ("abcde", 3), ("日本語", 3), ("日本語の天気", 6), ("🙂🙂", 3)],
)
def test_the_token_estimate_is_the_larger_of_chars_over_2_and_bytes_over_3(
    text: str, expected: int
) -> None:
    assert estimate_text(text) == expected


def test_an_item_costs_its_json_text_plus_framing() -> None:
    item = {"type": "message", "role": "user", "content": "hello"}

    assert estimate(encode(item)) == estimate_text(encode(item)) + ITEM_OVERHEAD
