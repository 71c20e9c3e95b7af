"""Settings come from the environment and fail fast with a message naming the variable."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from meshkit.settings import CONFIG_ERROR_EXIT, ServeSettings, load_settings, secret_value


class NeedsKey(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="DEMO_")

    api_key: SecretStr
    retries: int = 3


def test_serve_settings_read_the_documented_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MESH_TOKEN_SHA256", "AB" * 32)
    monkeypatch.setenv("MCP_PORT", "8123")
    monkeypatch.setenv("MCP_HOST", "0.0.0.0")
    monkeypatch.setenv("MESH_ALLOWED_HOSTS", " Pi.local, weather ,,")
    monkeypatch.setenv("DATA_DIR", "/data")
    monkeypatch.setenv("LOG_LEVEL", "debug")
    settings = load_settings(ServeSettings)
    assert settings.orchestrator == "ab" * 32
    assert settings.port == 8123
    assert settings.host == "0.0.0.0"
    assert settings.allowed_hosts == ["pi.local", "weather"]
    assert settings.data_dir == Path("/data")
    assert settings.log_level == "DEBUG"


def test_defaults_bind_loopback_without_a_token(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MESH_TOKEN_SHA256", "MESH_TOKEN_SHA256_FILE", "MCP_PORT", "MCP_HOST"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("MESH_ALLOWED_HOSTS", raising=False)
    settings = load_settings(ServeSettings)
    assert settings.orchestrator is None
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
    monkeypatch.setenv("DEMO_API_KEY", "very-secret-token")
    assert "very-secret-token" not in repr(load_settings(NeedsKey))


def test_a_variable_set_to_nothing_is_unset_never_an_empty_token(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MESH_TOKEN_SHA256", "")  # as an .env may have it
    settings = ServeSettings()
    assert settings.orchestrator is None


def test_a_server_has_no_setting_that_holds_a_token(monkeypatch: pytest.MonkeyPatch) -> None:
    # A shared .env (or environment) holding the orchestrator's token gives a server nothing
    # to call another server with: the digest of its own credential is all it can hold.
    monkeypatch.setenv("MESH_TOKEN", "the-orchestrators-token-0123456789")
    monkeypatch.delenv("MESH_TOKEN_SHA256", raising=False)
    monkeypatch.delenv("MESH_TOKEN_SHA256_FILE", raising=False)
    settings = ServeSettings()
    assert "the-orchestrators-token" not in repr(settings.model_dump())
    assert settings.orchestrator is None
    assert not any("SecretStr" in str(f.annotation) for f in ServeSettings.model_fields.values())


def test_a_secret_is_read_from_the_file_its_file_variable_names(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    digest_file = tmp_path / "mesh_token_sha256"
    digest_file.write_text(f"{'cd' * 32}\n")
    monkeypatch.delenv("MESH_TOKEN_SHA256", raising=False)
    monkeypatch.setenv("MESH_TOKEN_SHA256_FILE", str(digest_file))
    assert ServeSettings().orchestrator == "cd" * 32


def test_an_unreadable_secret_file_exits_2_naming_the_variable_and_the_file(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setenv("MESH_TOKEN_SHA256_FILE", str(tmp_path / "missing"))
    with pytest.raises(SystemExit) as stop:
        load_settings(ServeSettings)
    assert stop.value.code == CONFIG_ERROR_EXIT
    assert capsys.readouterr().err.splitlines() == [
        f"configuration error: MESH_TOKEN_SHA256_FILE is invalid: cannot read the file "
        f"{tmp_path / 'missing'} (No such file or directory); point it at the secret's file "
        "(make up writes them under secrets/)"
    ]


def test_a_bot_token_comes_from_its_variable_else_from_its_file(tmp_path: Path) -> None:
    token_file = tmp_path / "clawdia_bot_token"
    token_file.write_text("1:from-the-file\n")
    empty = tmp_path / "empty"
    empty.write_text("")
    assert secret_value("T", {"T": "1:plain", "T_FILE": str(token_file)}) == "1:plain"
    assert secret_value("T", {"T_FILE": str(token_file)}) == "1:from-the-file"
    assert secret_value("T", {"T_FILE": str(empty)}) is None  # as make up writes an unset one
    assert secret_value("T", {}) is None
    with pytest.raises(ValueError, match="T_FILE: cannot read the file"):
        secret_value("T", {"T_FILE": str(tmp_path / "missing")})
