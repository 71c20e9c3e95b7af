"""``clawmesh secrets`` (make up): the secret files of the containers, made
once, copied from .env where they are the user's, never printed."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key, load_pem_public_key

from fakes.checkout import shipped
from meshkit.credentials import token_digest
from meshkit.secret_files import (
    BOT_TOKENS,
    CAPABILITY_ENV_PREFIX,
    CREDENTIALS,
    DIGEST_PREFIX,
    PUBLIC_KEY,
    RELAY_PREFIX,
    SIGNING_KEY,
    make_secrets,
    read_credentials,
    relay_servers,
)

ROOT = Path(__file__).resolve().parents[2]
# The shipped registry (git's copy: a person's capabilities.yaml beside the checkout's never
# counts), copied once for the module.
SHIPPED = shipped(Path(tempfile.mkdtemp(prefix="clawmesh-shipped-")), "config")
REGISTRY = SHIPPED / "config" / "mcp_servers.yaml"
SERVERS = {"weather", "calendar", "shopping", "scheduler", "memory", "pending-actions"}
ENV = {"OPENAI_API_KEY": "sk-from-dotenv-0123456789", "TELEGRAM_BOT_TOKEN": "1:bot-0123456789"}


def test_every_server_gets_its_own_credential_and_holds_only_its_digest(tmp_path: Path) -> None:
    make_secrets(tmp_path / "secrets", REGISTRY, ENV)
    credentials = read_credentials(tmp_path / "secrets" / CREDENTIALS)
    assert set(credentials) == SERVERS | {"telegram-io"}
    assert len(set(credentials.values())) == len(credentials)  # no token opens two servers
    for server, token in credentials.items():
        digest = (tmp_path / "secrets" / f"{DIGEST_PREFIX}{server}").read_text().strip()
        assert digest == token_digest(token)


def test_a_second_run_keeps_what_exists_and_makes_only_what_is_missing(tmp_path: Path) -> None:
    secrets = tmp_path / "secrets"
    first = make_secrets(secrets, REGISTRY, ENV)
    assert CREDENTIALS in first
    before = read_credentials(secrets / CREDENTIALS)
    signing = (secrets / SIGNING_KEY).read_bytes()
    assert make_secrets(secrets, REGISTRY, ENV) == []  # nothing changed, nothing written
    registry = tmp_path / "servers.yaml"
    registry.write_text(REGISTRY.read_text() + "  notes: {url: 'http://notes:1/mcp', auth: mesh}\n")
    (secrets / PUBLIC_KEY).unlink()
    changed = make_secrets(secrets, registry, {**ENV, "OPENAI_API_KEY": "sk-a-new-key-98765"})
    after = read_credentials(secrets / CREDENTIALS)
    assert {k: v for k, v in after.items() if k != "notes"} == before
    assert "notes" in after
    assert sorted(changed) == sorted(
        [CREDENTIALS, f"{DIGEST_PREFIX}notes", PUBLIC_KEY, "openai_api_key"]
    )
    assert (secrets / SIGNING_KEY).read_bytes() == signing
    assert (secrets / "openai_api_key").read_text().strip() == "sk-a-new-key-98765"


def test_the_approval_keys_are_an_ed25519_pair(tmp_path: Path) -> None:
    make_secrets(tmp_path, REGISTRY, ENV)
    private = load_pem_private_key((tmp_path / SIGNING_KEY).read_bytes(), password=None)
    public = load_pem_public_key((tmp_path / PUBLIC_KEY).read_bytes())
    assert isinstance(private, Ed25519PrivateKey)
    assert isinstance(public, Ed25519PublicKey)
    public.verify(private.sign(b"approval"), b"approval")  # raises when not a pair


def test_the_directory_is_the_owners_alone_and_a_user_secret_unset_is_an_empty_file(
    tmp_path: Path,
) -> None:
    secrets = tmp_path / "secrets"
    make_secrets(secrets, REGISTRY, ENV)
    assert secrets.stat().st_mode & 0o777 == 0o700
    # 0644: compose bind-mounts them as they are, for user 10001 (see compose.yaml).
    assert {f.stat().st_mode & 0o777 for f in secrets.iterdir()} == {0o644}
    assert (secrets / "openai_api_key").read_text() == "sk-from-dotenv-0123456789\n"
    assert not (secrets / "clawdia_bot_token").exists()  # the bot tokens are in one file
    make_secrets(secrets, REGISTRY, {"TELEGRAM_BOT_TOKEN": "1:bot-0123456789"})
    assert (secrets / "openai_api_key").read_bytes() == b""


def bot_token_lines(secrets: Path) -> list[str]:
    text = (secrets / BOT_TOKENS).read_text()
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def test_every_bot_token_set_is_one_line_of_one_file_rewritten_when_one_changes(
    tmp_path: Path,
) -> None:
    secrets = tmp_path / "secrets"
    env = {
        **ENV,
        "CLAWDIA_BOT_TOKEN": "",  # set to nothing: unset, no line
        "BOB_BOT_TOKEN": " 3:bob-0123456789 ",
        "BOB_BOT_TOKEN_FILE": "/elsewhere",  # not a token
        "TELEGRAM_USER_ID": "42",
    }
    assert BOT_TOKENS in make_secrets(secrets, REGISTRY, env)
    assert bot_token_lines(secrets) == [
        "BOB_BOT_TOKEN 3:bob-0123456789",
        "TELEGRAM_BOT_TOKEN 1:bot-0123456789",
    ]
    assert (secrets / BOT_TOKENS).stat().st_mode & 0o777 == 0o644  # inside the 0700 directory
    assert make_secrets(secrets, REGISTRY, env) == []  # the same tokens: nothing to recreate
    changed = make_secrets(secrets, REGISTRY, {**env, "CAROL_BOT_TOKEN": "4:carol-012345678"})
    assert changed == [BOT_TOKENS]  # a new agent's token: make up recreates the containers
    assert "CAROL_BOT_TOKEN 4:carol-012345678" in bot_token_lines(secrets)
    assert make_secrets(secrets, REGISTRY, ENV) == [BOT_TOKENS]
    assert bot_token_lines(secrets) == ["TELEGRAM_BOT_TOKEN 1:bot-0123456789"]
    make_secrets(secrets, REGISTRY, {})
    assert bot_token_lines(secrets) == []  # still there: compose mounts it


def test_a_bot_token_with_a_space_is_refused_naming_the_variable_only(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="BOB_BOT_TOKEN") as caught:
        make_secrets(tmp_path, REGISTRY, {"BOB_BOT_TOKEN": "3:bob 0123456789"})
    assert "0123456789" not in str(caught.value)


def test_the_command_prints_file_names_and_never_a_secret(tmp_path: Path) -> None:
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("CLAWMESH_SECRETS", *ENV)},
        **ENV,
        "CLAWMESH_SECRETS": str(tmp_path / "secrets"),
    }
    done = subprocess.run(
        [Path(sys.executable).with_name("clawmesh"), "secrets"],
        cwd=shipped(tmp_path / "project"),  # the shipped registry, no .env
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    printed = done.stdout + done.stderr
    assert CREDENTIALS in done.stdout.splitlines()
    for value in [*ENV.values(), *read_credentials(tmp_path / "secrets" / CREDENTIALS).values()]:
        assert value not in printed


CAPABILITIES = """servers:
  git:
    package: mcp-server-git==2026.10.19
    env: {GIT_AUTHOR_NAME: "${GIT_NAME}", GITHUB_TOKEN: "${GITHUB_TOKEN:-}"}
"""


def test_a_capability_gets_a_credential_a_relay_token_and_its_variables_in_its_own_file(
    tmp_path: Path,
) -> None:
    config = shipped(tmp_path / "project", "config") / "config"
    (config / "capabilities.yaml").write_text(CAPABILITIES)
    secrets = tmp_path / "secrets"
    env = {**ENV, "GIT_NAME": "Me", "GITHUB_TOKEN": "ghp-0123456789"}
    make_secrets(secrets, config / "mcp_servers.yaml", env)
    assert "git" in read_credentials(secrets / CREDENTIALS)
    assert (secrets / f"{DIGEST_PREFIX}git").is_file()
    # Which servers stage proposals is the registry's word: those that propose, capabilities.
    relaying = relay_servers(config / "mcp_servers.yaml", env)
    assert relaying == ["calendar", "git", "memory", "scheduler", "shopping"]
    assert all((secrets / f"{RELAY_PREFIX}{server}").is_file() for server in relaying)
    assert not (secrets / f"{RELAY_PREFIX}weather").exists()
    written = (secrets / f"{CAPABILITY_ENV_PREFIX}git").read_text().splitlines()[1:]
    assert written == ["GITHUB_TOKEN=ghp-0123456789", "GIT_AUTHOR_NAME=Me"]
