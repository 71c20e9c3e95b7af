"""The bots to poll: one per agent of the fleet file, its token from the environment.

Only ``bot_token_env`` is read here (the orchestrator validates the rest of the
file): a name or a list of names of environment variables; the first name that gives a
token holds the agent's. A name gives, in this order: the variable itself; the file its
``<name>_FILE`` variable names; its line in the bot tokens file
(``TELEGRAM_BOT_TOKENS_FILE``: ``<name> <token>`` lines, what ``make up`` writes from every
``*_BOT_TOKEN`` of .env and compose mounts, so a new agent needs no compose.yaml edit).
The orchestrator never needs the tokens.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import SecretStr

from mcp_telegram_io.settings import TelegramIOSettings
from meshkit.secret_files import name_token_lines
from meshkit.settings import environment, secret_value
from meshkit.yaml_config import ConfigError, load_yaml

_TOKEN = re.compile(r"^(\d+):[A-Za-z0-9_-]+$")
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class BotConfig:
    agent: str
    bot_id: str  # the number before ':' in the token: Telegram's id of the bot
    token: SecretStr = field(repr=False)


def bot_tokens(settings: TelegramIOSettings) -> list[SecretStr]:
    """Every bot token of the fleet (to redact from logs)."""
    return [bot.token for bot in fleet_bots(settings).values()]


def fleet_bots(settings: TelegramIOSettings) -> dict[str, BotConfig]:
    """The bots of ``settings``' fleet file, from the process environment and the bot
    tokens file."""
    return load_bots(settings.agents, tokens_file=settings.bot_tokens_file)


def read_tokens_file(path: Path) -> dict[str, str]:
    """``<variable> <token>`` lines (``#`` comments and blank lines skipped) → variable →
    token. ConfigError names the file and the line, never what the line holds."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) else "not UTF-8 text"
        raise ConfigError(
            f"TELEGRAM_BOT_TOKENS_FILE: cannot read {path} ({reason}); make up writes it "
            "from .env (clawmesh secrets)"
        ) from None
    found: dict[str, str] = {}
    for number, parts in name_token_lines(text):
        if len(parts) != 2 or not _VARIABLE.fullmatch(parts[0]) or parts[0] in found:
            raise ConfigError(
                f"TELEGRAM_BOT_TOKENS_FILE: {path}, line {number}: expected one "
                "'<VARIABLE> <token>' line per variable; make up writes this file from .env"
            )
        found[parts[0]] = parts[1]
    return found


def _token(names: list[str], environ: Mapping[str, str], listed: Mapping[str, str]) -> str | None:
    """The first of ``names`` that gives a token: its variable, its ``_FILE``, its line."""
    for name in names:
        token = secret_value(name, environ) or listed.get(name)
        if token:
            return token
    return None


def load_bots(
    path: Path, environ: Mapping[str, str] | None = None, *, tokens_file: Path | None = None
) -> dict[str, BotConfig]:
    """Agent id → bot. Agents without a token set are left out (and logged by the caller).

    The tokens are read from the variables the fleet file names, in ``environ``
    (default: the process environment), or from ``tokens_file`` (see the module's
    docstring for the order)."""
    environ = environment() if environ is None else environ
    listed = read_tokens_file(tokens_file) if tokens_file is not None else {}
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
            token = _token(names, environ, listed)
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
