"""The secret files of the mesh in containers, one per secret: made once by ``make up``.

    clawmesh secrets [--dir DIR] [--registry config/mcp_servers.yaml]   (orchestrator/cli/keys.py)

compose.yaml mounts each file into the one service that needs it (``secrets:``, under
``/run/secrets``), and the service reads it through a ``*_FILE`` variable: no secret is in a
container's environment or in ``docker compose config``. ``DIR`` (default
``$CLAWMESH_SECRETS``, else ``secrets``) holds:

==============================  ======================================  =====================
file                            what                                    read by
==============================  ======================================  =====================
``mesh_credentials``            the orchestrator's credentials, one     orchestrator
                                per server: ``<server> <token>`` lines
``mesh_token_sha256.<server>``  the SHA-256 of that server's line       that server
``approval_signing_key.pem``    Ed25519 private key (PKCS8)             pending-actions
``approval_public_key.pem``     its public key                          the confirm servers
``relay_token.<server>``        that server's token for pending-actions that server
                                (it stages its bound clients' proposals)
``capability_env.<name>``       a capability's variables (its entry's   its gateway
                                ``env:``), ``NAME=value`` lines
``mesh_peers``                  their SHA-256s, ``<server>:sha256:<hex>`` pending-actions
                                lines (``MESH_PEERS_FILE``)
``openai_api_key``              the user's own LLM key (from .env)      orchestrator
``bot_tokens``                  every ``*_BOT_TOKEN`` set in .env, one  telegram-io
                                ``<NAME> <token>`` line each
==============================  ======================================  =====================

One file holds every bot token, so a new agent's bot (``clawmesh agent init``: its
``<AGENT>_BOT_TOKEN`` in .env) reaches telegram-io's container with ``make up`` alone, no
compose.yaml edit; telegram-io looks a name of agents.yaml's ``bot_token_env`` up in it
(``TELEGRAM_BOT_TOKENS_FILE``) when neither the variable nor its ``<NAME>_FILE`` is set.

Relay tokens go to the servers that may propose (``proposes: true`` in the registry, and
every capability of ``capabilities.yaml`` beside it), when the registry has pending-actions
too: which servers stage proposals is the registry's word, not a list here. A capability
(its gateway's container) gets a credential like any ``auth: mesh`` server.

Generated secrets are made only where missing: a server new in the registry (``auth: mesh``)
gets a credential, the others keep theirs; the digests follow the credentials. The user's
own are written from .env (or the environment) every time, empty when unset. It prints the
names of the files it changed, one a line (never a value), so ``make up`` knows to recreate
the containers: compose does not notice a secret file's new content by itself.

Modes: the directory is 0700, so only its owner reaches the files. The files themselves are
0644, because compose (without swarm) bind-mounts a file secret as it is on the host, owner
and mode included (its ``uid``/``gid``/``mode`` are ignored: docker/compose#9648), and the
services run as user 10001, who must read the ones mounted into it.
"""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from meshkit.approval_keys import public_pem, read_signing_key, signing_pem
from meshkit.credentials import PeerCredential, token_digest
from meshkit.yaml_config import ConfigError, load_yaml

CREDENTIALS = "mesh_credentials"
DIGEST_PREFIX = "mesh_token_sha256."
SIGNING_KEY = "approval_signing_key.pem"
PUBLIC_KEY = "approval_public_key.pem"
RELAY_PREFIX = "relay_token."
PEERS = "mesh_peers"
PENDING_ACTIONS = "pending-actions"
CAPABILITIES = "capabilities.yaml"  # beside the registry: the published servers
CAPABILITY_ENV_PREFIX = "capability_env."
# The user's own secret with a file of its own; the bot tokens share BOT_TOKENS.
USER_SECRETS = ("OPENAI_API_KEY",)
BOT_TOKENS = "bot_tokens"
_BOT_VARIABLE = re.compile(r"[A-Z][A-Z0-9_]*_BOT_TOKEN")
DIR_MODE = 0o700
FILE_MODE = 0o644  # see the module docstring: the directory is what keeps others out
_SERVER = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,29}")
_TOKEN = re.compile(r"[A-Za-z0-9_.~+/=-]{16,}")


class CredentialsFileError(ValueError):
    """A credentials file that cannot be used; the message names the file and line, never
    a token."""


def name_token_lines(text: str) -> Iterator[tuple[int, list[str]]]:
    """The ``<name> <token>`` lines of a secrets file, numbered from 1, each split on
    whitespace (``#`` comments and blank lines skipped); the caller checks the parts."""
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line and not line.startswith("#"):
            yield number, line.split()


def parse_credentials(text: str, path: Path) -> dict[str, str]:
    """``<server> <token>`` lines (``#`` comments and blank lines skipped) → server → token."""
    found: dict[str, str] = {}
    for number, parts in name_token_lines(text):
        where = f"{path}, line {number}"
        if len(parts) != 2 or not _SERVER.fullmatch(parts[0]) or not _TOKEN.fullmatch(parts[1]):
            raise CredentialsFileError(
                f"{where}: expected '<server> <token>' (a server name, a space, a token of at "
                "least 16 characters); make up writes this file (clawmesh secrets)"
            )
        server, token = parts
        if server in found:
            raise CredentialsFileError(f"{where}: {server!r} is listed twice; keep one line")
        found[server] = token
    tokens = list(found.values())
    if len(set(tokens)) != len(tokens):
        raise CredentialsFileError(
            f"{path}: two servers share a token; each server needs its own (delete the file "
            "and run make up to make new ones)"
        )
    return found


def read_credentials(path: Path) -> dict[str, str]:
    """The orchestrator's credentials file (``MESH_CREDENTIALS_FILE``); CredentialsFileError
    when it cannot be read or parsed."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) else "not UTF-8 text"
        raise CredentialsFileError(
            f"cannot read {path} ({reason}); make up writes it (clawmesh secrets)"
        ) from None
    return parse_credentials(text, path)


def render_credentials(credentials: Mapping[str, str]) -> str:
    lines = [f"{server} {token}" for server, token in sorted(credentials.items())]
    return "# The orchestrator's credential for each server (never shown to a server).\n" + (
        "\n".join(lines) + "\n"
    )


def mesh_servers(registry: Path, environ: Mapping[str, str]) -> list[str]:
    """The servers of the registry that the orchestrator calls with ``auth: mesh``, and the
    capabilities beside it (each reached at its gateway with a credential of its own)."""
    servers = _entries(registry, environ)
    found = {str(name) for name, body in servers.items() if body.get("auth") == "mesh"}
    return sorted(found | set(capabilities(registry, environ)))


def relay_servers(registry: Path, environ: Mapping[str, str]) -> list[str]:
    """The servers that may propose (``proposes: true``) and the capabilities: a bound
    client's proposal to one is staged with pending-actions by the server itself."""
    servers = _entries(registry, environ)
    found = {str(name) for name, body in servers.items() if body.get("proposes") is True}
    return sorted(found | set(capabilities(registry, environ)))


def capabilities(registry: Path, environ: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """The entries of ``capabilities.yaml`` beside the registry (none without the file)."""
    path = registry.parent / CAPABILITIES
    if not path.is_file():
        return {}
    servers = load_yaml(path, environ).get("servers") or {}
    if not isinstance(servers, dict):
        raise ConfigError(f"{path}: servers: expected a mapping of capability names")
    return {str(name): body for name, body in servers.items() if isinstance(body, dict)}


def _entries(registry: Path, environ: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    raw = load_yaml(registry, environ)
    servers = raw.get("servers")
    if not isinstance(servers, dict):
        raise ConfigError(f"{registry}: servers: expected a mapping of server names")
    return {str(name): body for name, body in servers.items() if isinstance(body, dict)}


def render_capability_env(name: str, body: Mapping[str, Any]) -> str:
    """A capability's ``env:`` as its gateway reads it (``GATEWAY_ENV_FILE``)."""
    env = body.get("env") or {}
    if not isinstance(env, dict):
        raise ValueError(f"capabilities.{name}.env: expected a mapping of NAME: value")
    lines = []
    for variable, value in sorted(env.items()):
        text = str(value)
        if "\n" in text or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(variable)):
            raise ValueError(f"capabilities.{name}.env.{variable}: one NAME and a one-line value")
        lines.append(f"{variable}={text}\n")
    header = f"# The variables of capability {name} (its entry's env:), for its gateway.\n"
    return header + "".join(lines)


def approval_key_pair(existing: Path) -> tuple[bytes, bytes]:
    """(private PEM, public PEM): the pair of the key in ``existing``, or a new one where there
    is none (in the formats ``meshkit.approval_keys`` reads)."""
    key = read_signing_key(existing) if existing.is_file() else Ed25519PrivateKey.generate()
    return signing_pem(key), public_pem(key.public_key())


class SecretDir:
    """The directory of secret files; ``changed`` lists what this run wrote."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.changed: list[str] = []
        path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        path.chmod(DIR_MODE)

    def read(self, name: str) -> bytes | None:
        file = self.path / name
        return file.read_bytes() if file.is_file() else None

    def write(self, name: str, content: bytes) -> None:
        """Write ``name`` when its content differs (through a temporary file and a rename,
        so a reader never sees half of it)."""
        file = self.path / name
        if file.is_file() and file.read_bytes() == content:
            if file.stat().st_mode & 0o777 != FILE_MODE:
                file.chmod(FILE_MODE)
            return
        temporary = self.path / f".{name}.new"
        temporary.unlink(missing_ok=True)
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
        with os.fdopen(descriptor, "wb") as out:
            out.write(content)
        temporary.chmod(FILE_MODE)  # whatever the umask took away
        temporary.replace(file)
        self.changed.append(name)


def write_relay_tokens(out: SecretDir, relaying: Sequence[str], *, pending: bool) -> None:
    """A relay token for each of ``relaying`` (kept when there), and ``mesh_peers``,
    pending-actions' list of their digests (empty without pending-actions: ``pending``)."""
    relaying = relaying if pending else []
    peers = []
    for server in relaying:
        name = f"{RELAY_PREFIX}{server}"
        old = (out.read(name) or b"").decode(errors="replace").strip()
        token = old if _TOKEN.fullmatch(old) else secrets.token_urlsafe(32)
        out.write(name, f"{token}\n".encode())
        peers.append(PeerCredential(server, token_digest(token)).entry())
    header = "# The servers that stage their clients' proposals: <server>:sha256:<token digest>\n"
    out.write(PEERS, (header + "".join(f"{peer}\n" for peer in peers)).encode())


def relay_token(directory: Path, server: str) -> str | None:
    """``server``'s relay token as ``make_secrets`` wrote it under ``directory`` (None: none)."""
    file = directory / f"{RELAY_PREFIX}{server}"
    if not file.is_file():
        return None
    return file.read_text(encoding="utf-8").strip() or None


def render_bot_tokens(environ: Mapping[str, str]) -> str:
    """``<NAME> <token>`` for every ``*_BOT_TOKEN`` variable set in ``environ`` (a value
    with a space in it is a ValueError that names the variable, not the value)."""
    lines = []
    for name in sorted(environ):
        value = environ[name].strip()
        if not _BOT_VARIABLE.fullmatch(name) or not value:
            continue
        if len(value.split()) != 1:
            raise ValueError(
                f"{name} holds more than one word; copy the token again from @BotFather"
            )
        lines.append(f"{name} {value}\n")
    header = "# The bot tokens of .env for telegram-io: <variable> <token> (make up writes it).\n"
    return header + "".join(lines)


def make_secrets(directory: Path, registry: Path, environ: Mapping[str, str]) -> list[str]:
    """Write what is missing or changed under ``directory``; the names of the files written."""
    out = SecretDir(directory)
    old = out.read(CREDENTIALS)
    credentials = parse_credentials(old.decode(), out.path / CREDENTIALS) if old else {}
    for server in mesh_servers(registry, environ):
        credentials.setdefault(server, secrets.token_urlsafe(32))
    out.write(CREDENTIALS, render_credentials(credentials).encode())
    for server, token in credentials.items():
        out.write(f"{DIGEST_PREFIX}{server}", f"{token_digest(token)}\n".encode())
    servers = mesh_servers(registry, environ)
    write_relay_tokens(out, relay_servers(registry, environ), pending=PENDING_ACTIONS in servers)
    for name, body in capabilities(registry, environ).items():
        out.write(f"{CAPABILITY_ENV_PREFIX}{name}", render_capability_env(name, body).encode())
    private, public = approval_key_pair(out.path / SIGNING_KEY)
    out.write(SIGNING_KEY, private)
    out.write(PUBLIC_KEY, public)
    for name in USER_SECRETS:
        value = environ.get(name, "").strip()
        out.write(name.lower(), f"{value}\n".encode() if value else b"")
    out.write(BOT_TOKENS, render_bot_tokens(environ).encode())
    return out.changed
