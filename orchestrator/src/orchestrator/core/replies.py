"""What a channel shows: a text and, under it, rows of buttons."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Button:
    label: str
    data: str  # callback data, ≤ 64 bytes (Telegram)


@dataclass(frozen=True)
class Reply:
    text: str
    buttons: list[list[Button]] = field(default_factory=list)  # rows
    batch_id: str | None = None  # the pending-actions batch its buttons decide, if any
