"""Settings come from the environment and fail fast with a message naming the variable."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from meshkit.settings import CONFIG_ERROR_EXIT, ServeSettings, load_settings


class NeedsKey(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="DEMO_")

    api_key: SecretStr
    retries: int = 3


def test_serve_settings_read_the_documented_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MESH_TOKEN", "tok")
    monkeypatch.setenv("MCP_PORT", "8123")
    monkeypatch.setenv("MCP_HOST", "0.0.0.0")
    monkeypatch.setenv("MESH_ALLOWED_HOSTS", " Pi.local, weather ,,")
    monkeypatch.setenv("DATA_DIR", "/data")
    monkeypatch.setenv("LOG_LEVEL", "debug")
    settings = load_settings(ServeSettings)
    assert settings.token == SecretStr("tok")
    assert settings.port == 8123
    assert settings.host == "0.0.0.0"
    assert settings.allowed_hosts == ["pi.local", "weather"]
    assert settings.data_dir == Path("/data")
    assert settings.log_level == "DEBUG"


def test_defaults_bind_loopback_without_a_token(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MESH_TOKEN", "MCP_PORT", "MCP_HOST", "MESH_ALLOWED_HOSTS"):
        monkeypatch.delenv(name, raising=False)
    settings = load_settings(ServeSettings)
    assert settings.token is None
    assert settings.host == "127.0.0.1"
    assert settings.port is None


def test_a_bad_value_exits_2_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MCP_PORT", "eighty")
    with pytest.raises(SystemExit) as stop:
        load_settings(ServeSettings)
    assert stop.value.code == CONFIG_ERROR_EXIT
    assert "MCP_PORT is invalid" in capsys.readouterr().err


def test_a_missing_secret_says_which_variable_to_set(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("DEMO_API_KEY", raising=False)
    with pytest.raises(SystemExit):
        load_settings(NeedsKey)
    assert "DEMO_API_KEY is not set: export DEMO_API_KEY=" in capsys.readouterr().err


def test_an_invalid_value_is_never_echoed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DEMO_API_KEY", "k")
    monkeypatch.setenv("DEMO_RETRIES", "sk-secret-looking-value")
    with pytest.raises(SystemExit):
        load_settings(NeedsKey)
    err = capsys.readouterr().err
    assert "DEMO_RETRIES is invalid" in err
    assert "sk-secret-looking-value" not in err


def test_secrets_are_hidden_in_repr(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MESH_TOKEN", "very-secret-token")
    assert "very-secret-token" not in repr(load_settings(ServeSettings))


def test_a_variable_set_to_nothing_is_unset_never_an_empty_token(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MESH_TOKEN", "")  # as .env.example has it
    settings = ServeSettings()
    assert settings.token is None
