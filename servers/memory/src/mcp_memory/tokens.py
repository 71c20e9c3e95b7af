"""An offline, conservative token estimate (tiktoken would download its files at first use).

Real tokenizers give about 4 characters of English per token; ``max(chars/2, bytes/3)``
overestimates that, and stays above the count for non-Latin scripts and JSON punctuation,
which tokenize far worse. Overcounting only makes a window a little shorter.
"""

from __future__ import annotations

import json
import math
from typing import Any

ITEM_OVERHEAD = 4  # role and framing tokens the API adds around each item


def encode(item: dict[str, Any]) -> str:
    """The compact JSON text an item is stored as (and estimated from)."""
    return json.dumps(item, ensure_ascii=False, separators=(",", ":"))


def estimate_text(text: str) -> int:
    return math.ceil(max(len(text) / 2, len(text.encode("utf-8")) / 3))


def estimate(encoded_item: str) -> int:
    """Tokens of one item, given its JSON text."""
    return estimate_text(encoded_item) + ITEM_OVERHEAD
