"""Orchestrator settings: where the config is, which LLM, and the defaults agents inherit."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import SettingsConfigDict

from meshkit.secret_files import CredentialsFileError, read_credentials
from meshkit.settings import DataSettings, SecretFile


def _env(name: str) -> AliasChoices:
    return AliasChoices(name)


class OrchestratorSettings(DataSettings):
    """``DATA_DIR`` holds the console's log (data/logs/chat.log) and, in embedded mode, the
    servers' databases."""

    model_config = SettingsConfigDict(env_prefix="CLAWMESH_", extra="ignore", env_ignore_empty=True)

    registry: Path = Field(
        default=Path("config/mcp_servers.yaml"),
        description="CLAWMESH_REGISTRY: the MCP server registry",
    )
    agents: Path = Field(
        default=Path("config/agents.yaml"), description="CLAWMESH_AGENTS: the fleet"
    )
    root: Path = Field(
        default=Path(),
        description="CLAWMESH_ROOT: the project root, which relative persona paths start from",
    )

    openai_api_key: SecretStr | None = Field(default=None, validation_alias=_env("OPENAI_API_KEY"))
    openai_api_key_file: SecretFile = Field(
        default=None,
        validation_alias=_env("OPENAI_API_KEY_FILE"),
        description="OPENAI_API_KEY_FILE: a file holding the key instead (what containers get)",
    )
    openai_base_url: str | None = Field(default=None, validation_alias=_env("OPENAI_BASE_URL"))
    openai_model: str = Field(default="gpt-5-mini", validation_alias=_env("OPENAI_MODEL"))
    openai_api: Literal["responses", "chat"] = Field(
        default="responses", validation_alias=_env("OPENAI_API")
    )
    reasoning_effort: Literal["minimal", "low", "medium", "high"] | None = Field(
        default=None, validation_alias=_env("OPENAI_REASONING_EFFORT")
    )
    llm_timeout_s: float = Field(default=90, gt=0, validation_alias=_env("LLM_TIMEOUT_S"))

    transcription_model: str = Field(
        default="gpt-4o-mini-transcribe",
        validation_alias=_env("TRANSCRIPTION_MODEL"),
        description="TRANSCRIPTION_MODEL: what voice notes are transcribed with (whisper-1, "
        "a local Whisper server's model)",
    )
    transcription_base_url: str | None = Field(
        default=None,
        validation_alias=_env("TRANSCRIPTION_BASE_URL"),
        description="TRANSCRIPTION_BASE_URL: an OpenAI-compatible server with "
        "/audio/transcriptions (a local Whisper server); default: OPENAI_BASE_URL's",
    )
    transcription_api_key_file: SecretFile = Field(
        default=None,
        validation_alias=_env("TRANSCRIPTION_API_KEY_FILE"),
        description="TRANSCRIPTION_API_KEY_FILE: a file holding its key; default: the "
        "model's key (OPENAI_API_KEY)",
    )
    voice_max_s: int = Field(
        default=600,
        ge=1,
        le=7200,
        validation_alias=_env("VOICE_MAX_S"),
        description="VOICE_MAX_S: the longest voice note (or audio, round video) transcribed",
    )
    voice_max_bytes: int = Field(
        default=20 * 1024 * 1024,
        ge=1024,
        le=25 * 1024 * 1024,  # OpenAI's limit for one transcription
        validation_alias=_env("VOICE_MAX_BYTES"),
        description="VOICE_MAX_BYTES: the largest voice note transcribed",
    )
    text_file_max_chars: int = Field(
        default=20_000,
        ge=100,
        le=200_000,
        validation_alias=_env("TEXT_FILE_MAX_CHARS"),
        description="TEXT_FILE_MAX_CHARS: the longest text file read into a turn",
    )

    mesh_credentials_file: Path | None = Field(
        default=None,
        validation_alias=_env("MESH_CREDENTIALS_FILE"),
        description="MESH_CREDENTIALS_FILE: the orchestrator's credential for each 'auth: mesh' "
        "server, '<server> <token>' lines (make up writes it: clawmesh secrets)",
    )
    tool_timeout_s: float = Field(default=30, gt=0, validation_alias=_env("TOOL_TIMEOUT_S"))
    max_rounds: int = Field(default=6, ge=1, le=50, validation_alias=_env("MAX_ROUNDS"))
    max_tool_calls: int = Field(default=24, ge=1, le=500, validation_alias=_env("MAX_TOOL_CALLS"))
    turn_timeout_s: float = Field(default=180, gt=0, validation_alias=_env("TURN_TIMEOUT_S"))
    clarify_ttl_s: float = Field(
        default=3600,
        gt=0,
        le=7 * 24 * 3600,
        validation_alias=_env("CLARIFY_TTL_S"),
        description="CLARIFY_TTL_S: how long a question the model asked waits for its "
        "answer; then its buttons answer 'expired' and a later text is an ordinary message",
    )
    log_level: str = Field(default="INFO", validation_alias=_env("LOG_LEVEL"))
    inbox_consumer: str = Field(
        default="orchestrator",
        pattern=r"^[A-Za-z0-9_.-]{1,64}$",
        validation_alias=_env("INBOX_CONSUMER"),
        description="INBOX_CONSUMER: the name this orchestrator's leases of telegram-io's "
        "inbox go by; a restart under the same name takes its crashed run's updates at once",
    )
    shutdown_grace_s: float = Field(
        default=20,
        ge=0,
        validation_alias=_env("SHUTDOWN_GRACE_S"),
        description="SHUTDOWN_GRACE_S: on SIGTERM/SIGINT, how long running turns and taps "
        "may take to finish; what is cut off is redone by the next run",
    )
    tap_answer_within_s: float = Field(
        default=3,
        ge=0,
        le=10,
        validation_alias=_env("TAP_ANSWER_WITHIN_S"),
        description="TAP_ANSWER_WITHIN_S: a tap's notice waits this long for its outcome, "
        "to go out with the message's redraw in one call; a slower change (a Google "
        "calendar) gets the notice on its own first, so the button's spinner stops in time",
    )
    health_port: int | None = Field(
        default=None,
        ge=1,
        le=65535,
        validation_alias=_env("MCP_PORT"),
        description="MCP_PORT: GET /health on 127.0.0.1 (the container image sets 8100)",
    )

    @property
    def api_key(self) -> SecretStr | None:
        """OPENAI_API_KEY, else the file OPENAI_API_KEY_FILE names."""
        return self.openai_api_key or self.openai_api_key_file

    @property
    def transcription_key(self) -> SecretStr | None:
        """TRANSCRIPTION_API_KEY_FILE's key, else the model's."""
        return self.transcription_api_key_file or self.api_key

    @property
    def llm_configured(self) -> bool:
        return self.api_key is not None or bool(self.openai_base_url)

    def secrets(self) -> list[str]:
        """What the log formatter redacts: the LLM key and the mesh credentials (a credentials
        file that cannot be read is named when the registry is opened)."""
        keys = (self.api_key, self.transcription_key)
        known = list(dict.fromkeys(key.get_secret_value() for key in keys if key is not None))
        if self.mesh_credentials_file is not None:
            with contextlib.suppress(CredentialsFileError):
                known += read_credentials(self.mesh_credentials_file).values()
        return known


NO_LLM_HELP = """No LLM is configured. Either
  export OPENAI_API_KEY=sk-...            # OpenAI (model: OPENAI_MODEL, default gpt-5-mini)
or point at any OpenAI-compatible server, e.g. Ollama:
  export OPENAI_BASE_URL=http://localhost:11434/v1
  export OPENAI_MODEL=qwen3:8b
  export OPENAI_API=chat                            # if the server lacks the Responses API
then run the command again."""
