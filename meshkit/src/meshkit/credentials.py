"""Who may call a server over HTTP, and which tool classes (``meshkit.tool_classes``) each may use.

Two kinds of credential, both sent as ``Authorization: Bearer <token>``:

- the orchestrator's, one per server (``meshkit.secret_files`` makes them; the orchestrator
  reads them from ``MESH_CREDENTIALS_FILE``): every class (read, producer, confirm,
  internal). A server holds only the SHA-256 of its own (``MESH_TOKEN_SHA256``, or
  ``MESH_TOKEN_SHA256_FILE``), never a token: what the orchestrator sends one server opens no
  other, so a server broken into cannot act as the orchestrator anywhere else.
- ``MESH_CLIENTS``, one entry per other MCP client (Claude Desktop over HTTP, a script):
  ``name:scopes:sha256:<hex>``, scopes ``read`` and/or ``producer`` joined by ``+``. Only
  the SHA-256 of the token is stored: the servers never hold a client's token. A token is
  256 random bits (``new_client``), so a plain hash is as hard to reverse as the token is
  to guess; no slow hash is needed.

``confirm`` and ``internal`` belong to the orchestrator alone: a confirm acts for a human tap
the orchestrator saw, an internal tool reads the Telegram inbox or the conversation. An entry
asking for them is refused at startup.

A presented token is hashed and compared with every known digest in constant time, so
neither its bytes nor which credential it resembles can be learned from response times.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass

from pydantic import SecretStr

from meshkit.tool_classes import CLASSES, PRODUCER, READ

ORCHESTRATOR = "orchestrator"
CLIENT_SCOPES = frozenset({READ, PRODUCER})
DEFAULT_CLIENT_SCOPES = (READ, PRODUCER)
ENTRY_SHAPE = "name:read+producer:sha256:<64 hex digits>"
_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,31}")
_DIGEST = re.compile(r"[0-9a-f]{64}")


class CredentialError(ValueError):
    """A malformed MESH_CLIENTS entry; the message says which and what to do."""


@dataclass(frozen=True)
class Caller:
    """An authenticated client: its name (for logs) and the tool classes it may call."""

    name: str
    scopes: frozenset[str]


@dataclass(frozen=True)
class ClientCredential:
    """One ``MESH_CLIENTS`` entry: a client's name, scopes and token digest."""

    name: str
    scopes: tuple[str, ...]
    digest: str  # hex SHA-256 of the token

    @classmethod
    def parse(cls, text: str) -> ClientCredential:
        parts = text.strip().split(":")
        if len(parts) != 4 or parts[2] != "sha256":
            raise CredentialError(
                f"an entry must look like {ENTRY_SHAPE} (make client NAME=... prints one)"
            )
        name, scopes_text, _, digest = parts
        if not _NAME.fullmatch(name) or name == ORCHESTRATOR:
            raise CredentialError(
                f"client name {name!r}: use 1-32 lowercase letters, digits or '-' "
                f"(not {ORCHESTRATOR!r}, whose credential is MESH_TOKEN_SHA256)"
            )
        scopes = tuple(s for s in scopes_text.split("+") if s)
        unknown = set(scopes) - CLASSES
        if unknown or not scopes:
            raise CredentialError(
                f"client {name!r}: scopes {scopes_text!r}: use read, producer or read+producer"
            )
        if not set(scopes) <= CLIENT_SCOPES:
            raise CredentialError(
                f"client {name!r}: {'+'.join(sorted(set(scopes) - CLIENT_SCOPES))} belongs to "
                "the orchestrator alone; give this client read and/or producer"
            )
        if not _DIGEST.fullmatch(digest):
            raise CredentialError(
                f"client {name!r}: the digest must be 64 lowercase hex digits (the SHA-256 of "
                "the token, as make client prints it), never the token itself"
            )
        return cls(name, tuple(s for s in DEFAULT_CLIENT_SCOPES if s in scopes), digest)

    def entry(self) -> str:
        return f"{self.name}:{'+'.join(self.scopes)}:sha256:{self.digest}"


def parse_clients(text: str) -> list[ClientCredential]:
    """``MESH_CLIENTS``: entries separated by commas (or whitespace), names unique."""
    clients = [ClientCredential.parse(part) for part in re.split(r"[,\s]+", text) if part]
    seen: set[str] = set()
    for client in clients:
        if client.name in seen:
            raise CredentialError(f"client {client.name!r} is listed twice; keep one entry")
        seen.add(client.name)
    return clients


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_client(
    name: str, scopes: Iterable[str] = DEFAULT_CLIENT_SCOPES
) -> tuple[str, ClientCredential]:
    """A fresh token and the entry that admits it (checked like any configured entry)."""
    token = secrets.token_urlsafe(32)
    entry = f"{name}:{'+'.join(scopes)}:sha256:{token_digest(token)}"
    return token, ClientCredential.parse(entry)


def check_digest(value: str) -> str:
    """A SHA-256 in hex (``MESH_TOKEN_SHA256``), lower-cased; CredentialError otherwise."""
    digest = value.strip().lower()
    if not _DIGEST.fullmatch(digest):
        raise CredentialError(
            "it must be the SHA-256 of the orchestrator's credential for this server, 64 hex "
            "digits (make up writes it: python -m meshkit.secret_files)"
        )
    return digest


class Credentials:
    """The callers a server admits: the orchestrator (by the digest of its credential for this
    server) and MESH_CLIENTS."""

    def __init__(self, orchestrator: SecretStr | str, clients: Iterable[ClientCredential]) -> None:
        """``orchestrator``: the token's digest (hex SHA-256) as a str, as a server process
        has it; in-process tests may give the token itself, as a SecretStr."""
        digest = (
            token_digest(orchestrator.get_secret_value())
            if isinstance(orchestrator, SecretStr)
            else check_digest(orchestrator)
        )
        known = [(digest, ORCHESTRATOR, CLASSES)]
        known += [(c.digest, c.name, frozenset(c.scopes)) for c in clients]
        digests = [digest for digest, _, _ in known]
        if len(set(digests)) != len(digests):
            raise CredentialError(
                "two credentials share a token (a client's token equals the orchestrator's "
                "or another client's); give each client its own with make client"
            )
        self._known = [
            (bytes.fromhex(digest), Caller(name, frozenset(scopes)))
            for digest, name, scopes in known
        ]

    def identify(self, authorization: bytes) -> Caller | None:
        """The caller an ``Authorization`` header value proves, or None."""
        scheme, _, token = authorization.partition(b" ")
        if scheme.lower() != b"bearer" or not token:
            return None
        presented = hashlib.sha256(token.strip()).digest()
        found: Caller | None = None
        for digest, caller in self._known:  # every entry, even after a match: constant time
            if hmac.compare_digest(presented, digest):
                found = caller
        return found
