"""telegram-io settings (env prefix ``TELEGRAM_``, plus ``DATA_DIR`` and ``CLAWMESH_AGENTS``).

Bot tokens are not settings of their own: each agent of the fleet names the
variables that hold its token (``bot_token_env`` in agents.yaml), see ``fleet.py``;
``TELEGRAM_BOT_TOKENS_FILE`` names the file where a name not set is looked up (containers).
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import SettingsConfigDict

from mcp_telegram_io.models import PHOTO_MAX_SIDE
from meshkit.settings import DataSettings
from meshkit.wire.telegram_io import MAX_DOWNLOAD_BYTES

DB_FILE = "telegram-io.sqlite3"
KILL_SWITCH = "inbox-disabled"


class TelegramIOSettings(DataSettings):
    model_config = SettingsConfigDict(env_prefix="TELEGRAM_", extra="ignore")
    db_file: ClassVar[str] = DB_FILE

    api_base: str = Field(
        default="https://api.telegram.org",
        description="Bot API root (TELEGRAM_API_BASE); tests point it at a fake.",
    )
    agents: Path = Field(
        default=Path("config/agents.yaml"),
        validation_alias=AliasChoices("CLAWMESH_AGENTS", "agents"),
        description="The fleet file: which agents exist and where their bot tokens are.",
    )
    bot_tokens_file: Path | None = Field(
        default=None,
        description="'<VARIABLE> <token>' lines (make up's secrets/bot_tokens): where a name "
        "of bot_token_env is looked up when neither it nor its <NAME>_FILE is set.",
    )
    poll_timeout_s: int = Field(default=25, ge=0, le=50, description="getUpdates long-poll.")
    lease_s: float = Field(
        default=15,
        gt=0,
        description="How long next_updates leases an update before redelivery; a consumer "
        "that names itself extends the leases of what it still works on.",
    )
    backoff_max_s: float = Field(default=60, gt=0, description="Cap of the network backoff.")
    conflict_backoff_s: float = Field(
        default=2,
        gt=0,
        description="First wait after 409 Conflict (another poller for the token); doubles "
        "while the conflict lasts.",
    )
    conflict_backoff_max_s: float = Field(
        default=60, gt=0, description="Cap of the conflict backoff."
    )
    max_retry_after_s: float = Field(
        default=30, ge=0, description="Longest 429 retry_after a send waits for; longer fails."
    )
    pace_s: float = Field(default=1.0, ge=0, description="Per-chat interval between messages.")
    pace_burst: int = Field(default=3, ge=1, description="Messages a chat may get at once.")
    keep_s: float = Field(
        default=2 * 86400, gt=0, description="How long acked updates are kept for dedupe."
    )
    max_file_bytes: int = Field(
        default=MAX_DOWNLOAD_BYTES,
        ge=1,
        description="The largest file download_media fetches (bytes); at most Telegram's "
        "20 MB for bots.",
    )
    photo_max_side: int = Field(
        default=PHOTO_MAX_SIDE,
        ge=320,
        le=2560,
        description="A photo is fetched in the largest size whose longer side is at most "
        "this (pixels); the smallest when every size is larger.",
    )

    @field_validator("max_file_bytes")
    @classmethod
    def _within_telegrams_limit(cls, value: int) -> int:
        if value > MAX_DOWNLOAD_BYTES:
            raise ValueError(
                f"Telegram lets bots download files of {MAX_DOWNLOAD_BYTES} bytes (20 MB) at "
                f"most: set it to {MAX_DOWNLOAD_BYTES} or less"
            )
        return value

    @property
    def kill_switch(self) -> Path:
        return self.data_dir / KILL_SWITCH
