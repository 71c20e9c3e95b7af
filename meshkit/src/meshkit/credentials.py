"""Who may call a server over HTTP, and which tool classes (``meshkit.tool_classes``) each may use.

Two kinds of credential, both sent as ``Authorization: Bearer <token>``:

- the orchestrator's, one per server (``meshkit.secret_files`` makes them; the orchestrator
  reads them from ``MESH_CREDENTIALS_FILE``): every class (read, producer, confirm,
  internal). A server holds only the SHA-256 of its own (``MESH_TOKEN_SHA256``, or
  ``MESH_TOKEN_SHA256_FILE``), never a token: what the orchestrator sends one server opens no
  other, so a server broken into cannot act as the orchestrator anywhere else.
- ``MESH_CLIENTS``, one entry per other MCP client (Claude Desktop over HTTP, a script):
  ``name:scopes:<user>@<agent>:sha256:<hex>``, scopes ``read`` and/or ``producer`` joined by
  ``+``, bound to one agent and one user (a numeric Telegram user id): the client speaks for
  that person only (``meshkit.bindings`` fills in the context arguments from the binding and
  refuses any that names someone else). Only the SHA-256 of the token is stored: the servers
  never hold a client's token. A token is 256 random bits (``new_client``), so a plain hash
  is as hard to reverse as the token is to guess; no slow hash is needed.

- ``MESH_PEERS`` (or ``MESH_PEERS_FILE``), on pending-actions: one entry per server that
  stages a bound client's proposal (consent from any client), ``<server>:sha256:<hex>``. A
  peer calls ``relay`` tools only, under its server's name, which pending-actions checks
  against the ``server`` it stages for: a server broken into stages nothing in another
  server's name. ``meshkit.secret_files`` makes one relay token per server with confirm tools.

``confirm`` and ``internal`` belong to the orchestrator alone: a confirm acts for a human tap
the orchestrator saw, an internal tool reads the Telegram inbox or the conversation. An entry
asking for them is refused at startup, and so is an entry bound to no one (the shape before
bindings, ``name:scopes:sha256:<hex>``): it would speak for every user.

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

from meshkit.tool_classes import CLASSES, ORCHESTRATOR_CLASSES, PRODUCER, READ, RELAY

ORCHESTRATOR = "orchestrator"
CLIENT_SCOPES = frozenset({READ, PRODUCER})
DEFAULT_CLIENT_SCOPES = (READ, PRODUCER)
ENTRY_SHAPE = "name:read+producer:<user>@<agent>:sha256:<64 hex digits>"
PEER_SHAPE = "<server>:sha256:<64 hex digits>"
PEER_SCOPES = frozenset({RELAY})
_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,31}")
_AGENT = re.compile(r"[A-Za-z0-9_-]{1,64}")
_USER = re.compile(r"[1-9][0-9]{0,19}")  # a Telegram user id (a private chat's id too)
_DIGEST = re.compile(r"[0-9a-f]{64}")


class CredentialError(ValueError):
    """A malformed MESH_CLIENTS entry; the message says which and what to do."""


class UnboundEntry(CredentialError):
    """An entry of the shape before bindings (``name:scopes:sha256:<hex>``)."""

    def __init__(self, name: str) -> None:
        super().__init__(
            f"client {name!r} is bound to no agent and user, so it could speak for anyone: "
            f"run make client NAME={name} AGENT=<agent> USER=<Telegram user id> again and "
            "use the entry it prints"
        )
        self.name = name


@dataclass(frozen=True)
class Binding:
    """The one agent and user a client speaks for."""

    agent: str
    user: str

    @classmethod
    def parse(cls, agent: str, user: str) -> Binding:
        """CredentialError (its message saying what to give) unless both are well formed."""
        if not _USER.fullmatch(user):
            raise CredentialError(
                f"user {user[:40]!r} is not a Telegram user id: give the number, as in "
                "config/agents.yaml allowed_user_ids (e.g. 123456789)"
            )
        if not _AGENT.fullmatch(agent):
            raise CredentialError(
                f"agent {agent[:70]!r}: give an agent id of config/agents.yaml (e.g. clawdia)"
            )
        return cls(agent, user)

    def __str__(self) -> str:
        return f"{self.user}@{self.agent}"


@dataclass(frozen=True)
class Caller:
    """An authenticated client: its name (for logs), the tool classes it may call and, for
    any client but the orchestrator, the agent and user it speaks for."""

    name: str
    scopes: frozenset[str]
    binding: Binding | None = None


@dataclass(frozen=True)
class ClientCredential:
    """One ``MESH_CLIENTS`` entry: a client's name, scopes, binding and token digest."""

    name: str
    scopes: tuple[str, ...]
    binding: Binding
    digest: str  # hex SHA-256 of the token

    @classmethod
    def parse(cls, text: str) -> ClientCredential:
        parts = text.strip().split(":")
        if len(parts) == 4 and parts[2] == "sha256":
            raise UnboundEntry(parts[0][:32])
        if len(parts) != 5 or parts[3] != "sha256":
            raise CredentialError(
                f"an entry must look like {ENTRY_SHAPE} "
                "(make client NAME=... AGENT=... USER=... prints one)"
            )
        name, scopes_text, bound, _, digest = parts
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
        user, at, agent = bound.partition("@")
        if not at:
            raise CredentialError(
                f"client {name!r}: {bound[:80]!r} must be <Telegram user id>@<agent>, "
                "e.g. 123456789@clawdia"
            )
        try:
            binding = Binding.parse(agent, user)
        except CredentialError as error:
            raise CredentialError(f"client {name!r}: {error}") from None
        if not _DIGEST.fullmatch(digest):
            raise CredentialError(
                f"client {name!r}: the digest must be 64 lowercase hex digits (the SHA-256 of "
                "the token, as make client prints it), never the token itself"
            )
        ordered = tuple(s for s in DEFAULT_CLIENT_SCOPES if s in scopes)
        return cls(name, ordered, binding, digest)

    def entry(self) -> str:
        return f"{self.name}:{'+'.join(self.scopes)}:{self.binding}:sha256:{self.digest}"


@dataclass(frozen=True)
class PeerCredential:
    """One ``MESH_PEERS`` entry: a server that relays its bound clients' proposals to
    pending-actions, and the digest of its relay token."""

    name: str
    digest: str

    @classmethod
    def parse(cls, text: str) -> PeerCredential:
        parts = text.strip().split(":")
        if len(parts) != 3 or parts[1] != "sha256":
            raise CredentialError(
                f"a peer entry must look like {PEER_SHAPE} (make up writes them: clawmesh secrets)"
            )
        name, _, digest = parts
        if not _NAME.fullmatch(name) or name == ORCHESTRATOR:
            raise CredentialError(
                f"peer {name[:40]!r}: give the server's registry name (e.g. shopping), "
                "1-32 lowercase letters, digits or '-'"
            )
        if not _DIGEST.fullmatch(digest):
            raise CredentialError(
                f"peer {name!r}: the digest must be 64 lowercase hex digits (the SHA-256 of "
                "the server's relay token), never the token itself"
            )
        return cls(name, digest)

    def entry(self) -> str:
        return f"{self.name}:sha256:{self.digest}"


def parse_peers(text: str) -> list[PeerCredential]:
    """``MESH_PEERS``: entries separated by commas or whitespace (a file: one a line, ``#``
    comments skipped), one per server."""
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    peers = [PeerCredential.parse(part) for part in entries("\n".join(lines))]
    seen: set[str] = set()
    for peer in peers:
        if peer.name in seen:
            raise CredentialError(f"peer {peer.name!r} is listed twice; keep one entry")
        seen.add(peer.name)
    return peers


def parse_clients(text: str) -> list[ClientCredential]:
    """``MESH_CLIENTS``: entries separated by commas (or whitespace), names unique."""
    clients = [ClientCredential.parse(part) for part in entries(text)]
    seen: set[str] = set()
    for client in clients:
        if client.name in seen:
            raise CredentialError(f"client {client.name!r} is listed twice; keep one entry")
        seen.add(client.name)
    return clients


def check_client_name(name: str) -> str:
    """A client's name as credentials carry it; CredentialError saying the form otherwise."""
    if not _NAME.fullmatch(name) or name == ORCHESTRATOR:
        raise CredentialError(
            f"client name {name[:40]!r}: use 1-32 lowercase letters, digits or '-' "
            f"(e.g. claude-desktop; not {ORCHESTRATOR!r})"
        )
    return name


def entries(text: str) -> list[str]:
    return [part for part in re.split(r"[,\s]+", text) if part]


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_client(
    name: str, binding: Binding, scopes: Iterable[str] = DEFAULT_CLIENT_SCOPES
) -> tuple[str, ClientCredential]:
    """A fresh token and the entry that admits it (checked like any configured entry)."""
    token = secrets.token_urlsafe(32)
    entry = f"{name}:{'+'.join(scopes)}:{binding}:sha256:{token_digest(token)}"
    return token, ClientCredential.parse(entry)


def check_digest(value: str) -> str:
    """A SHA-256 in hex (``MESH_TOKEN_SHA256``), lower-cased; CredentialError otherwise."""
    digest = value.strip().lower()
    if not _DIGEST.fullmatch(digest):
        raise CredentialError(
            "it must be the SHA-256 of the orchestrator's credential for this server, 64 hex "
            "digits (make up writes it: clawmesh secrets)"
        )
    return digest


class Credentials:
    """The callers a server admits: the orchestrator (by the digest of its credential for this
    server), MESH_CLIENTS and MESH_PEERS."""

    def __init__(
        self,
        orchestrator: SecretStr | str,
        clients: Iterable[ClientCredential],
        peers: Iterable[PeerCredential] = (),
    ) -> None:
        """``orchestrator``: the token's digest (hex SHA-256) as a str, as a server process
        has it; in-process tests may give the token itself, as a SecretStr."""
        digest = (
            token_digest(orchestrator.get_secret_value())
            if isinstance(orchestrator, SecretStr)
            else check_digest(orchestrator)
        )
        known = [(digest, Caller(ORCHESTRATOR, ORCHESTRATOR_CLASSES))]
        known += [(c.digest, Caller(c.name, frozenset(c.scopes), c.binding)) for c in clients]
        known += [(p.digest, Caller(p.name, PEER_SCOPES)) for p in peers]
        digests = [digest for digest, _ in known]
        if len(set(digests)) != len(digests):
            raise CredentialError(
                "two credentials share a token (a client's token equals the orchestrator's "
                "or another client's); give each client its own with make client"
            )
        self._known = [(bytes.fromhex(digest), caller) for digest, caller in known]

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
