"""What a backup holds, found on this machine: every database under ``DATA_DIR``, the
fleet's configuration and the personas; and what it never holds (the secrets).

    data/<path>        every ``*.sqlite3`` under DATA_DIR, at its path there (embedded
                       mode: ``memory.sqlite3``; the compose backup service mounts each
                       volume in a directory of its own: ``memory/memory.sqlite3``)
    config/<name>      CLAWMESH_AGENTS, CLAWMESH_SCHEDULE, and the registry with every
                       ``mcp_servers*.yaml`` beside it
    agents/<id>/...    the personas under CLAWMESH_ROOT/agents (hidden files left out)

Databases are found, not listed: a new server's file comes along without a change here.
Nothing else of DATA_DIR is taken: the approval signing key (a secret), its public key
(made again from the key), logs, the kill switch of the inbox.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import Field

from orchestrator.settings import OrchestratorSettings

DATABASE_SUFFIX = ".sqlite3"
SECRETS_NOTE = (
    "Secrets are not in this archive: .env, secrets/ (make up's files), the approval "
    "signing key in DATA_DIR, Google credentials. Keep them apart; on a new machine, make "
    "up writes new ones from .env."
)


class BackupSettings(OrchestratorSettings):
    """The orchestrator's settings (``DATA_DIR``, ``CLAWMESH_AGENTS``, ``CLAWMESH_REGISTRY``,
    ``CLAWMESH_ROOT``) and the scheduler's ``CLAWMESH_SCHEDULE``."""

    schedule: Path = Field(
        default=Path("config/schedule.yaml"), description="CLAWMESH_SCHEDULE: the jobs"
    )


@dataclass(frozen=True)
class Source:
    """A file to archive: where it is, and its name in the archive."""

    path: Path
    name: str


def databases(data_dir: Path) -> list[Source]:
    """Every database under ``data_dir`` (its WAL and shared-memory files are read through
    SQLite, not copied)."""
    if not data_dir.is_dir():
        return []
    found = sorted(p for p in data_dir.rglob(f"*{DATABASE_SUFFIX}") if p.is_file())
    return [Source(p, f"data/{p.relative_to(data_dir).as_posix()}") for p in found]


def configuration(settings: BackupSettings) -> list[Source]:
    """The fleet, the schedule and the registries, those that exist."""
    files = [settings.agents, settings.schedule, settings.registry]
    files += sorted(settings.registry.parent.glob("mcp_servers*.yaml"))
    chosen: dict[str, Source] = {}
    for path in files:
        if path.is_file() and path.name not in chosen:
            chosen[path.name] = Source(path, f"config/{path.name}")
    return list(chosen.values())


def personas(root: Path) -> list[Source]:
    """Every file of ``root/agents/<id>/``, hidden ones (``.env``...) left out."""
    agents = root / "agents"
    if not agents.is_dir():
        return []
    found = []
    for path in sorted(agents.rglob("*")):
        relative = path.relative_to(agents)
        hidden = any(part.startswith(".") for part in relative.parts)
        # agents/<id>/..., not a file beside the personas
        if path.is_file() and not hidden and len(relative.parts) > 1:
            found.append(Source(path, f"agents/{relative.as_posix()}"))
    return found
