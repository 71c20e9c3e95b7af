"""Pending-actions settings (env prefix ``PENDING_``, plus ``DATA_DIR`` shared by every server).

The approval key is not a setting of this class: meshkit's ``load_approval_key`` reads
``MESH_APPROVAL_KEY`` (shared with every confirm tool) or a key file under ``DATA_DIR``.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from meshkit.proposals import MAX_TTL_S

DB_FILE = "pending_actions.sqlite3"


class PendingSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="PENDING_", extra="ignore")

    max_ttl_s: int = Field(
        default=MAX_TTL_S,
        ge=1,
        le=MAX_TTL_S,
        description="Longest a proposal may wait for a tap; a longer ttl_s is cut to this.",
    )
    executing_lease_s: float = Field(
        default=60,
        gt=0,
        description="After this long in 'executing' without complete or fail, the orchestrator "
        "is presumed to have crashed and the chat may approve the action again.",
    )
    # "data_dir" as a second choice lets code pass data_dir=...; env names are case-insensitive,
    # so only DATA_DIR is read from the environment.
    data_dir: Path = Field(
        default=Path("data"), validation_alias=AliasChoices("DATA_DIR", "data_dir")
    )

    @property
    def db_path(self) -> Path:
        return self.data_dir / DB_FILE
