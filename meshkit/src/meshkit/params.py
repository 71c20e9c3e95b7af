"""Tool parameters the orchestrator's internal tools share: who (agent) and where (chat)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

Agent = Annotated[
    str,
    Field(
        description="Agent id (one per Telegram bot), e.g. 'clawdia'",
        min_length=1,
        max_length=200,
    ),
]
ChatId = Annotated[
    str,
    Field(
        description="Chat id, as a string (Telegram chat ids are numbers)",
        min_length=1,
        max_length=200,
    ),
]
