"""Serving settings shared by every clawmesh server, and the fail-fast loader.

Every component reads its configuration through one pydantic-settings class with
its own env prefix (``WEATHER_``, ``SHOPPING_``...). What servers share is declared
once here: ``DataSettings`` (``DATA_DIR``), ``SigningSettings`` (pending-actions' private
key), ``ApprovalSettings`` (the public key, for the servers that check approvals) and
``ServeSettings``, the serving knobs under ``MESH_`` (plus ``MCP_HOST`` and ``MCP_PORT``,
which containers set). This module is the only code that reads the process environment
(``environment()``: for the ``${VAR}`` of YAML files and the bot tokens agents.yaml names).

Secrets may come from files instead (``SecretFile``: a ``*_FILE`` variable names the file,
as compose's secrets under ``/run/secrets`` are): a container's environment, which
``docker inspect`` shows to anyone who may use Docker, then holds no secret.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, ClassVar, NoReturn, TypeVar

import dotenv
from pydantic import (
    AliasChoices,
    BeforeValidator,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
)
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from meshkit.credentials import (
    ClientCredential,
    CredentialError,
    PeerCredential,
    check_client_name,
    check_digest,
    parse_clients,
    parse_peers,
)

SettingsT = TypeVar("SettingsT", bound=BaseSettings)

CONFIG_ERROR_EXIT = 2


DOTENV = Path(".env")


def load_dotenv(path: Path = DOTENV) -> None:
    """Read ``.env`` (if there is one) into the environment with dotenv's rules (a trailing
    ``# comment`` and surrounding spaces are not part of a value; quotes may hold them);
    variables already set win. Every entry point calls it first, so a server started any
    way reads the same values as ``make run``."""
    if path.is_file():
        dotenv.load_dotenv(path, override=False)


def environment() -> Mapping[str, str]:
    """The process environment, for values whose names come from configuration files."""
    return os.environ


def read_secret_file(value: object) -> object:
    """A ``*_FILE`` variable's value (a path) → what the file holds, without the surrounding
    whitespace; an empty file counts as unset (None), as an empty variable does."""
    if not isinstance(value, str | Path):
        return value
    path = Path(value)
    try:
        text = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) else "not UTF-8 text"
        raise ValueError(
            f"cannot read the file {path} ({reason}); point it at the secret's file "
            "(make up writes them under secrets/)"
        ) from None
    return text or None


# A field whose variable names a file holding the value (``OPENAI_API_KEY_FILE``), read
# when the settings load: a missing or unreadable file is named at start.
SecretFile = Annotated[SecretStr | None, BeforeValidator(read_secret_file)]
TextFile = Annotated[str | None, BeforeValidator(read_secret_file)]


def secret_value(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The value of variable ``name`` (for names that come from configuration files, such
    as agents.yaml's ``bot_token_env``), else what the file ``<name>_FILE`` names holds;
    None when neither gives anything. ValueError names an unreadable file."""
    environ = environment() if environ is None else environ
    value = environ.get(name, "").strip()
    if value:
        return value
    path = environ.get(f"{name}_FILE", "").strip()
    if not path:
        return None
    try:
        found = read_secret_file(path)
    except ValueError as error:
        raise ValueError(f"{name}_FILE: {error}") from None
    return found if isinstance(found, str) else None


class DataSettings(BaseSettings):
    """Where a server keeps its data: ``DATA_DIR`` (a volume in containers, ./data locally).

    For this class and every class built on it, a variable set to nothing (``OPENAI_API_KEY=``
    as .env.example has it) counts as unset: never an empty token."""

    model_config = SettingsConfigDict(extra="ignore", env_ignore_empty=True)
    db_file: ClassVar[str]  # a server's own database (db_path), set by a server with one

    # "data_dir" as a second choice lets code pass data_dir=...; env names are
    # case-insensitive, so only DATA_DIR is read from the environment.
    data_dir: Path = Field(
        default=Path("data"), validation_alias=AliasChoices("DATA_DIR", "data_dir")
    )
    max_db_mb: float | None = Field(
        default=None,
        gt=0,
        validation_alias=AliasChoices("DATA_MAX_MB", "max_db_mb"),
        description="Largest a server's database may grow, in MB; past it, writes fail as on "
        "a full disk (unset: as large as the disk allows).",
    )

    @property
    def max_db_bytes(self) -> int | None:
        return None if self.max_db_mb is None else int(self.max_db_mb * 1e6)

    @property
    def db_path(self) -> Path:
        """The server's database: its ``db_file`` in ``DATA_DIR``."""
        return self.data_dir / self.db_file


class SigningSettings(DataSettings):
    """pending-actions alone: the private key approvals are signed with,
    ``MESH_APPROVAL_SIGNING_KEY_FILE``, else a key pair made in ``DATA_DIR``
    (``meshkit.approval_keys.signing_key``)."""

    approval_signing_key_file: Path | None = Field(
        default=None,
        validation_alias=AliasChoices(
            "MESH_APPROVAL_SIGNING_KEY_FILE", "approval_signing_key_file"
        ),
        description="pending-actions' Ed25519 private key (PEM, PKCS8, unencrypted); unset: "
        "$DATA_DIR/approval_signing_key, made at the first start with the public key beside it.",
    )


class ApprovalSettings(DataSettings):
    """A server with confirm tools: the public key approvals are checked with,
    ``MESH_APPROVAL_PUBLIC_KEY_FILE``, else ``$DATA_DIR/approval_public_key``
    (``meshkit.approval_keys.public_key``). It has no field for the private key."""

    approval_public_key_file: Path | None = Field(
        default=None,
        validation_alias=AliasChoices("MESH_APPROVAL_PUBLIC_KEY_FILE", "approval_public_key_file"),
        description="pending-actions' Ed25519 public key (PEM); unset: "
        "$DATA_DIR/approval_public_key, which pending-actions writes in embedded mode.",
    )
    # Consent from any client (meshkit.relay): where a bound client's proposal is staged.
    relay_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("MESH_RELAY_URL", "relay_url"),
        description="pending-actions' MCP URL (e.g. http://pending-actions:8105/mcp), where "
        "proposals of clients bound to a person are staged; unset: such a proposal is refused.",
    )
    relay_token: SecretStr | None = Field(
        default=None,
        validation_alias=AliasChoices("MESH_RELAY_TOKEN", "relay_token"),
        description="This server's own credential for pending-actions' relay tools.",
    )
    relay_token_file: SecretFile = Field(
        default=None,
        validation_alias=AliasChoices("MESH_RELAY_TOKEN_FILE", "relay_token_file"),
        description="MESH_RELAY_TOKEN_FILE: a file holding it instead (what containers get).",
    )

    @property
    def relay_credential(self) -> SecretStr | None:
        """The relay token: MESH_RELAY_TOKEN, else the file's (None: neither is set)."""
        return self.relay_token or self.relay_token_file


class ServeSettings(DataSettings):
    """How a server is exposed: port, who may call it, allowlists, limits, logs.

    The orchestrator's credential is known here by its SHA-256 only: a server has no field
    that could hold a token (its own or another server's), so no shared .env or environment
    can hand one to a server process."""

    model_config = SettingsConfigDict(env_prefix="MESH_", extra="ignore", env_ignore_empty=True)

    token_sha256: str | None = Field(
        default=None,
        description="The SHA-256 of the orchestrator's credential for this server "
        "(MESH_TOKEN_SHA256): it admits the orchestrator, every tool class.",
    )
    token_sha256_file: TextFile = Field(
        default=None,
        description="MESH_TOKEN_SHA256_FILE: a file holding it instead (what containers get).",
    )
    clients: Annotated[list[ClientCredential], NoDecode] = Field(
        default_factory=list,
        description="Other clients (MESH_CLIENTS): name:scopes:<user>@<agent>:sha256:<digest>, "
        "comma-separated; scopes read and/or producer, each bound to one agent and user "
        "(make client NAME=... AGENT=... USER=... prints an entry).",
    )
    peers: Annotated[list[PeerCredential], NoDecode] = Field(
        default_factory=list,
        description="Servers that relay their bound clients' proposals (MESH_PEERS, on "
        "pending-actions): <server>:sha256:<digest of its relay token>, comma-separated; "
        "each may call relay tools only, in its own name.",
    )
    peers_file: TextFile = Field(
        default=None,
        description="MESH_PEERS_FILE: a file holding them instead, one a line (what "
        "containers get; make up writes it).",
    )
    stdio_client: str = Field(
        default="stdio",
        description="MESH_STDIO_CLIENT: the name a bound stdio client goes by (the user reads "
        "it humanised: claude-desktop is 'Claude Desktop').",
    )
    stdio_agent: str | None = Field(
        default=None,
        description="With MESH_STDIO_USER: over stdio, serve as a client bound to this agent "
        "(read and producer tools, context arguments filled in); unset: every tool, as the "
        "operator.",
    )
    stdio_user: str | None = Field(
        default=None, description="The Telegram user id a bound stdio client speaks for."
    )
    agents: Path = Field(
        default=Path("config/agents.yaml"),
        validation_alias=AliasChoices("CLAWMESH_AGENTS"),
        description="The fleet file, read (when there) for the time zone of each bound "
        "client's agent.",
    )
    host: str = Field(
        default="127.0.0.1",
        validation_alias=AliasChoices("MCP_HOST"),
        description="Interface to bind; containers set 0.0.0.0.",
    )
    port: int | None = Field(
        default=None, ge=1, le=65535, validation_alias=AliasChoices("MCP_PORT")
    )
    allowed_hosts: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Extra Host names accepted besides localhost and the server's own name; "
        "'*' accepts any (behind a trusted proxy).",
    )
    max_body_bytes: int = Field(default=1_048_576, ge=1024)
    header_timeout_s: float = Field(
        default=10.0, gt=0, description="A request head must arrive within this (else 408)."
    )
    body_timeout_s: float = Field(
        default=30.0, gt=0, description="A request body must arrive within this (else 408)."
    )
    max_connections: int = Field(
        default=200, ge=1, description="Open connections; beyond, the idlest one is closed."
    )
    log_level: str = Field(default="INFO", validation_alias=AliasChoices("LOG_LEVEL"))

    @field_validator("allowed_hosts", mode="before")
    @classmethod
    def _split_commas(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip().lower() for part in value.split(",") if part.strip()]
        return value

    @field_validator("token_sha256", "token_sha256_file")
    @classmethod
    def _digest(cls, value: str | None) -> str | None:
        return None if value is None else check_digest(value)

    @field_validator("peers", mode="before")
    @classmethod
    def _parse_peers(cls, value: object) -> object:
        return parse_peers(value) if isinstance(value, str) else value

    @field_validator("peers_file")
    @classmethod
    def _peers_text(cls, value: str | None) -> str | None:
        if value is not None:
            parse_peers(value)  # a mistake is named at start, as for MESH_PEERS
        return value

    @field_validator("stdio_client")
    @classmethod
    def _client_name(cls, value: str) -> str:
        return check_client_name(value)

    @property
    def all_peers(self) -> list[PeerCredential]:
        """MESH_PEERS and MESH_PEERS_FILE's entries; CredentialError when a name is in both."""
        peers = [*self.peers, *parse_peers(self.peers_file or "")]
        names = [peer.name for peer in peers]
        if len(set(names)) != len(names):
            raise CredentialError(
                "a peer is in both MESH_PEERS and MESH_PEERS_FILE; keep one entry"
            )
        return peers

    @property
    def orchestrator(self) -> str | None:
        """The digest that admits the orchestrator: MESH_TOKEN_SHA256, else the file's (None:
        neither is set)."""
        return self.token_sha256 or self.token_sha256_file

    @field_validator("clients", mode="before")
    @classmethod
    def _parse_clients(cls, value: object) -> object:
        return parse_clients(value) if isinstance(value, str) else value

    @field_validator("log_level")
    @classmethod
    def _known_level(cls, value: str) -> str:
        level = value.upper()
        if level not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
            raise ValueError("use one of DEBUG, INFO, WARNING, ERROR, CRITICAL")
        return level


def env_name(settings_cls: type[BaseSettings], field: str) -> str:
    """The environment variable that sets ``field`` of ``settings_cls`` (a field's name, or
    one of its aliases as pydantic reports it): the name the user sets, never an alias."""
    for name, info in settings_cls.model_fields.items():
        alias = info.validation_alias
        choices = alias.choices if isinstance(alias, AliasChoices) else [alias]
        if name == field or field in choices:
            first = choices[0]
            if isinstance(first, str):
                return first.upper()
    prefix = str(settings_cls.model_config.get("env_prefix", ""))
    return f"{prefix}{field}".upper()


def describe_error(settings_cls: type[BaseSettings], error: ValidationError) -> str:
    """One line per bad variable, naming the variable and what to do."""
    lines = []
    for item in error.errors():
        field = str(item["loc"][0]) if item["loc"] else ""
        name = env_name(settings_cls, field) if field else settings_cls.__name__
        if item["type"] == "missing":
            lines.append(f"{name} is not set: export {name}=... (see .env.example)")
        else:
            # item["input"] may be a secret: never echo it.
            message = str(item["msg"]).removeprefix("Value error, ")
            lines.append(f"{name} is invalid: {message}")
    return "\n".join(lines)


def load_settings(settings_cls: type[SettingsT]) -> SettingsT:
    """Build settings from the environment, or exit with a message naming the variable."""
    try:
        return settings_cls()
    except ValidationError as error:
        fail(describe_error(settings_cls, error))


def fail(message: str) -> NoReturn:
    """Stop startup with a configuration error (exit code 2)."""
    fail_all([message])


def fail_all(messages: list[str]) -> NoReturn:
    """Stop startup naming every configuration error found, one after the other (exit 2)."""
    for message in messages:
        print(f"configuration error: {message}", file=sys.stderr)
    raise SystemExit(CONFIG_ERROR_EXIT)
