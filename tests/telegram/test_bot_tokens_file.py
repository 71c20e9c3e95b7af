"""The bot tokens file (``TELEGRAM_BOT_TOKENS_FILE``, make up's ``secrets/bot_tokens``): how
telegram-io in a container finds the token of an agent added with ``clawmesh agent init``,
without a compose.yaml edit. Written by the real ``make_secrets``, read through the real
settings and fleet loading."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcp_telegram_io.fleet import bot_tokens, fleet_bots
from mcp_telegram_io.settings import TelegramIOSettings
from meshkit.secret_files import BOT_TOKENS, make_secrets
from meshkit.yaml_config import ConfigError

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = ROOT / "config" / "mcp_servers.yaml"
FLEET = """agents:
  clawdia: {bot_token_env: [CLAWDIA_BOT_TOKEN, TELEGRAM_BOT_TOKEN]}
  bob: {bot_token_env: BOB_BOT_TOKEN}
  carol: {bot_token_env: CAROL_BOT_TOKEN}
  dave: {bot_token_env: DAVE_BOT_TOKEN}
  erin: {bot_token_env: ERIN_BOT_TOKEN}
"""
DOTENV = {  # what make up copies from .env
    "TELEGRAM_BOT_TOKEN": "111:from-the-file",
    "BOB_BOT_TOKEN": "222:from-the-file",
    "CAROL_BOT_TOKEN": "333:from-the-file",
    "DAVE_BOT_TOKEN": "444:from-the-file",
}


@pytest.fixture
def container(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """telegram-io's environment as compose gives it: the fleet file and the tokens file,
    no token variable. Returns the secrets directory."""
    for name in list(os.environ):
        if "BOT_TOKEN" in name or name.startswith("TELEGRAM_"):
            monkeypatch.delenv(name)
    agents = tmp_path / "agents.yaml"
    agents.write_text(FLEET)
    secrets = tmp_path / "secrets"
    make_secrets(secrets, REGISTRY, DOTENV)
    monkeypatch.setenv("CLAWMESH_AGENTS", str(agents))
    monkeypatch.setenv("TELEGRAM_BOT_TOKENS_FILE", str(secrets / BOT_TOKENS))
    monkeypatch.setenv("DATA_DIR", str(tmp_path / "data"))
    return secrets


def tokens(settings: TelegramIOSettings) -> dict[str, str]:
    return {a: b.token.get_secret_value() for a, b in fleet_bots(settings).items()}


def test_a_new_agent_finds_its_token_in_the_file_and_one_without_a_line_has_no_bot(
    container: Path,
) -> None:
    assert tokens(TelegramIOSettings()) == {
        "clawdia": "111:from-the-file",  # CLAWDIA_BOT_TOKEN nowhere: the next name
        "bob": "222:from-the-file",
        "carol": "333:from-the-file",
        "dave": "444:from-the-file",
    }  # erin: no line, no variable: left out, as an unset variable is


def test_the_variable_wins_then_its_file_then_the_tokens_file(
    container: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    own = tmp_path / "dave_token"
    own.write_text("444:from-its-own-file\n")
    monkeypatch.setenv("CAROL_BOT_TOKEN", "333:from-the-variable")
    monkeypatch.setenv("DAVE_BOT_TOKEN_FILE", str(own))
    monkeypatch.setenv("ERIN_BOT_TOKEN_FILE", str(own.with_name("empty")))
    own.with_name("empty").write_text("")  # empty: unset, and erin has no line either
    found = tokens(TelegramIOSettings())
    assert found["carol"] == "333:from-the-variable"
    assert found["dave"] == "444:from-its-own-file"
    assert found["bob"] == "222:from-the-file"
    assert "erin" not in found
    # The redaction list of the logs holds what the fleet uses, the file's tokens included.
    assert {t.get_secret_value() for t in bot_tokens(TelegramIOSettings())} == set(found.values())


def test_without_the_tokens_file_variable_the_file_is_not_read(
    container: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TELEGRAM_BOT_TOKENS_FILE")
    monkeypatch.setenv("BOB_BOT_TOKEN", "222:from-the-variable")
    assert tokens(TelegramIOSettings()) == {"bob": "222:from-the-variable"}  # make run


def test_a_damaged_or_missing_tokens_file_names_the_file_and_line_never_a_token(
    container: Path,
) -> None:
    file = container / BOT_TOKENS
    file.write_text("# comment\nBOB_BOT_TOKEN 222:secret-part\nCAROL_BOT_TOKEN 333:a b\n")
    with pytest.raises(ConfigError, match=r"TELEGRAM_BOT_TOKENS_FILE: .*line 3") as caught:
        fleet_bots(TelegramIOSettings())
    assert "secret-part" not in str(caught.value)
    assert "333:a" not in str(caught.value)
    file.unlink()
    with pytest.raises(ConfigError, match=r"TELEGRAM_BOT_TOKENS_FILE: cannot read .*make up"):
        fleet_bots(TelegramIOSettings())


def test_a_token_from_the_file_is_checked_as_any_token(container: Path) -> None:
    make_secrets(container, REGISTRY, {**DOTENV, "BOB_BOT_TOKEN": "not-a-token"})
    with pytest.raises(ConfigError, match=r"agents\.bob\.bot_token_env: .*@BotFather") as caught:
        fleet_bots(TelegramIOSettings())
    assert "not-a-token" not in str(caught.value)
