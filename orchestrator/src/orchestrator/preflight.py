"""Every configuration mistake at once, before anything starts.

A first run with a fresh clone can have several things to fix (no LLM, no bot token,
no user id, a typo in a value): they are all found and named in one run, each with its
fix, instead of one per attempt.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import ValidationError

from meshkit.settings import describe_error, secret_value
from meshkit.yaml_config import ConfigError
from orchestrator.config.fleet import Agent, load_fleet
from orchestrator.config.registry import ServerEntry, load_registry
from orchestrator.settings import NO_LLM_HELP, OrchestratorSettings

Mode = Literal["telegram", "chat"]
NO_BOT_HELP = (
    "{agents}: no agent has a bot token. Create a bot with @BotFather, then export the "
    "variable its bot_token_env names, e.g. export {name}=123456:ABC..."
)


def check(
    mode: Mode, agent: str | None, environ: Mapping[str, str]
) -> tuple[OrchestratorSettings | None, list[str]]:
    """The settings (None when they do not load) and every mistake found, each with its fix."""
    try:
        settings = OrchestratorSettings()
    except ValidationError as error:
        return None, describe_error(OrchestratorSettings, error).splitlines()
    problems = [*_llm(settings)] if settings.llm_configured else [NO_LLM_HELP]
    try:
        registry = load_registry(settings.registry, environ)
        fleet = load_fleet(settings.agents, registry, environ, root=settings.root)
    except ConfigError as error:
        return settings, [*problems, str(error)]
    if mode == "chat":
        problems += _chat(settings, fleet, agent)
    else:
        problems += _telegram(settings, registry, fleet, environ)
    return settings, problems


def _chat(settings: OrchestratorSettings, fleet: dict[str, Agent], agent: str | None) -> list[str]:
    if agent is None or agent in fleet:
        return []
    return [f"{settings.agents}: agents: no agent {agent!r}; choose one of {sorted(fleet)}"]


def _telegram(
    settings: OrchestratorSettings,
    registry: dict[str, ServerEntry],
    fleet: dict[str, Agent],
    environ: Mapping[str, str],
) -> list[str]:
    problems = []
    io = next((entry for entry in registry.values() if entry.role == "telegram-io"), None)
    if io is None:
        problems.append(
            f"{settings.registry}: servers: no server with 'role: telegram-io'; add it (see the "
            "shipped config/mcp_servers.yaml), or use `python -m orchestrator chat` for the console"
        )
    for agent in fleet.values():
        key = f"{settings.agents}: agents.{agent.id}.allowed_user_ids"
        ids = agent.entry.allowed_user_ids
        if not ids:
            problems.append(
                f"{key}: empty, so nobody may talk to this agent; set your numeric Telegram "
                "user id (TELEGRAM_USER_ID; @userinfobot tells it)"
            )
        problems += [
            f"{key}: {user!r} is not a Telegram user id, which is a positive number "
            "(TELEGRAM_USER_ID; @userinfobot tells yours)"
            for user in ids
            if not is_user_id(user)
        ]
    # The tokens are checked here only when telegram-io runs in this process (make run):
    # in the mesh the orchestrator never holds them.
    if io is not None and io.module is not None:
        names = [name for agent in fleet.values() for name in agent.entry.bot_token_env]
        if not any(_is_set(name, environ) for name in names):
            first = names[0] if names else "TELEGRAM_BOT_TOKEN"
            problems.append(NO_BOT_HELP.format(agents=settings.agents, name=first))
    return problems


def is_user_id(text: str) -> bool:
    """Whether ``text`` is a Telegram user id: a positive number (groups and channels have
    negative ids, and only private chats are answered)."""
    return text.isascii() and text.isdigit() and int(text) > 0


def _llm(settings: OrchestratorSettings) -> list[str]:
    """The LLM's values, where their shape is known: an OpenAI key (no OPENAI_BASE_URL)
    starts with ``sk-``; a base URL is an http(s) address."""
    url = settings.openai_base_url
    if url:
        if not url.startswith(("http://", "https://")):
            return [
                f"OPENAI_BASE_URL={url!r} is not an address: give the server's URL, e.g. "
                "http://localhost:11434/v1"
            ]
        return []
    key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
    if key is not None and (not key.startswith("sk-") or any(c.isspace() for c in key)):
        return [
            "OPENAI_API_KEY does not look like an OpenAI API key (sk-..., one word): copy it "
            "again from https://platform.openai.com/api-keys, or set OPENAI_BASE_URL for "
            "another OpenAI-compatible server"
        ]
    return []


def _is_set(name: str, environ: Mapping[str, str]) -> bool:
    """Whether the variable, or the file its ``<name>_FILE`` names, holds a value (a file
    that cannot be read is named when telegram-io starts)."""
    try:
        return secret_value(name, environ) is not None
    except ValueError:
        return True
