"""The servers the ``clawmesh`` command acts on, reached as the orchestrator reaches them.

It reads the orchestrator's configuration (``.env``, ``CLAWMESH_REGISTRY``,
``CLAWMESH_AGENTS``, ``DATA_DIR``) and opens a registry of the role servers it needs:

- in the mesh (compose: ``docker compose exec orchestrator clawmesh …``), over HTTP with the
  orchestrator's credential for each (``MESH_CREDENTIALS_FILE``);
- in embedded mode (``make run``: ``module:`` entries), in this process on the same
  ``DATA_DIR`` (SQLite is shared between processes), telegram-io without its pollers: the
  running orchestrator's poll the bots, two pollers of one token would fight (409).

Which one: ``CLAWMESH_REGISTRY`` when set; else the mesh's registry where the mesh's
credentials are (``MESH_CREDENTIALS_FILE``, as in the orchestrator's container); else the
registry ``make run`` uses (``config/mcp_servers.local.yaml``), so a command typed after
``make run`` reaches the same servers and data.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from pathlib import Path

import fastmcp

from meshkit.command import CliError, settings_of
from meshkit.settings import environment
from orchestrator.config.fleet import Agent, load_fleet
from orchestrator.config.registry import Role, load_registry, mesh_credentials
from orchestrator.mesh.registry import Registry
from orchestrator.mesh.transports import ModuleNotLoadable
from orchestrator.settings import OrchestratorSettings

CONNECT_WAIT_S = 5.0
LOCAL_REGISTRY = Path("config/mcp_servers.local.yaml")  # make run's, relative as its default


def settings() -> OrchestratorSettings:
    """The orchestrator's settings, ``.env`` read first (the environment wins), with the
    registry that reaches the servers of this machine (the module's docstring)."""
    fastmcp.settings.show_server_banner = False
    fastmcp.settings.check_for_updates = "off"
    fastmcp.settings.telemetry_mode = "off"
    config = settings_of(OrchestratorSettings)
    mesh = "CLAWMESH_REGISTRY" in environment() or config.mesh_credentials_file is not None
    if mesh or not LOCAL_REGISTRY.is_file():
        return config
    return config.model_copy(update={"registry": LOCAL_REGISTRY})


def fleet(config: OrchestratorSettings) -> dict[str, Agent]:
    """The agents of the fleet file, validated as the orchestrator validates them."""
    environ = environment()
    entries = load_registry(config.registry, environ)
    return load_fleet(config.agents, entries, environ, root=config.root)


def agent_of(config: OrchestratorSettings, agents: dict[str, Agent], agent: str) -> Agent:
    if agent not in agents:
        raise CliError(
            f"no agent {agent!r} in {config.agents}",
            f"use one of {', '.join(sorted(agents))} (clawmesh agent list)",
        )
    return agents[agent]


@asynccontextmanager
async def role_servers(
    config: OrchestratorSettings, roles: Iterable[Role]
) -> AsyncIterator[Registry]:
    """A running registry of the registry's servers that play ``roles`` (those it has)."""
    wanted = set(roles)
    entries = {
        name: entry
        for name, entry in load_registry(config.registry, environment()).items()
        if entry.role in wanted
    }
    credentials = mesh_credentials(entries, config.registry, config.mesh_credentials_file)
    inbox = next((n for n, e in entries.items() if e.role == "telegram-io" and e.module), None)
    try:
        registry = Registry(
            entries,
            credentials=credentials,
            default_timeout_s=config.tool_timeout_s,
            connect_wait_s=CONNECT_WAIT_S,
            module_options={inbox: {"polling": False}} if inbox else None,
        )
    except ModuleNotLoadable as error:
        raise CliError(
            f"{config.registry}: {error}",
            "check the module path and that its package is installed",
        ) from None
    async with registry.running():
        yield registry


def unreachable(registry: Registry, server: str, why: str) -> CliError:
    """The error of a call to ``server`` that gave no answer, with the way to fix it."""
    [status] = [s for s in registry.status() if s.name == server]
    reason = why if status.up else f"not reachable ({status.error or 'down'})"
    return CliError(
        f"the {server} server gave no answer: {reason}",
        f"check that it runs and is up to date (clawmesh compose ps {server}), and that "
        "MESH_CREDENTIALS_FILE holds its credential",
    )
