"""Create a credential for an MCP client other than the orchestrator, bound to one person.

    python -m meshkit.add_client NAME --agent AGENT --user USER [--scopes read+producer]
                                 [--out DIR [--host HOST]]
    (or: make client NAME=... AGENT=... USER=... [SCOPES=read] [HOST=...])

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

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from meshkit.client_file import client_urls, load_registry_servers, write_client_file
from meshkit.credentials import (
    DEFAULT_CLIENT_SCOPES,
    Binding,
    ClientCredential,
    CredentialError,
    UnboundEntry,
    entries,
    new_client,
)
from meshkit.fleet import agent_zones
from meshkit.settings import environment, fail, load_dotenv, load_settings
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


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m meshkit.add_client",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("name", help="the client's name, as logs will show it (claude-desktop)")
    parser.add_argument("--agent", required=True, help="the agent it speaks to (clawdia)")
    parser.add_argument("--user", required=True, help="the Telegram user id it speaks for")
    parser.add_argument(
        "--scopes",
        default="+".join(DEFAULT_CLIENT_SCOPES),
        help="tool classes it may call: read, producer or read+producer (the default)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="also write DIR/NAME.yaml and DIR/NAME.token, for clawmesh mcp (make: clients)",
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address the client file's URLs name (the Pi's, for a laptop)",
    )
    args = parser.parse_args(argv)
    load_dotenv()
    settings = load_settings(ClientSettings)
    try:
        binding = Binding.parse(args.agent, args.user)
    except CredentialError as error:
        fail(str(error))
    check_agent(settings.agents, binding.agent)
    kept = existing(settings.clients, replacing=args.name)
    if any(client.name == args.name for client in kept):
        fail(f"MESH_CLIENTS already has a client named {args.name!r}: remove it or pick a name")
    try:
        token, credential = new_client(args.name, binding, args.scopes.split("+"))
    except CredentialError as error:
        fail(str(error))
    line = ",".join(client.entry() for client in [*kept, credential])
    kept_where = "also in its token file" if args.out is not None else "shown once"
    print(
        f"Token for {credential.name}, for user {binding.user} of agent {binding.agent} "
        f"({kept_where}; the client sends Authorization: Bearer ...):"
    )
    print(f"  {token}")
    if args.out is not None:
        written = client_file(settings.registry, args.out, credential, token, args.host)
        print(f"Wrote {written} and its token file, for: clawmesh mcp {written.resolve()}")
    print("Set this line in .env (it keeps the clients already there), then restart the servers:")
    print(f"  MESH_CLIENTS={line}")


def client_file(
    registry: Path, out: Path, credential: ClientCredential, token: str, host: str
) -> Path:
    """The client file of ``credential`` in ``out``: the registry's servers on ``host``."""
    try:
        urls = client_urls(load_registry_servers(registry, environment()), host)
    except ConfigError as error:
        fail(str(error))
    if not urls:
        fail(f"{registry} names no server with client tools (auth: mesh and a url)")
    return write_client_file(out, credential.name, credential.binding, token, urls)


def check_agent(fleet: Path, agent: str) -> None:
    """Stop unless ``agent`` is in the fleet file, when there is one to read."""
    if not fleet.is_file():
        return
    try:
        agents = agent_zones(fleet)
    except ConfigError as error:
        fail(str(error))
    if agent not in agents:
        fail(f"AGENT {agent!r} is not an agent of {fleet}: use one of {', '.join(sorted(agents))}")


def existing(text: str, *, replacing: str) -> list[ClientCredential]:
    """The entries of MESH_CLIENTS to keep: every bound one; an unbound one (from before
    bindings) is dropped with a line saying so, so this command is how it is replaced."""
    kept = []
    for entry in entries(text):
        try:
            kept.append(ClientCredential.parse(entry))
        except UnboundEntry as old:
            if old.name != replacing:
                print(
                    f"note: dropped client {old.name!r}, bound to no one; make it again with "
                    f"make client NAME={old.name} AGENT=... USER=...",
                    file=sys.stderr,
                )
        except CredentialError as error:
            fail(f"MESH_CLIENTS is invalid: {error}")
    return kept


if __name__ == "__main__":
    main()
