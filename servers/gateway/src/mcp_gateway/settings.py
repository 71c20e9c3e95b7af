"""Gateway settings (env prefix ``GATEWAY_``, plus ``DATA_DIR`` and the approval key shared by
every server with changes).

``GATEWAY_NAME`` is the capability's registry name: approvals are minted for it and policies
written under it (``git.git_add``). ``GATEWAY_COMMAND`` is the server it stands in front of, a
JSON list (``["/opt/capability/bin/mcp-server-git", "--repository", "/data/repo"]``), started
as a child process that gets a minimal environment (PATH, HOME, ...) and ``GATEWAY_ENV_FILE``'s
``NAME=value`` lines: its secrets, read from a file, never from the gateway's environment.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import SettingsConfigDict

from meshkit.settings import ApprovalSettings
from meshkit.yaml_config import ConfigError

NAME_PATTERN = r"^[a-z][a-z0-9-]{0,29}$"
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MAX_ARGUMENTS_BYTES = 16_384


class EnvFileError(ConfigError):
    """A ``GATEWAY_ENV_FILE`` that cannot be read; the message names the line, never a value
    (a configuration error: the server stops with that one line, exit 2)."""


class GatewaySettings(ApprovalSettings):
    model_config = SettingsConfigDict(env_prefix="GATEWAY_", extra="ignore")

    name: str = Field(
        pattern=NAME_PATTERN,
        description="GATEWAY_NAME: the capability's name in the registry (approvals name it)",
    )
    command: list[str] = Field(
        min_length=1,
        description="GATEWAY_COMMAND: the stdio server behind the gateway, a JSON list",
    )
    env_file: Path | None = Field(
        default=None,
        description="GATEWAY_ENV_FILE: NAME=value lines for the server's environment (its secrets)",
    )
    workdir: Path | None = Field(
        default=None,
        description="GATEWAY_WORKDIR: the server's working directory, made when missing "
        "(a capability with data: true: /data/server, on its volume)",
    )
    call_timeout_s: float = Field(
        default=60.0, gt=0, le=3600, description="GATEWAY_CALL_TIMEOUT_S: how long a call may take"
    )
    max_arguments_bytes: int = Field(
        default=MAX_ARGUMENTS_BYTES,
        ge=256,
        le=1_000_000,
        description="GATEWAY_MAX_ARGUMENTS_BYTES: the largest arguments of one call, as JSON",
    )

    @field_validator("command")
    @classmethod
    def _a_program(cls, command: list[str]) -> list[str]:
        """The first word is a program here: a path to one, or a name on PATH."""
        if not command[0].strip():
            raise ValueError("the first word must name a program")
        if shutil.which(command[0]) is None:
            raise ValueError(
                f"{command[0][:200]!r} is no program here (not found, or not executable)"
            )
        return command

    @property
    def db_path(self) -> Path:
        """This capability's record of the changes it made: one file per capability, so
        several share a ``DATA_DIR`` (embedded mode)."""
        return self.data_dir / f"gateway-{self.name}.sqlite3"

    def child_env(self) -> dict[str, str]:
        """The server's own variables, from ``env_file`` (none without one)."""
        return read_env_file(self.env_file) if self.env_file is not None else {}

    def secret_values(self) -> list[SecretStr]:
        """What the logs must never show: every value of ``env_file``."""
        return [SecretStr(value) for value in self.child_env().values() if value]


def read_env_file(path: Path) -> dict[str, str]:
    """``NAME=value`` lines (``#`` comments and blank lines skipped) → name → value."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) else "not UTF-8 text"
        raise EnvFileError(f"cannot read {path} ({reason}); clawmesh secrets writes it") from None
    found: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, equals, value = line.partition("=")
        if not equals or not _VARIABLE.fullmatch(name.strip()):
            raise EnvFileError(f"{path}, line {number}: expected NAME=value")
        found[name.strip()] = value.strip()
    return found
