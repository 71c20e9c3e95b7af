"""Consent policies, per agent and change kind: ``ask``, ``auto`` or ``deny``; never a model.

In the fleet file (``config/agents.yaml``), under an agent::

    consent:
      shopping.add_to_list: auto          # done at once, and the chat is told
      shopping.*: {policy: ask, grant: 1h}  # asked; the buttons offer "✅ and allow for 1 h"
      calendar.cancel_event: deny         # never staged; the model is told it is not allowed
      memory.remember: ask                # the default, for any kind not named

A change kind is ``<server>.<kind>``: the registry name of the server that proposes it and the
proposal's ``kind``. The most specific rule wins: the exact kind, then ``<server>.*``, then
``*``, then ``ask``. ``grant`` (``30m``, ``1h``, ... at most ``24h``) only goes with ``ask``:
a tap may then allow later changes of the same kind, from the same agent, for the same user,
through the same client, for that long. pending-actions (which mints approvals) and the
orchestrator (which tells the model and shows ``/status``) read the same rules with this module.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from meshkit.yaml_config import ConfigError, load_yaml

Policy = Literal["ask", "auto", "deny"]
POLICIES: tuple[Policy, ...] = ("ask", "auto", "deny")
MAX_GRANT_S = 24 * 3600
_PATTERN = re.compile(r"\*|[a-z][a-z0-9_-]{0,39}\.(\*|[a-z][a-z0-9_]{0,39})")
_DURATION = re.compile(r"([1-9][0-9]{0,4})([smhd])")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


@dataclass(frozen=True)
class Rule:
    """What happens to a proposal of a kind: its policy and, for ``ask``, the grant a tap may
    give (seconds; None: none)."""

    pattern: str  # the key it was written under ("shopping.add_to_list", "calendar.*", "*")
    policy: Policy
    grant_s: int | None = None

    def describe(self) -> str:
        """In words, for /status: 'ask', 'ask (a tap may allow 1 h)', 'auto', 'deny'."""
        if self.policy == "ask" and self.grant_s:
            return f"ask (a tap may allow {duration_text(self.grant_s)})"
        return self.policy


DEFAULT_RULE = Rule("*", "ask")


@dataclass(frozen=True)
class Policies:
    """One agent's rules."""

    rules: tuple[Rule, ...] = ()

    def rule(self, server: str, kind: str) -> Rule:
        """The rule in force for ``server``'s change ``kind``."""
        by_pattern = {rule.pattern: rule for rule in self.rules}
        for pattern in (f"{server}.{kind}", f"{server}.*", "*"):
            if pattern in by_pattern:
                return by_pattern[pattern]
        return DEFAULT_RULE


def duration_text(seconds: int) -> str:
    """'1 h', '30 min', '1 h 30 min', '45 s'."""
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{hours} h"] if hours else []
    parts += [f"{minutes} min"] if minutes else []
    parts += [f"{secs} s"] if secs else []
    return " ".join(parts) or "0 s"


def parse_duration(text: str) -> int:
    """``30m``, ``1h``, ``2h``, ``1d`` → seconds; ValueError saying the form otherwise."""
    match = _DURATION.fullmatch(str(text).strip())
    if match is None:
        raise ValueError(f"{str(text)[:40]!r} is not a duration: write e.g. 30m, 1h or 8h")
    seconds = int(match[1]) * _UNITS[match[2]]
    if seconds > MAX_GRANT_S:
        raise ValueError(f"{text!r} is longer than a grant may last (24h)")
    return seconds


def parse_policies(raw: Any, where: str) -> Policies:
    """An agent's ``consent`` mapping; ConfigError naming ``where`` and the key otherwise."""
    if raw is None:
        return Policies()
    if not isinstance(raw, Mapping):
        raise ConfigError(
            f"{where}: expected a mapping of change kinds to ask, auto or deny "
            "(e.g. shopping.add_to_list: auto)"
        )
    rules = []
    for key, value in raw.items():
        pattern = str(key)
        at = f"{where}.{pattern}"
        if not _PATTERN.fullmatch(pattern):
            raise ConfigError(
                f"{at}: a change kind is <server>.<kind>, <server>.* or * "
                "(e.g. shopping.add_to_list, calendar.*)"
            )
        policy, grant = (value, None) if not isinstance(value, Mapping) else _long_form(value, at)
        if policy not in POLICIES:
            raise ConfigError(f"{at}: {str(policy)[:40]!r} is not a policy: use ask, auto or deny")
        grant_s = None
        if grant is not None:
            if policy != "ask":
                raise ConfigError(f"{at}: grant goes with policy ask only (a tap gives it)")
            try:
                grant_s = parse_duration(grant)
            except ValueError as error:
                raise ConfigError(f"{at}.grant: {error}") from None
        rules.append(Rule(pattern, policy, grant_s))
    return Policies(tuple(rules))


def _long_form(value: Mapping[str, Any], at: str) -> tuple[Any, Any]:
    unknown = set(value) - {"policy", "grant"}
    if unknown:
        raise ConfigError(f"{at}: unknown key {sorted(unknown)[0]!r}; use policy and grant")
    return value.get("policy", "ask"), value.get("grant")


def agent_policies(path: Path, environ: Mapping[str, str] | None = None) -> dict[str, Policies]:
    """Each agent's policies from the fleet file (every agent, those without ``consent`` ask
    for everything); ConfigError naming the file and key when one cannot be read."""
    raw = load_yaml(path, environ)
    agents = raw.get("agents")
    if not isinstance(agents, dict) or not agents:
        raise ConfigError(f"{path}: agents: expected at least one agent")
    return {
        str(agent): parse_policies((body or {}).get("consent"), f"{path}: agents.{agent}.consent")
        for agent, body in agents.items()
    }
