"""What a server may read of the fleet file (config/agents.yaml, ``CLAWMESH_AGENTS``): each
agent's time zone. The scheduler runs its jobs on that clock, and a client bound to an agent
(``meshkit.bindings``) gets that agent's zone; the orchestrator validates the rest of the file.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from meshkit.yaml_config import ConfigError, load_yaml


def agent_zones(path: Path, environ: Mapping[str, str] | None = None) -> dict[str, ZoneInfo]:
    """Each agent's time zone from the fleet file (UTC when it names none); ConfigError
    naming the file and the key when it cannot be read or a zone is not IANA's."""
    raw = load_yaml(path, environ)
    agents = raw.get("agents")
    if not isinstance(agents, dict) or not agents:
        raise ConfigError(f"{path}: agents: expected at least one agent")
    zones = {}
    for agent, body in agents.items():
        name = str((body or {}).get("timezone") or "UTC")
        try:
            zones[str(agent)] = ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            raise ConfigError(
                f"{path}: agents.{agent}.timezone: {name!r} is not an IANA timezone; "
                "use e.g. Europe/Berlin"
            ) from None
    return zones
