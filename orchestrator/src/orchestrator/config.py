"""The registry (config/mcp_servers.yaml) and the fleet (config/agents.yaml).

``${VAR}`` is substituted as in Compose (see ``meshkit.yaml_config``). Every error
names the file, the key and the fix, and stops the process with exit code 2.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from meshkit.consent_policy import Policies, Rule, parse_policies
from meshkit.secret_files import CredentialsFileError, read_credentials
from meshkit.wire.usage import ALLOW_MORE
from meshkit.yaml_config import ConfigError, load_yaml

__all__ = [
    "Agent",
    "AgentEntry",
    "AllowanceEntry",
    "Amount",
    "ConfigError",
    "ModelPrice",
    "Persona",
    "Prices",
    "Role",
    "ServerEntry",
    "check_server_name",
    "load_fleet",
    "load_prices",
    "load_registry",
    "mesh_credentials",
    "qualified_name",
]

PERSONA_FILES = ("IDENTITY.md", "SOUL.md", "USER.md")
_NAME = re.compile(r"^[A-Za-z0-9-]+(_[A-Za-z0-9-]+)*$")  # no "__", no leading/trailing "_"
MAX_TOOL_NAME = 64
M = TypeVar("M", bound=BaseModel)
# The infrastructure the orchestrator itself calls, found by role rather than by name.
Role = Literal["telegram-io", "pending-actions", "memory", "scheduler"]
# Change kinds that always need the user's tap, by the role of the server that declares them
# (ChangeKind(tap_only=True)): pending-actions asks for them whatever a rule says, so a rule
# that would allow one without a tap (auto, a grant) is a mistake, named like any other.
TAP_ONLY: dict[Role, dict[str, str]] = {
    "memory": {ALLOW_MORE: "an assistant never raises its own allowance"},
}


class ServerEntry(BaseModel):
    """How to reach one MCP server: exactly one of url, command or module."""

    model_config = ConfigDict(extra="forbid")

    url: str | None = Field(default=None, description="Streamable HTTP endpoint")
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
        ways = [w for w in ("url", "command", "module") if getattr(self, w)]
        if len(ways) != 1:
            raise ValueError("give exactly one of url, command or module")
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
        return "http" if self.url else "stdio" if self.command else "in-process"


Unit = Literal["money", "tokens"]
_TOKENS = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*([kKmM]?)\s*tokens?")
_MONEY = re.compile(r"\$?\s*([0-9]+(?:\.[0-9]+)?)")


@dataclass(frozen=True)
class Amount:
    """An allowance's amount: money (in the price table's currency) or tokens (input +
    output, as the API reports them)."""

    value: float
    unit: Unit

    @classmethod
    def parse(cls, raw: object) -> Amount:
        """``1.50`` or ``"$1.50"``: money; ``"200k tokens"``, ``"2M tokens"``: tokens."""
        if isinstance(raw, bool):
            raise ValueError("expected an amount such as 1.50 (money) or '200k tokens'")
        unit: Unit = "money"
        if isinstance(raw, int | float):
            value = float(raw)
        else:
            text = str(raw).strip()
            tokens, money = _TOKENS.fullmatch(text), _MONEY.fullmatch(text)
            if tokens:
                scale = {"": 1, "k": 1_000, "m": 1_000_000}[tokens[2].lower()]
                value, unit = float(tokens[1]) * scale, "tokens"
            elif money:
                value = float(money[1])
            else:
                raise ValueError(
                    f"{text[:40]!r} is not an amount: write money as a number (1.50) or "
                    "tokens as '200k tokens'"
                )
        if value <= 0:
            raise ValueError("an allowance must be more than 0 (leave it out for none)")
        return cls(value, unit)


class _Limits(BaseModel):
    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    daily: Amount | None = Field(default=None, description="per day, in the agent's time zone")
    monthly: Amount | None = Field(default=None, description="per calendar month")

    @field_validator("daily", "monthly", mode="before")
    @classmethod
    def _amount(cls, value: object) -> object:
        return None if value is None or isinstance(value, Amount) else Amount.parse(value)


class AllowanceEntry(_Limits):
    """An agent's allowance: ``daily``/``monthly`` for all its users together, ``per_user``
    for each one, and ``more``, what one "allow more" tap adds for the day."""

    per_user: _Limits | None = None
    more: Amount | None = Field(
        default=None, description="what a tap allows more for today (default: a quarter of "
        "the allowance that was reached)"
    )  # fmt: skip

    @field_validator("more", mode="before")
    @classmethod
    def _more(cls, value: object) -> object:
        return None if value is None or isinstance(value, Amount) else Amount.parse(value)


class ModelPrice(BaseModel):
    """A model's price per million tokens."""

    model_config = ConfigDict(extra="forbid")

    input: float = Field(ge=0)
    cached_input: float | None = Field(default=None, ge=0, description="default: input's")
    output: float = Field(ge=0, description="reasoning tokens are billed as output")


class Prices(BaseModel):
    """The price table (``prices:`` in agents.yaml): a model is priced by its name, or by
    the longest listed name it extends with ``-`` (``gpt-5-mini`` prices
    ``gpt-5-mini-2025-08-07``)."""

    model_config = ConfigDict(extra="forbid")

    currency: str = Field(default="USD", min_length=1, max_length=8)
    models: dict[str, ModelPrice] = Field(default_factory=dict)

    def price(self, model: str) -> ModelPrice | None:
        if model in self.models:
            return self.models[model]
        prefixes = [name for name in self.models if model.startswith(f"{name}-")]
        return self.models[max(prefixes, key=len)] if prefixes else None


class AgentEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    persona: Path
    servers: list[str] | None = None  # None: every server of the registry
    tools: list[Annotated[str, Field(min_length=1, max_length=200)]] | None = Field(
        default=None,
        description="the model-facing tools offered, as <server>__<tool> names or patterns "
        "(fnmatch: weather__*, *__get_*); None: every read and producer tool of its servers",
    )
    timezone: str = "UTC"
    home: str | None = Field(
        default=None, max_length=200, description="the place of the morning briefing's weather"
    )
    bot_token_env: list[str] = Field(default_factory=list)
    allowed_user_ids: list[str] = Field(default_factory=list)
    api: Literal["responses", "chat"] | None = None
    model: str | None = None
    reasoning_effort: Literal["minimal", "low", "medium", "high"] | None = None
    max_rounds: int | None = Field(default=None, ge=1, le=50)
    max_tool_calls: int | None = Field(default=None, ge=1, le=500)
    # Read by meshkit.consent_policy (load_fleet): its mistakes are named there.
    consent: Any = Field(default=None, description="change kind → ask | auto | deny")
    allowance: AllowanceEntry | None = Field(
        default=None, description="what the model may cost per day and month"
    )

    @field_validator("bot_token_env", mode="before")
    @classmethod
    def _one_or_many(cls, value: object) -> object:
        return [value] if isinstance(value, str) else value

    @field_validator("allowed_user_ids", mode="before")
    @classmethod
    def _ids_as_text(cls, value: object) -> object:
        # An unset ${TELEGRAM_USER_ID} leaves "": that is no user, not a user named "".
        if isinstance(value, list):
            return [str(v).strip() for v in value if str(v).strip()]
        return value

    @field_validator("timezone")
    @classmethod
    def _known_timezone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"{value!r} is not an IANA timezone; use e.g. Europe/Berlin") from None
        return value


@dataclass(frozen=True)
class Persona:
    """The persona files, read once at start (read-only at runtime)."""

    identity: str
    soul: str
    user: str

    def text(self) -> str:
        return "\n\n".join(part.strip() for part in (self.identity, self.soul, self.user) if part)


@dataclass(frozen=True)
class Agent:
    id: str
    entry: AgentEntry
    persona: Persona
    servers: tuple[str, ...]  # whose tools the model may use (``entry.servers`` resolved)
    # What happens to each change it proposes: ask (the default), auto or deny.
    policies: Policies = field(default_factory=Policies)

    def offers(self, qualified: str) -> bool:
        """Whether the tool named ``qualified`` (``<server>__<tool>``) of one of its
        servers is offered to the model (``tools:``; without it, every one)."""
        patterns = self.entry.tools
        return patterns is None or any(fnmatchcase(qualified, p) for p in patterns)


def load_registry(path: Path, environ: Mapping[str, str] | None = None) -> dict[str, ServerEntry]:
    raw = load_yaml(path, environ)
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
        entry = _validate(ServerEntry, body or {}, path, f"servers.{name}")
        if entry.role is not None and entry.role in roles:
            raise ConfigError(
                f"{path}: servers.{name}.role: {roles[entry.role]!r} is the {entry.role} "
                "server already; give the role to one server only"
            )
        if entry.role is not None:
            roles[entry.role] = str(name)
        entries[str(name)] = entry
    return entries


def load_prices(path: Path, environ: Mapping[str, str] | None = None) -> Prices:
    """The price table of the fleet file (none listed: every model unpriced)."""
    raw = load_yaml(path, environ)
    return _validate(Prices, raw.get("prices") or {}, path, "prices")


def load_fleet(
    path: Path,
    registry: Mapping[str, ServerEntry],
    environ: Mapping[str, str] | None = None,
    *,
    root: Path | None = None,
) -> dict[str, Agent]:
    """The agents of ``path``; relative persona paths are read under ``root`` (the project
    root, default: the current directory), whatever directory the file itself is in."""
    raw = load_yaml(path, environ)
    agents = raw.get("agents")
    if not isinstance(agents, dict) or not agents:
        raise ConfigError(
            f"{path}: agents: expected at least one agent (see the shipped "
            "config/agents.yaml for the shape)"
        )
    base = (root or Path.cwd()).resolve()
    fleet: dict[str, Agent] = {}
    for agent_id, body in agents.items():
        key = f"agents.{agent_id}"
        entry = _validate(AgentEntry, body or {}, path, key)
        for server in entry.servers or ():
            if server not in registry:
                raise ConfigError(
                    f"{path}: {key}.servers: {server!r} is not in the registry; "
                    f"add it to the registry or use one of {sorted(registry)}"
                )
        policies = _policies(entry, registry, path, f"{key}.consent")
        servers = tuple(registry if entry.servers is None else entry.servers)
        _check_tool_patterns(entry.tools or [], servers, path, f"{key}.tools")
        persona_dir = entry.persona if entry.persona.is_absolute() else base / entry.persona
        persona = _read_persona(persona_dir, path, f"{key}.persona")
        fleet[str(agent_id)] = Agent(str(agent_id), entry, persona, servers, policies)
    return fleet


def _check_tool_patterns(
    patterns: list[str], servers: tuple[str, ...], path: Path, key: str
) -> None:
    """A ``tools:`` pattern must name a tool of one of the agent's servers: one that can
    match none (a typo, a server the agent lacks) would hide tools without a word."""
    for pattern in patterns:
        server = pattern.split("__", 1)[0] if "__" in pattern else None
        if server is None or not any(fnmatchcase(name, server) for name in servers):
            raise ConfigError(
                f"{path}: {key}: {pattern!r} names no tool of this agent's servers; write "
                f"<server>__<tool> (patterns allowed: weather__*) with a server among "
                f"{sorted(servers)}"
            )


def _policies(
    entry: AgentEntry, registry: Mapping[str, ServerEntry], path: Path, key: str
) -> Policies:
    """The agent's consent rules; a rule naming a server the registry does not have, or
    allowing a tap-only kind without a tap, is a mistake (it would never apply), named like
    any other."""
    policies = parse_policies(entry.consent, f"{path}: {key}")
    for rule in policies.rules:
        server = rule.pattern.split(".", 1)[0]
        if rule.pattern != "*" and server not in registry:
            raise ConfigError(
                f"{path}: {key}.{rule.pattern}: {server!r} is not in the registry, so this "
                f"rule would never apply; use one of {sorted(registry)}"
            )
        _check_tap_only(rule, registry, path, key)
    return policies


def _check_tap_only(rule: Rule, registry: Mapping[str, ServerEntry], path: Path, key: str) -> None:
    """A rule naming a tap-only kind exactly may ask or deny, never allow it without a tap
    (a wildcard rule, ``memory.*: auto``, applies to the server's other kinds only)."""
    server, _, kind = rule.pattern.partition(".")
    role = registry[server].role if server in registry else None
    why = TAP_ONLY.get(role, {}).get(kind) if role is not None else None
    if why is None or (rule.policy != "auto" and rule.grant_s is None):
        return
    allows = "auto" if rule.policy == "auto" else "grant"
    raise ConfigError(
        f"{path}: {key}.{rule.pattern}: {allows} would never apply: {rule.pattern} always "
        f"needs the user's tap ({why}); use ask or deny, or remove the rule"
    )


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


def _read_persona(directory: Path, path: Path, key: str) -> Persona:
    if not (directory / "IDENTITY.md").is_file():
        raise ConfigError(
            f"{path}: {key}: {directory} has no IDENTITY.md; create it "
            "(who the agent is) or fix the path"
        )
    texts = {
        name: (directory / name).read_text(encoding="utf-8") if (directory / name).is_file() else ""
        for name in PERSONA_FILES
    }
    return Persona(texts["IDENTITY.md"], texts["SOUL.md"], texts["USER.md"])


def _validate(model: type[M], body: Any, path: Path, key: str) -> M:
    try:
        return model.model_validate(body)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in (key, *first["loc"]))
        message = first["msg"].removeprefix("Value error, ")
        if first["type"] == "extra_forbidden":
            message = f"unknown key; the keys are {', '.join(model.model_fields)}"
        elif first["type"] == "missing":
            message = "required; add it"
        raise ConfigError(f"{path}: {where}: {message}") from None
