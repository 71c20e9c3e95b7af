"""The bots to poll: one per agent of the fleet file, its token from the environment.

Only ``bot_token_env`` is read here (the orchestrator validates the rest of the
file): a name or a list of names of environment variables; the first that is set
holds the agent's bot token, or the file its ``<name>_FILE`` variable names does (what
containers get: compose secrets). The orchestrator never needs the tokens.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import SecretStr

from mcp_telegram_io.settings import TelegramIOSettings
from meshkit.settings import environment, secret_value
from meshkit.yaml_config import ConfigError, load_yaml

_TOKEN = re.compile(r"^(\d+):[A-Za-z0-9_-]+$")


@dataclass(frozen=True)
class BotConfig:
    agent: str
    bot_id: str  # the number before ':' in the token: Telegram's id of the bot
    token: SecretStr = field(repr=False)


def bot_tokens(settings: TelegramIOSettings) -> list[SecretStr]:
    """Every bot token of the fleet (to redact from logs)."""
    return [bot.token for bot in load_bots(settings.agents).values()]


def load_bots(path: Path, environ: Mapping[str, str] | None = None) -> dict[str, BotConfig]:
    """Agent id → bot. Agents without a token set are left out (and logged by the caller).

    The tokens are read from the variables the fleet file names, in ``environ``
    (default: the process environment)."""
    environ = environment() if environ is None else environ
    raw = load_yaml(path, environ)
    agents = raw.get("agents")
    if not isinstance(agents, dict) or not agents:
        raise ConfigError(f"{path}: agents: expected at least one agent")
    bots: dict[str, BotConfig] = {}
    owners: dict[str, str] = {}
    for agent_id, body in agents.items():
        key = f"agents.{agent_id}.bot_token_env"
        names = (body or {}).get("bot_token_env", [])
        names = [names] if isinstance(names, str) else names
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ConfigError(f"{path}: {key}: expected a variable name or a list of names")
        try:
            token = next((t for t in (secret_value(n, environ) for n in names) if t), None)
        except ValueError as error:
            raise ConfigError(f"{path}: {key}: {error}") from None
        if token is None:
            continue
        match = _TOKEN.match(token)
        if match is None:
            raise ConfigError(
                f"{path}: {key}: the token in {' / '.join(names)} is not shaped like a bot "
                "token ('123456:ABC...'); copy it again from @BotFather"
            )
        bot_id = match[1]
        if bot_id in owners:
            raise ConfigError(
                f"{path}: {key}: agents {owners[bot_id]!r} and {agent_id!r} use the same bot; "
                "give each agent its own bot (one poller per token)"
            )
        owners[bot_id] = str(agent_id)
        bots[str(agent_id)] = BotConfig(str(agent_id), bot_id, SecretStr(token))
    return bots
