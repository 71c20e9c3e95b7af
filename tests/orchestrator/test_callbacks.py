"""Callback data: what a button carries, and what a forged or old one decodes to."""

from __future__ import annotations

import pytest

from orchestrator.core.callbacks import (
    MAX_BYTES,
    Tap,
    decode,
    decode_grant_end,
    encode,
    encode_grant_end,
)


@pytest.mark.parametrize(
    ("tap", "data"),
    [
        (Tap("action", "confirm", "act_0123456789ab"), "pa:c:act_0123456789ab"),
        (Tap("action", "cancel", "act_0123456789ab"), "pa:x:act_0123456789ab"),
        (Tap("action", "grant", "act_0123456789ab"), "pa:g:act_0123456789ab"),
        (Tap("batch", "confirm", "bat_ffffffffffff"), "pb:c:bat_ffffffffffff"),
        (Tap("batch", "cancel", "bat_ffffffffffff"), "pb:x:bat_ffffffffffff"),
    ],
)
def test_a_tap_round_trips_within_telegrams_64_bytes(tap: Tap, data: str) -> None:
    assert encode(tap) == data
    assert decode(data) == tap
    assert len(data.encode()) <= MAX_BYTES


@pytest.mark.parametrize(
    "data",
    [
        "",
        "zz",
        "pa:c",
        "pa:c:act_0123456789ab:extra",
        "pa:y:act_0123456789ab",
        "px:c:act_0123456789ab",
        "pa:c:bat_0123456789ab",  # a batch id where an action id belongs
        "pb:g:bat_0123456789ab",  # a grant is for one action's kind, never a batch
        "ge:grt_0123456789AB",
        "ge:act_0123456789ab",
        "pb:c:act_0123456789ab",
        "pa:c:act_0123456789AB",
        "pa:c:act_0123456789ab\n",
        "pa:c:../../etc/passwd",
        "cl:act_0123456789ab:1",
    ],
)
def test_anything_else_decodes_to_nothing(data: str) -> None:
    assert decode(data) is None


def test_a_tap_that_cannot_be_decoded_is_not_encoded() -> None:
    with pytest.raises(ValueError, match="cannot encode"):
        encode(Tap("action", "confirm", "bat_0123456789ab"))


def test_a_grant_end_button_names_one_grant_and_nothing_else() -> None:
    data = encode_grant_end("grt_0123456789ab")
    assert data == "ge:grt_0123456789ab"
    assert decode_grant_end(data) == "grt_0123456789ab"
    assert decode(data) is None  # not a pending action's button
    for forged in ("ge:grt_0123456789AB", "ge:act_0123456789ab", "ge:grt_0123456789ab:x", "ge:"):
        assert decode_grant_end(forged) is None, forged
