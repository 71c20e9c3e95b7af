"""The fleet (config/agents.yaml): each agent with its persona, servers, tools, consent rules
and allowance, checked against the registry.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from meshkit.consent_policy import Policies, Rule, parse_policies
from meshkit.wire.usage import ALLOW_MORE
from meshkit.yaml_config import ConfigError, load_yaml, validated
from orchestrator.config.registry import Role, ServerEntry

PERSONA_FILES = ("IDENTITY.md", "SOUL.md", "USER.md")
# Change kinds that always need the user's tap, by the role of the server that declares them
# (ChangeKind(tap_only=True)): pending-actions asks for them whatever a rule says, so a rule
# that would allow one without a tap (auto, a grant) is a mistake, named like any other.
TAP_ONLY: dict[Role, dict[str, str]] = {
    "memory": {ALLOW_MORE: "an assistant never raises its own allowance"},
}


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


def _amount(value: object) -> object:
    return None if value is None or isinstance(value, Amount) else Amount.parse(value)


AmountField = Annotated[Amount | None, BeforeValidator(_amount)]


class _Limits(BaseModel):
    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    daily: AmountField = Field(default=None, description="per day, in the agent's time zone")
    monthly: AmountField = Field(default=None, description="per calendar month")


class AllowanceEntry(_Limits):
    """An agent's allowance: ``daily``/``monthly`` for all its users together, ``per_user``
    for each one, and ``more``, what one "allow more" tap adds for the day."""

    per_user: _Limits | None = None
    more: AmountField = Field(
        default=None, description="what a tap allows more for today (default: a quarter of "
        "the allowance that was reached)"
    )  # fmt: skip


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
    stream: bool = Field(
        default=True,
        description="show the reply as the model writes it (Telegram); false: sent when whole",
    )
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
        entry = validated(AgentEntry, body or {}, path, key)
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
