"""Pending-actions settings (env prefix ``PENDING_``; the fleet file, for the consent policies,
``CLAWMESH_AGENTS``; ``DATA_DIR`` and the key approvals are signed with,
``MESH_APPROVAL_SIGNING_KEY_FILE``, come from meshkit's ``SigningSettings``)."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pydantic import AliasChoices, Field
from pydantic_settings import SettingsConfigDict

from meshkit.settings import SigningSettings
from meshkit.wire.proposals import MAX_TTL_S

DB_FILE = "pending_actions.sqlite3"


class PendingSettings(SigningSettings):
    model_config = SettingsConfigDict(env_prefix="PENDING_", extra="ignore")
    db_file: ClassVar[str] = DB_FILE

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

    notice_lease_s: float = Field(
        default=30,
        gt=0,
        description="A notice handed to the orchestrator (next_notices) and not acked within "
        "this long is handed out again.",
    )
    notice_interval_s: float = Field(
        default=5,
        ge=0,
        le=3600,
        description="At most one message of clients' proposals per chat in this long: a "
        "client's proposals made meanwhile wait and go together, in one message with "
        "Confirm all.",
    )
    notice_retry_s: float = Field(
        default=2,
        gt=0,
        le=3600,
        description="A notice the orchestrator could not bring to its chat now (telegram-io "
        "down, Telegram rate limits or cannot be reached) is handed out again after this "
        "long, twice as long after each failure, up to notice_retry_max_s.",
    )
    notice_retry_max_s: float = Field(
        default=300,
        gt=0,
        le=24 * 3600,
        description="The longest wait between two tries of an undelivered notice.",
    )
    client_max_pending: int = Field(
        default=10,
        ge=1,
        le=1000,
        description="How many proposals of one client may wait for one user's decision at "
        "once; the client's next proposal is refused, saying so, until the user decides.",
    )
    agents: Path = Field(
        default=Path("config/agents.yaml"),
        validation_alias=AliasChoices("CLAWMESH_AGENTS", "agents"),
        description="The fleet file: each agent's consent policies (consent:), read again "
        "when it changes; not there: every change asks.",
    )
