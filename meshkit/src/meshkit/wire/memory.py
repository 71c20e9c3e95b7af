"""What the memory tools return."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class AppendResult(BaseModel):
    stored: int = Field(description="Items stored (messages, function calls and their outputs)")
    ignored: int = Field(description="Items of other types (reasoning...), not stored")
    at: float = Field(description="Server time the items were stamped with (Unix seconds)")
    duplicate: bool = Field(
        default=False, description="This turn_id was appended before: nothing was stored"
    )


class Window(BaseModel):
    items: list[dict[str, Any]] = Field(
        description="Responses API input items, oldest first, exactly as appended"
    )
    token_estimate: int = Field(description="Conservative token estimate of the items")
    dropped: int = Field(description="Older items of this conversation left out of the window")
    last_activity: float | None = Field(
        description="When the newest item of this conversation was appended (Unix seconds), "
        "or null when it has none"
    )


class ResetResult(BaseModel):
    at: float = Field(description="Server time of the reset (Unix seconds)")
    previous_items: int = Field(
        description="Items of the conversation that ended; they are kept, but no window shows them"
    )
