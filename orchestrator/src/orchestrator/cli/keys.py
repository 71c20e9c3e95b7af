"""``clawmesh client`` and ``clawmesh secrets``: the mesh's credentials.

clawmesh client NAME --agent A --user U [--scopes read] [--out clients [--host pi.local]]
    a credential for an MCP client other than the orchestrator, bound to one person
    (meshkit.add_client); make client runs it
clawmesh secrets [--dir secrets] [--registry config/mcp_servers.yaml]
    the secret files compose mounts (meshkit.secret_files); make up runs it
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

from cyclopts import Parameter

from meshkit.add_client import ClientSettings, add_client, client_file
from meshkit.command import CliError, Json, guarded, settings_of
from meshkit.credentials import DEFAULT_CLIENT_SCOPES
from meshkit.secret_files import CredentialsFileError, make_secrets
from meshkit.settings import environment
from meshkit.yaml_config import ConfigError
from orchestrator.cli import stack_file


def client(
    name: str,
    /,
    *,
    agent: Annotated[str, Parameter(help="the agent it speaks to (clawdia)")],
    user: Annotated[str, Parameter(help="the Telegram user id it speaks for")],
    scopes: Annotated[
        str, Parameter(help="tool classes it may call: read, producer or read+producer")
    ] = "+".join(DEFAULT_CLIENT_SCOPES),
    out: Annotated[
        Path | None, Parameter(help="also write OUT/NAME.yaml and OUT/NAME.token, for clawmesh mcp")
    ] = None,
    host: Annotated[str, Parameter(help="the address its URLs name (the Pi's, for a laptop)")] = (
        "127.0.0.1"
    ),
    as_json: Json = False,
) -> None:
    """The description is clawmesh's (cli/main.py)."""

    def run() -> None:
        settings = settings_of(ClientSettings)
        made = add_client(settings, name, agent, user, scopes)
        written = (
            client_file(settings.registry, out, made.credential, made.token, host) if out else None
        )
        for old in made.dropped:
            print(
                f"note: dropped client {old!r}, bound to no one; make it again with "
                f"clawmesh client {old} --agent ... --user ...",
                file=sys.stderr,
            )
        if as_json:
            print(json.dumps({
                "client": name,
                "token": made.token,
                "mesh_clients": made.line,
                "client_file": str(written.resolve()) if written else None,
            }))  # fmt: skip
            return
        binding = made.credential.binding
        kept_where = "also in its token file" if written else "shown once"
        print(
            f"Token for {name}, for user {binding.user} of agent {binding.agent} "
            f"({kept_where}; the client sends Authorization: Bearer ...):"
        )
        print(f"  {made.token}")
        if written:
            print(f"Wrote {written} and its token file, for: clawmesh mcp {written.resolve()}")
        print("Set this line in .env (it keeps the clients there), then restart the servers:")
        print(f"  MESH_CLIENTS={made.line}")

    guarded(run, as_json=as_json)


def secrets(
    *,
    directory: Annotated[
        Path | None, Parameter(name="--dir", help="where the files go (default: secrets)")
    ] = None,
    registry: Annotated[
        Path | None,
        Parameter(help="the registry (default: mcp_servers.yaml in CLAWMESH_CONFIG or config)"),
    ] = None,
) -> None:
    """The description is clawmesh's (cli/main.py)."""

    def run() -> None:
        settings_of(ClientSettings)  # .env read, as make up's other steps read it
        environ = environment()
        where = directory or Path(environ.get("CLAWMESH_SECRETS") or "secrets")
        read = registry or Path(environ.get("CLAWMESH_CONFIG") or "config") / "mcp_servers.yaml"
        try:
            changed = make_secrets(where, read, environ)
            stack_file.write(Path(), read, environ)
        except (CredentialsFileError, ValueError) as error:
            raise ConfigError(str(error)) from None
        except OSError as error:
            raise CliError(
                f"cannot write the secret files in {where} ({error.strerror})",
                "make it writable",
                code=2,
            ) from None
        sys.stdout.write("".join(f"{name}\n" for name in changed))

    guarded(run, as_json=False)
