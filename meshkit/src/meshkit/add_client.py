"""Create a credential for an MCP client other than the orchestrator, bound to one person
(the command: ``clawmesh client``, orchestrator/cli/keys.py; ``make client``).

The client speaks for that agent and that user (a numeric Telegram user id, as in
config/agents.yaml ``allowed_user_ids``) only: the servers fill in its context arguments and
refuse any that names someone else. Prints the client's token (once: only its SHA-256 is kept)
and the ``MESH_CLIENTS`` line for ``.env``, with the entries already set kept (an entry from
before bindings is dropped, and said so). Restart the servers to admit the client.

With ``--out DIR`` (``make client`` gives ``clients``) it also writes the client file that
``clawmesh mcp`` reads (``meshkit.client_file``): ``DIR/NAME.yaml``, the URLs of the
registry's servers with client tools on ``--host`` (127.0.0.1: this machine), and
``DIR/NAME.token`` (mode 600).
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from meshkit.client_file import (
    capability_urls,
    client_urls,
    load_registry_servers,
    write_client_file,
)
from meshkit.credentials import (
    Binding,
    ClientCredential,
    CredentialError,
    UnboundEntry,
    entries,
    new_client,
)
from meshkit.fleet import agent_zones
from meshkit.secret_files import capabilities
from meshkit.settings import environment
from meshkit.yaml_config import ConfigError


class ClientSettings(BaseSettings):
    """What making a client reads: the entries already set, unchecked (an old entry must not
    stop the command that replaces it), and where the fleet is."""

    model_config = SettingsConfigDict(extra="ignore", env_ignore_empty=True)

    clients: str = Field(default="", validation_alias=AliasChoices("MESH_CLIENTS"))
    agents: Path = Field(
        default=Path("config/agents.yaml"), validation_alias=AliasChoices("CLAWMESH_AGENTS")
    )
    registry: Path = Field(
        default=Path("config/mcp_servers.yaml"),
        validation_alias=AliasChoices("CLAWMESH_REGISTRY"),
    )


class NewClient(NamedTuple):
    token: str
    credential: ClientCredential
    line: str  # MESH_CLIENTS, the clients kept and this one
    dropped: list[str]  # entries bound to no one, left out of line


def add_client(
    settings: ClientSettings, name: str, agent: str, user: str, scopes: str
) -> NewClient:
    """A new client bound to ``user`` of ``agent``; ConfigError naming what is wrong."""
    try:
        binding = Binding.parse(agent, user)
    except CredentialError as error:
        raise ConfigError(str(error)) from None
    check_agent(settings.agents, binding.agent)
    kept, dropped = existing(settings.clients, replacing=name)
    if any(client.name == name for client in kept):
        raise ConfigError(
            f"MESH_CLIENTS already has a client named {name!r}: remove it or pick a name"
        )
    try:
        token, credential = new_client(name, binding, scopes.split("+"))
    except CredentialError as error:
        raise ConfigError(str(error)) from None
    line = ",".join(client.entry() for client in [*kept, credential])
    return NewClient(token, credential, line, dropped)


def client_file(
    registry: Path, out: Path, credential: ClientCredential, token: str, host: str
) -> Path:
    """The client file of ``credential`` in ``out``: the registry's servers on ``host``."""
    environ = environment()
    urls = client_urls(load_registry_servers(registry, environ), host)
    urls |= capability_urls(capabilities(registry, environ), host)
    if not urls:
        raise ConfigError(f"{registry} names no server with client tools (auth: mesh and a url)")
    return write_client_file(out, credential.name, credential.binding, token, urls)


def check_agent(fleet: Path, agent: str) -> None:
    """Stop unless ``agent`` is in the fleet file, when there is one to read."""
    if not fleet.is_file():
        return
    agents = agent_zones(fleet)
    if agent not in agents:
        raise ConfigError(
            f"AGENT {agent!r} is not an agent of {fleet}: use one of {', '.join(sorted(agents))}"
        )


def existing(text: str, *, replacing: str) -> tuple[list[ClientCredential], list[str]]:
    """The entries of MESH_CLIENTS to keep (every bound one), and the names of those dropped:
    one bound to no one (from before bindings) is replaced by making it again."""
    kept, dropped = [], []
    for entry in entries(text):
        try:
            kept.append(ClientCredential.parse(entry))
        except UnboundEntry as old:
            if old.name != replacing:
                dropped.append(old.name)
        except CredentialError as error:
            raise ConfigError(f"MESH_CLIENTS is invalid: {error}") from None
    return kept, dropped
