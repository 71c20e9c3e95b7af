"""Shopping server settings (env prefix ``SHOPPING_``, plus ``DATA_DIR`` shared by every server)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from meshkit.settings import ApprovalSettings

DB_FILE = "shopping.sqlite3"
MAX_LIST_NAME = 60


class ShoppingSettings(ApprovalSettings):
    model_config = SettingsConfigDict(env_prefix="SHOPPING_", extra="ignore")
    db_file: ClassVar[str] = DB_FILE

    default_list: str = Field(
        default="groceries",
        min_length=1,
        max_length=MAX_LIST_NAME,
        description="The list the tools use when none is named.",
    )
    example_agent: str | None = Field(
        default=None,
        max_length=200,
        description="The agent that gets an example order history on the first start "
        "(SHOPPING_EXAMPLE_AGENT; make run and make chat: clawdia).",
    )
    currency: str = Field(
        default="$",
        max_length=5,
        description="Shown before prices in proposals ('$4.99'); prices are stored as numbers.",
    )
