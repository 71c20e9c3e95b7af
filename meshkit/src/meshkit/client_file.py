"""The client file: what ``clawmesh mcp`` (one stdio endpoint for Claude Desktop or any stdio
MCP client) reaches over HTTP, and with which credential. ``make client`` writes two files:

    clients/claude-desktop.yaml     the client's name, whom it speaks for, the servers' URLs
    clients/claude-desktop.token    its token (mode 600), named by ``token_file``

Neither Claude Desktop's configuration nor a command line ever holds the token: the endpoint
reads it from the token file. On a laptop, copy both files and put the Pi's address in the
URLs (``make client HOST=…`` writes them so).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from meshkit.credentials import Binding, check_client_name
from meshkit.private import private_dir, private_file
from meshkit.yaml_config import ConfigError, load_yaml

# The registry's servers with tools for clients; these two serve the orchestrator alone.
INTERNAL_ROLES = frozenset({"telegram-io", "pending-actions"})
_SERVER = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,29})")  # a registry name, as DESIGN "Names"
_URL = re.compile(r"https?://[^\s/]+(/\S*)?")


class ClientFile(BaseModel):
    """A client file, read: the token is in ``token_file`` (relative to the file)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    client: str
    speaks_for: str = ""
    token_file: Path
    servers: Annotated[dict[str, str], Field(min_length=1)]

    @field_validator("client")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_client_name(value)

    @field_validator("servers")
    @classmethod
    def _servers(cls, value: dict[str, str]) -> dict[str, str]:
        for name, url in value.items():
            if not _SERVER.fullmatch(name):
                raise ValueError(f"server {name[:40]!r}: give its registry name (e.g. weather)")
            if not _URL.fullmatch(url):
                raise ValueError(f"server {name}: {url[:80]!r} is not an http(s) URL")
        return value


def read_client_file(path: Path) -> tuple[ClientFile, str]:
    """The client file at ``path`` and the token its ``token_file`` holds; ConfigError
    naming the file and the fix otherwise."""
    if not path.is_file():
        raise ConfigError(
            f"{path}: no client file there; give the absolute path of the one make client "
            "wrote (clients/NAME.yaml), or make one: make client NAME=... AGENT=... USER=..."
        )
    try:
        client = ClientFile.model_validate(load_yaml(path))
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the file"
        raise ConfigError(
            f"{path}: {where}: {first['msg']}; make it again with make client NAME=... "
            "AGENT=... USER=..."
        ) from None
    token_path = client.token_file
    if not token_path.is_absolute():
        token_path = path.parent / token_path
    try:
        token = token_path.read_text(encoding="utf-8").strip()
    except OSError as error:
        raise ConfigError(
            f"{path}: token_file {token_path} cannot be read ({error.strerror}); copy it "
            "beside the client file, or make the client again with make client"
        ) from None
    if not token or len(token.split()) != 1:
        raise ConfigError(f"{token_path}: expected the client's token alone on one line")
    return client, token


def client_urls(registry: Mapping[str, object], host: str) -> dict[str, str]:
    """Server → the URL a client reaches it at on ``host``, for each ``auth: mesh`` server of
    a registry's ``servers`` mapping that offers clients tools: the port of its URL in the
    mesh, which compose.clients.yaml publishes as the same number."""
    urls = {}
    for name, entry in registry.items():
        if not isinstance(entry, dict) or entry.get("auth") != "mesh" or "url" not in entry:
            continue
        if entry.get("role") in INTERNAL_ROLES:
            continue
        port = re.search(r"://[^/:]+:(\d+)", str(entry["url"]))
        if port is not None:
            urls[name] = f"http://{host}:{port[1]}/mcp"
    return urls


def capability_urls(capabilities: Mapping[str, object], host: str) -> dict[str, str]:
    """Capability → the URL a client reaches its gateway at on ``host``, for each entry of
    capabilities.yaml with a ``port`` (which its generated service publishes)."""
    return {
        name: f"http://{host}:{entry['port']}/mcp"
        for name, entry in capabilities.items()
        if isinstance(entry, dict) and isinstance(entry.get("port"), int)
    }


def write_client_file(
    directory: Path, name: str, binding: Binding, token: str, urls: Mapping[str, str]
) -> Path:
    """``<directory>/<name>.yaml`` and its ``<name>.token`` (mode 600, the directory 700)."""
    private_dir(directory)
    token_path = directory / f"{name}.token"
    private_file(token_path)
    token_path.write_text(token + "\n", encoding="utf-8")
    path = directory / f"{name}.yaml"
    servers = "".join(f"  {server}: {url}\n" for server, url in urls.items())
    path.write_text(
        f"# What `clawmesh mcp {path.name}` reaches over HTTP, and as whom (make client).\n"
        "# On another machine: copy this file and the token file beside it, and put the\n"
        "# Pi's address in the URLs (the Pi publishes them: compose.clients.yaml, and a\n"
        "# capability's port: entry).\n"
        f"client: {name}\n"
        f"speaks_for: '{binding}'\n"
        f"token_file: {token_path.name}\n"
        f"servers:\n{servers}",
        encoding="utf-8",
    )
    return path


def load_registry_servers(registry: Path, environ: Mapping[str, str]) -> dict[str, object]:
    """The ``servers`` mapping of a registry file (``${VAR}`` substituted)."""
    servers = load_yaml(registry, environ).get("servers")
    if not isinstance(servers, dict):
        raise ConfigError(f"{registry}: expected a 'servers' mapping")
    return servers
