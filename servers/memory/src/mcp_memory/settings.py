"""Memory server settings (env prefix ``MEMORY_``, plus ``DATA_DIR`` shared by every server)."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from meshkit.settings import ApprovalSettings

DB_FILE = "memory.sqlite3"
MEMORIES_FILE = "memories.sqlite3"  # remembered rules and notes
QUESTIONS_FILE = "questions.sqlite3"  # clarify questions waiting for answers
USAGE_FILE = "usage.sqlite3"  # the model's usage, call by call; allowance grants (usage.db)
MAX_WINDOW_ITEMS = 1000
MAX_WINDOW_TOKENS = 1_000_000


class MemorySettings(ApprovalSettings):
    model_config = SettingsConfigDict(env_prefix="MEMORY_", extra="ignore")
    db_file: ClassVar[str] = DB_FILE

    window_max_items: int = Field(
        default=40, ge=1, le=MAX_WINDOW_ITEMS, description="Most items a window holds."
    )
    window_max_tokens: int = Field(
        default=24_000,
        ge=1,
        le=MAX_WINDOW_TOKENS,
        description="Token budget of a window (offline estimate, see mcp_memory.tokens).",
    )
    inactivity_s: float = Field(
        default=3600,
        gt=0,
        description="Silence after which a conversation is over and the next window starts empty.",
    )

    @property
    def memories_path(self) -> Path:
        return self.data_dir / MEMORIES_FILE

    @property
    def questions_path(self) -> Path:
        return self.data_dir / QUESTIONS_FILE

    @property
    def usage_path(self) -> Path:
        return self.data_dir / USAGE_FILE
