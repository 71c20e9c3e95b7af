"""The registry (config/mcp_servers.yaml): each server, how to reach it, its role, and the
orchestrator's credential for the ``auth: mesh`` ones; the names ``server__tool`` forms.

The capabilities (``capabilities.yaml`` beside the registry file, ``clawmesh capability add``
writes it) are registry entries too, each naming a published server by its pinned
``package``. How they are reached is the registry file's word (``capabilities:``): ``stdio``
(embedded mode, the default) starts each from its own environment, behind a gateway in this
process; ``http`` (the container stack) reaches each one's container, where its gateway
serves it (``http://<name>:8110/mcp``, with the orchestrator's credential for it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from meshkit.secret_files import CredentialsFileError, read_credentials
from meshkit.yaml_config import ConfigError, load_yaml, validated

_NAME = re.compile(r"^[A-Za-z0-9-]+(_[A-Za-z0-9-]+)*$")  # no "__", no leading/trailing "_"
# A published package pinned to one version: name[extras]==version.
PACKAGE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[A-Za-z0-9,._-]+\])?==([A-Za-z0-9.!+_-]+)$")
CAPABILITY_NAME = re.compile(r"^[a-z][a-z0-9-]{0,29}$")  # a compose service and a kind's server
CAPABILITIES_FILE = "capabilities.yaml"
LOCKS = "capabilities"  # beside it: capabilities/<name>.lock
GATEWAY_PORT = 8110
FIRST_PARTY_PORTS = (8100, 8110)  # the mesh's own servers' ports (and the gateway's)
MAX_TOOL_NAME = 64
# The infrastructure the orchestrator itself calls, found by role rather than by name.
Role = Literal["telegram-io", "pending-actions", "memory", "scheduler"]


class ServerEntry(BaseModel):
    """How to reach one MCP server: exactly one of url, command or module."""

    model_config = ConfigDict(extra="forbid")

    url: str | None = Field(default=None, description="Streamable HTTP endpoint")
    package: str | None = Field(
        default=None,
        description="a published server, pinned: 'name==version' (capabilities.yaml; its "
        "command runs from an environment of its own, made from its own lock)",
    )
    args: list[str] = Field(default_factory=list, description="more words for its command")
    egress: bool = Field(default=False, description="its container may reach the internet")
    memory: str | None = Field(
        default=None, pattern=r"^[1-9][0-9]{0,4}[mg]$", description="its container's memory limit"
    )
    data: bool = Field(default=False, description="its container gets a volume at /data")
    port: int | None = Field(
        default=None,
        ge=1024,
        le=65535,
        description="the port of this machine its container publishes for other MCP clients "
        "(clawmesh mcp: make client lists it); none by default",
    )
    debian: list[Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9+.-]{1,60}$")]] = Field(
        default_factory=list,
        description="Debian packages its server needs in its image (git for mcp-server-git); "
        "make run uses this machine's programs",
    )
    _lock: Path | None = PrivateAttr(default=None)
    command: list[str] | None = Field(default=None, description="stdio server command line")
    module: str | None = Field(default=None, description="in-process 'package.module:factory'")
    description: str = ""
    auth: Literal["mesh"] | None = Field(
        default=None,
        description="'mesh': send the orchestrator's credential for this server, from "
        "MESH_CREDENTIALS_FILE (clawmesh's own servers); without auth or token a url server "
        "gets no credential",
    )
    token: str | None = Field(
        default=None, description="a bearer token of this server's own (third-party servers)"
    )
    headers: dict[str, str] = Field(default_factory=dict)
    env: dict[str, str] = Field(default_factory=dict, description="extra env for a command")
    timeout_s: float | None = Field(default=None, gt=0, description="per-call timeout")
    role: Role | None = Field(
        default=None, description="what the orchestrator uses it for, if infrastructure"
    )
    proposes: bool = Field(
        default=False,
        description="this server may propose changes: its producer tools are offered to the "
        "model (when it declares a change kind, a confirm_<kind> tool) and its confirm tools "
        "called after a tap; without it, neither",
    )

    @model_validator(mode="after")
    def _exactly_one_way(self) -> ServerEntry:
        ways = [w for w in ("url", "module", "package") if getattr(self, w)]
        if self.command and not self.package:
            ways.append("command")
        if len(ways) != 1:
            raise ValueError("give exactly one of url, command, module or package")
        if self.package and not PACKAGE.match(self.package):
            raise ValueError(
                f"package {self.package!r} is not pinned: name one version, e.g. "
                "'mcp-server-git==2026.10.19'"
            )
        if self.package and self.role:
            raise ValueError("a package entry plays no role; remove role")
        extras = [
            k for k in ("args", "egress", "memory", "data", "debian", "port") if getattr(self, k)
        ]
        if extras and not self.package:
            raise ValueError(f"{extras[0]} is for package entries (capabilities) only")
        if self.port is not None and FIRST_PARTY_PORTS[0] <= self.port <= FIRST_PARTY_PORTS[1]:
            raise ValueError(
                f"port {self.port} is one of clawmesh's own servers' ({FIRST_PARTY_PORTS[0]}-"
                f"{FIRST_PARTY_PORTS[1]}, which compose.clients.yaml publishes); use 8120 or above"
            )
        if self.module and ":" not in self.module:
            raise ValueError("module must look like 'package.module:factory'")
        if (self.auth or self.token is not None) and not self.url:
            raise ValueError("auth and token are for url entries (HTTP) only; remove them")
        if self.auth and self.token is not None:
            raise ValueError(
                "give auth: mesh (clawmesh's credential) or token (this server's own), not both"
            )
        if self.proposes and self.role in ("telegram-io", "pending-actions"):
            raise ValueError(
                f"the {self.role} server proposes no changes; remove proposes from its entry"
            )
        if self.token is not None and not self.token.strip():
            raise ValueError(
                "token is empty: set the variable it names, or remove token to send none"
            )
        return self

    def bearer(self, mesh_credential: str | None) -> str | None:
        """The credential this server is sent: its own token, the orchestrator's credential
        for it (``mesh_credential``) if it asks with ``auth: mesh``, else none, so a
        third-party server never sees one of the mesh's."""
        if self.token is not None:
            return self.token
        return mesh_credential if self.auth == "mesh" else None

    @property
    def transport(self) -> Literal["http", "stdio", "in-process"]:
        return "http" if self.url else "stdio" if self.command or self.package else "in-process"

    @property
    def lock_file(self) -> Path | None:
        """A capability's lock (set by ``load_capabilities``)."""
        return self._lock

    @property
    def gatewayed(self) -> bool:
        """A server somebody else wrote, started here over stdio: it is served through a
        gateway in this process (``mcp_gateway``), its changes behind a tap."""
        return bool(self.package or self.command)

    @property
    def may_propose(self) -> bool:
        """Whether its proposals are staged and its confirm tools called: its entry says
        ``proposes``, or its gateway (which makes every change a proposal) stands in front."""
        return self.proposes or self.gatewayed

    @property
    def package_name(self) -> str:
        found = PACKAGE.match(self.package or "")
        return found.group(1) if found else ""

    def capability_command(self) -> list[str]:
        """The words that start a package entry's server inside its environment."""
        return [*(self.command or [self.package_name]), *self.args]


def load_registry(path: Path, environ: Mapping[str, str] | None = None) -> dict[str, ServerEntry]:
    """The registry file's servers and the capabilities beside it (see the module)."""
    raw = load_yaml(path, environ)
    reach = raw.get("capabilities", "stdio")
    if reach not in ("stdio", "http"):
        raise ConfigError(
            f"{path}: capabilities: {reach!r}; use stdio (each started here) or http (each "
            "in its container)"
        )
    entries = _servers(path, raw)
    for name, entry in load_capabilities(path.parent / CAPABILITIES_FILE, environ).items():
        if name in entries:
            raise ConfigError(
                f"{path.parent / CAPABILITIES_FILE}: servers.{name}: {path} has a server of "
                "that name already; rename the capability (clawmesh capability remove, add)"
            )
        entries[name] = entry if reach == "stdio" else reached_over_http(name, entry)
    return entries


def load_capabilities(
    path: Path, environ: Mapping[str, str] | None = None
) -> dict[str, ServerEntry]:
    """The package entries of ``path`` (none when there is no such file)."""
    if not path.is_file():
        return {}
    raw = load_yaml(path, environ)
    if not raw.get("servers"):
        return {}
    entries = _servers(path, raw)
    ports: dict[int, str] = {}
    for name, entry in entries.items():
        entry._lock = path.parent / LOCKS / f"{name}.lock"
        if entry.port is not None and entry.port in ports:
            raise ConfigError(
                f"{path}: servers.{name}.port: {ports[entry.port]} publishes {entry.port} "
                "already; give each capability a port of its own"
            )
        if entry.port is not None:
            ports[entry.port] = name
        if not entry.package:
            raise ConfigError(
                f"{path}: servers.{name}: a capability names its package (package: "
                "name==version); other servers go in the registry file"
            )
        if not CAPABILITY_NAME.match(name):
            raise ConfigError(
                f"{path}: servers.{name}: a capability's name is 1-30 lower-case letters, "
                "digits or '-', starting with a letter (it names its container too)"
            )
    return entries


def reached_over_http(name: str, entry: ServerEntry) -> ServerEntry:
    """A capability as the container stack reaches it: its container's gateway."""
    return ServerEntry(
        url=f"http://{name}:{GATEWAY_PORT}/mcp",
        auth="mesh",
        proposes=True,
        description=entry.description,
        timeout_s=entry.timeout_s,
    )


def _servers(path: Path, raw: dict[str, Any]) -> dict[str, ServerEntry]:
    servers = raw.get("servers")
    if not isinstance(servers, dict) or not servers:
        raise ConfigError(
            f"{path}: servers: expected a mapping of server names to entries "
            "(see config/mcp_servers.yaml in the repository for the shape)"
        )
    entries: dict[str, ServerEntry] = {}
    roles: dict[str, str] = {}
    for name, body in servers.items():
        check_server_name(str(name), path)
        entry = validated(ServerEntry, body or {}, path, f"servers.{name}")
        if entry.role is not None and entry.role in roles:
            raise ConfigError(
                f"{path}: servers.{name}.role: {roles[entry.role]!r} is the {entry.role} "
                "server already; give the role to one server only"
            )
        if entry.role is not None:
            roles[entry.role] = str(name)
        entries[str(name)] = entry
    return entries


def mesh_credentials(
    entries: Mapping[str, ServerEntry], path: Path, credentials_file: Path | None
) -> dict[str, str]:
    """Server → the orchestrator's credential for it, for the ``auth: mesh`` entries, read
    from ``credentials_file`` (MESH_CREDENTIALS_FILE). ConfigError at start, not at the
    first call, naming an entry that has none."""
    needing = sorted(name for name, entry in entries.items() if entry.auth == "mesh")
    if not needing:
        return {}
    if credentials_file is None:
        raise ConfigError(
            f"{path}: servers.{needing[0]}.auth: mesh needs the orchestrator's credential for "
            "it, and MESH_CREDENTIALS_FILE is not set; point it at the file make up writes "
            "(secrets/mesh_credentials, clawmesh secrets)"
        )
    try:
        known = read_credentials(credentials_file)
    except CredentialsFileError as error:
        raise ConfigError(f"MESH_CREDENTIALS_FILE: {error}") from None
    missing = [name for name in needing if name not in known]
    if missing:
        raise ConfigError(
            f"{path}: servers.{missing[0]}.auth: mesh has no credential in {credentials_file}; "
            "run make up (clawmesh secrets) to add one, then restart the server "
            "with its new MESH_TOKEN_SHA256"
        )
    return {name: known[name] for name in needing}


def check_server_name(name: str, path: Path) -> None:
    if not _NAME.match(name) or len(name) > 30:
        raise ConfigError(
            f"{path}: servers.{name}: a server name must be 1-30 letters, digits, '-' or single "
            "'_' (no '__', which separates server and tool in 'server__tool'); rename it"
        )


def qualified_name(server: str, tool: str) -> str | None:
    """``server__tool`` when both parts are valid and the result fits 64 characters."""
    if not _NAME.match(server) or not _NAME.match(tool):
        return None
    name = f"{server}__{tool}"
    return name if len(name) <= MAX_TOOL_NAME else None
