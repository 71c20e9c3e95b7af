"""Proposals, approval tokens and confirm-once: nothing changes until a human taps Confirm.

    producer tool ──Proposal──► orchestrator ──stage──► pending-actions
    tap ──► pending-actions.approve ──token──► <server>.confirm_<kind>(payload, approval)

- A ``producer`` tool returns a :class:`~meshkit.wire.proposals.Proposal` and changes nothing.
- pending-actions signs an approval token when the user taps Confirm (:class:`ApprovalSigner`):

      v3.<action id>.<expiry, unix s>.<base64url Ed25519 signature, unpadded>

  with its Ed25519 private key (``meshkit.approval_keys``), over the JSON array ``["v3",
  action id, agent, server, kind, payload hash, expiry]``. The agent is the one the action
  was staged for (the bot whose chat showed its buttons); it is bound, not written out: the
  confirm tool names the agent it acts for, and a token minted for another agent does not
  match.
- A ``confirm`` tool checks the token with :class:`Approvals`, which holds the public key
  only (so no server with confirm tools can make a token, for itself or for another), giving
  the agent its payload acts on, and performs the change inside :func:`confirm_once`, which
  records the action id in the same SQLite transaction: a replayed token returns the first
  result and changes nothing twice. A model (or another MCP client, or another server) that
  calls a confirm tool without a token signed by pending-actions for exactly this payload and
  this agent gets :class:`ApprovalRefused`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import logging
import re
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from pydantic import BaseModel, ValidationError

from meshkit.approval_keys import KeyFileError, PublicKeySource
from meshkit.errors import ModelError
from meshkit.sqlite import transaction

_KIND = re.compile(r"[a-z][a-z0-9_]{0,39}")
SERVER_PATTERN = r"^[a-z][a-z0-9_-]{0,39}$"  # a registry name, as in server__tool
_SERVER = re.compile(SERVER_PATTERN[1:-1])
ACTION_ID = re.compile(r"act_[0-9a-f]{12}\Z")  # .match() and .fullmatch() agree
_ACTION_ID = ACTION_ID
_EXPIRY = re.compile(r"[0-9]{1,12}")
_SIGNATURE = re.compile(r"[A-Za-z0-9_-]{86}")  # 64 bytes, base64url without padding
# A format version, not a secret: v1 did not bind the agent; v2 was an HMAC with a key
# that every confirm server held, so any of them could mint.
TOKEN_VERSION = "v3"  # noqa: S105
OLD_VERSIONS = frozenset({"v1", "v2"})
APPROVAL_TTL_S = 300  # how long a minted token may take to reach the confirm tool
logger = logging.getLogger(__name__)


class ApprovalRefused(ModelError):
    """A confirm tool was called without a valid approval for exactly this change."""


def payload_hash(payload: dict[str, Any]) -> str:
    """SHA-256 of the payload's canonical JSON (sorted keys, no spaces, UTF-8)."""
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


PayloadT = TypeVar("PayloadT", bound=BaseModel)


class NotThisPayload(ModelError):
    """An approved payload that is not what the confirm tool it was given to changes."""


def approved_payload(model: type[PayloadT], kind: str, payload: dict[str, Any]) -> PayloadT:
    """A confirm tool's payload read as its ``model`` (after the token was checked)."""
    try:
        return model.model_validate(payload)
    except ValidationError as error:
        raise NotThisPayload(
            f"The approved payload is not a {kind} payload ({error.error_count()} problems). "
            "Nothing was changed."
        ) from error


def payload_agent(payload: dict[str, Any]) -> str:
    """The agent whose data a confirm payload changes (its ``agent`` field; "" when it names
    none, which no token matches): what a confirm tool checks its token against."""
    agent = payload.get("agent")
    return agent if isinstance(agent, str) else ""


@dataclass(frozen=True)
class Approval:
    """What a valid token vouches for."""

    action_id: str
    agent: str
    server: str
    kind: str
    expires_at: int


def _signed(  # noqa: PLR0917 (every part of what the token vouches for)
    action_id: str, agent: str, server: str, kind: str, digest: str, expires_at: int
) -> bytes:
    """What a token's signature covers. A JSON array: the agent is free text, and no choice
    of it can pass for other parts."""
    parts = [TOKEN_VERSION, action_id, agent, server, kind, digest, expires_at]
    return json.dumps(parts, ensure_ascii=False, separators=(",", ":")).encode()


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


class ApprovalSigner:
    """Mints approval tokens: pending-actions, the one holder of the private key.

    A token is ``v3.<action id>.<expiry, unix s>.<base64url Ed25519 signature>``; the
    signature covers the action id, agent, server, kind, payload hash and expiry.
    """

    def __init__(self, key: Ed25519PrivateKey, *, clock: Callable[[], float] = time.time) -> None:
        self._key = key
        self._clock = clock

    def mint(
        self,
        action_id: str,
        server: str,
        kind: str,
        payload: dict[str, Any],
        ttl_s: int = APPROVAL_TTL_S,
        *,
        agent: str,
    ) -> str:
        """A token for ``agent``'s action ``action_id``: ``server``'s confirm_<kind> on
        exactly ``payload``."""
        if not (
            _ACTION_ID.fullmatch(action_id)
            and _SERVER.fullmatch(server)
            and _KIND.fullmatch(kind)
            and agent
        ):
            raise ValueError(f"cannot mint a token for {action_id!r} {server!r} {kind!r}")
        expires_at = int(self._clock()) + ttl_s
        message = _signed(action_id, agent, server, kind, payload_hash(payload), expires_at)
        return f"{TOKEN_VERSION}.{action_id}.{expires_at}.{_b64(self._key.sign(message))}"


class Approvals:
    """Checks approval tokens (confirm tools) with pending-actions' public key.

    Any change to what a token vouches for (another agent's payload included), a token
    signed with another key, or one made without a key (an HMAC, as v2 was), is refused.
    ``public_key``: the key, or a source of it read at each check (``approval_keys``).
    """

    def __init__(
        self,
        public_key: Ed25519PublicKey | PublicKeySource,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if isinstance(public_key, Ed25519PublicKey):
            key = public_key
            self._public_key: PublicKeySource = lambda: key
        else:
            self._public_key = public_key
        self._clock = clock

    def check(
        self, token: str, server: str, kind: str, payload: dict[str, Any], *, agent: str
    ) -> Approval:
        """The approval ``token`` grants for this exact change, acting for ``agent`` (the
        agent the payload acts on); ApprovalRefused otherwise."""
        parts = token.split(".") if isinstance(token, str) else []
        if len(parts) == 4 and parts[0] in OLD_VERSIONS:
            raise ApprovalRefused(
                "The approval token is of an older format, minted before an update; the "
                "user must tap Confirm again. Nothing was changed."
            )
        if len(parts) != 4 or parts[0] != TOKEN_VERSION or not _ACTION_ID.fullmatch(parts[1]):
            raise ApprovalRefused(
                "This change needs an approval token from a user's Confirm tap; "
                "none was given. Nothing was changed."
            )
        _, action_id, expiry, signature = parts
        if not _EXPIRY.fullmatch(expiry) or str(int(expiry)) != expiry:
            raise ApprovalRefused("The approval token is malformed. Nothing was changed.")
        if not (_SERVER.fullmatch(server) and _KIND.fullmatch(kind)):
            raise ApprovalRefused(
                f"No approval can exist for {server}/{kind}. Nothing was changed."
            )
        message = _signed(action_id, agent, server, kind, payload_hash(payload), int(expiry))
        if not self._verify(signature, message):
            raise ApprovalRefused(
                "The approval token does not match this change (another change, another "
                "agent, another key, or altered data). Nothing was changed."
            )
        if int(expiry) < self._clock():
            raise ApprovalRefused(
                "The approval token has expired; the user must tap Confirm again. "
                "Nothing was changed."
            )
        return Approval(action_id, agent, server, kind, int(expiry))

    def _verify(self, signature: str, message: bytes) -> bool:
        if not _SIGNATURE.fullmatch(signature):
            return False
        raw = _decode(signature)
        if raw is None or _b64(raw) != signature:
            return False  # one spelling per signature: no two tokens for one approval
        try:
            key = self._public_key()
        except KeyFileError as error:
            logger.error("cannot check an approval: %s", error)
            raise ApprovalRefused(
                "This server has no key to check approvals with yet (pending-actions has "
                "not started, or its public key is not set up here). Nothing was changed."
            ) from None
        try:
            key.verify(raw, message)
        except InvalidSignature:
            return False
        return True


def _decode(text: str) -> bytes | None:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        return None


# --- confirm once ------------------------------------------------------------------------

CONFIRMATIONS_SCHEMA = """
CREATE TABLE IF NOT EXISTS confirmations (
    action_id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    result TEXT NOT NULL,
    at REAL NOT NULL
);
"""


@dataclass(frozen=True)
class Confirmed:
    result: dict[str, Any]
    replayed: bool  # True: this action was performed before; nothing was done now


def confirm_once(
    db: sqlite3.Connection,
    approval: Approval,
    perform: Callable[[sqlite3.Connection], dict[str, Any]],
    *,
    at: float,
) -> Confirmed:
    """Run ``perform`` and record the action id, in one IMMEDIATE transaction.

    Call from the store's worker thread (``SQLiteStore._run``) with a connection in
    autocommit mode and ``CONFIRMATIONS_SCHEMA`` in the store's schema. An action id
    recorded before returns its first result; ``perform`` raising rolls everything back.
    Both calls return the result as stored (JSON), so a replay answers exactly the same.
    ``perform`` must not commit or roll back itself.
    """
    with transaction(db, "IMMEDIATE"):
        row = db.execute(
            "SELECT result FROM confirmations WHERE action_id = ?", (approval.action_id,)
        ).fetchone()
        if row is not None:
            return Confirmed(json.loads(row[0]), replayed=True)
        stored = json.dumps(perform(db), ensure_ascii=False)
        db.execute(
            "INSERT INTO confirmations (action_id, kind, result, at) VALUES (?, ?, ?, ?)",
            (approval.action_id, approval.kind, stored, at),
        )
    return Confirmed(json.loads(stored), replayed=False)
