"""Proposals, approval tokens and confirm-once: nothing changes until a human taps Confirm.

    producer tool ──Proposal──► orchestrator ──stage──► pending-actions
    tap ──► pending-actions.approve ──token──► <server>.confirm_<kind>(payload, approval)

- A ``producer`` tool returns a :class:`Proposal` and changes nothing.
- pending-actions signs an approval token when the user taps Confirm:

      v2.<action id>.<expiry, unix s>.<base64url HMAC-SHA256, unpadded>

  keyed with ``MESH_APPROVAL_KEY``, over the JSON array ``["v2", action id, agent, server,
  kind, payload hash, expiry]``. The agent is the one the action was staged for (the bot
  whose chat showed its buttons); it is bound, not written out: the confirm tool names the
  agent it acts for, and a token minted for another agent does not match.
- A ``confirm`` tool checks the token with :class:`Approvals`, giving the agent its payload
  acts on, and performs the change inside :func:`confirm_once`, which records the action
  id in the same SQLite transaction: a replayed token returns the first result and changes
  nothing twice. A model (or another MCP client) that calls a confirm tool without a token
  minted by pending-actions for exactly this payload and this agent gets
  :class:`ApprovalRefused`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
import secrets
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, Field, StrictInt, ValidationError, field_validator

from meshkit.errors import ModelError
from meshkit.private import private_dir
from meshkit.settings import ApprovalSettings, fail

DEFAULT_TTL_S = 4 * 3600
MAX_TTL_S = 7 * 24 * 3600
KIND_PATTERN = r"^[a-z][a-z0-9_]{0,39}$"
_KIND = re.compile(r"[a-z][a-z0-9_]{0,39}")
SERVER_PATTERN = r"^[a-z][a-z0-9_-]{0,39}$"  # a registry name, as in server__tool
_SERVER = re.compile(SERVER_PATTERN[1:-1])
ACTION_ID = re.compile(r"act_[0-9a-f]{12}\Z")  # .match() and .fullmatch() agree
_ACTION_ID = ACTION_ID
_EXPIRY = re.compile(r"[0-9]{1,12}")
KEY_ENV = "MESH_APPROVAL_KEY"
KEY_FILE = "approval_key"
MIN_KEY_CHARS = 32
TOKEN_VERSION = "v2"  # noqa: S105 (a format version, not a secret; v1 did not bind the agent)
APPROVAL_TTL_S = 300  # how long a minted token may take to reach the confirm tool
NOT_DONE_NOTE = (
    "Nothing has changed yet: the user sees this under your reply, with buttons to "
    "confirm or cancel it, and decides. Do not say it is done."
)


class Proposal(BaseModel):
    """What a ``producer`` tool returns: a change for the user to confirm or cancel."""

    kind: str = Field(
        pattern=KIND_PATTERN,
        description="The change's kind; the server performs it with its confirm_<kind> tool",
    )
    summary: str = Field(
        min_length=1, max_length=500, description="One line the user reads above the buttons"
    )
    payload: dict[str, Any] = Field(description="Everything confirm_<kind> needs, as JSON")
    confirm_label: str = Field(default="✅ Confirm", min_length=1, max_length=40)
    cancel_label: str = Field(default="❌ Cancel", min_length=1, max_length=40)
    ttl_s: StrictInt = Field(
        default=DEFAULT_TTL_S, ge=1, le=MAX_TTL_S, description="Seconds until it expires"
    )
    note: str = Field(default=NOT_DONE_NOTE, description="For the model")

    @field_validator("summary", "confirm_label", "cancel_label")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value.strip()


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


class Approvals:
    """Mints (pending-actions) and checks (confirm tools) approval tokens.

    A token is ``v2.<action id>.<expiry, unix s>.<base64url HMAC>``; the HMAC covers the
    action id, agent, server, kind, payload hash and expiry, so any change to one of them
    (another agent's payload included), or a token minted with another key, is refused.
    """

    def __init__(self, key: bytes, *, clock: Callable[[], float] = time.time) -> None:
        if len(key) < MIN_KEY_CHARS:
            raise ValueError(f"the approval key needs at least {MIN_KEY_CHARS} bytes")
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
        mac = self._mac(action_id, agent, server, kind, payload_hash(payload), expires_at)
        return f"{TOKEN_VERSION}.{action_id}.{expires_at}.{mac}"

    def check(
        self, token: str, server: str, kind: str, payload: dict[str, Any], *, agent: str
    ) -> Approval:
        """The approval ``token`` grants for this exact change, acting for ``agent`` (the
        agent the payload acts on); ApprovalRefused otherwise."""
        parts = token.split(".") if isinstance(token, str) else []
        if len(parts) == 4 and parts[0] == "v1":
            raise ApprovalRefused(
                "The approval token is of an older format, minted before an update; the "
                "user must tap Confirm again. Nothing was changed."
            )
        if len(parts) != 4 or parts[0] != TOKEN_VERSION or not _ACTION_ID.fullmatch(parts[1]):
            raise ApprovalRefused(
                "This change needs an approval token from a user's Confirm tap; "
                "none was given. Nothing was changed."
            )
        _, action_id, expiry, mac = parts
        if not _EXPIRY.fullmatch(expiry) or str(int(expiry)) != expiry:
            raise ApprovalRefused("The approval token is malformed. Nothing was changed.")
        if not (_SERVER.fullmatch(server) and _KIND.fullmatch(kind)):
            raise ApprovalRefused(
                f"No approval can exist for {server}/{kind}. Nothing was changed."
            )
        expected = self._mac(action_id, agent, server, kind, payload_hash(payload), int(expiry))
        if not hmac.compare_digest(expected, mac):
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

    def _mac(  # noqa: PLR0917 (every part of what the token vouches for)
        self, action_id: str, agent: str, server: str, kind: str, digest: str, expires_at: int
    ) -> str:
        # A JSON array: the agent is free text, and no choice of it can pass for other parts.
        parts = [TOKEN_VERSION, action_id, agent, server, kind, digest, expires_at]
        message = json.dumps(parts, ensure_ascii=False, separators=(",", ":"))
        raw = hmac.new(self._key, message.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def load_approval_key(data_dir: Path, configured: str | None = None) -> bytes:
    """``configured`` (``MESH_APPROVAL_KEY``), else ``$DATA_DIR/approval_key`` (created,
    mode 0600).

    The file serves one machine (embedded mode, ``make run``); containers share the
    environment variable, since each has its own data volume.
    """
    value = configured or ""
    if value:
        if len(value) < MIN_KEY_CHARS:
            raise ValueError(
                f"{KEY_ENV} is too short: use at least {MIN_KEY_CHARS} characters "
                '(python -c "import secrets; print(secrets.token_urlsafe(32))")'
            )
        return value.encode()
    path = data_dir / KEY_FILE
    if not path.exists():
        private_dir(data_dir)
        # Written aside, then linked into place: another server starting at the same
        # moment sees no file or a whole one, never an empty one.
        draft = data_dir / f".{KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}"
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(secrets.token_urlsafe(32))
        try:
            os.link(draft, path)
        except FileExistsError:
            pass  # another server of this machine made it first: theirs is the key
        finally:
            draft.unlink()
    key = path.read_text().strip()
    if len(key) < MIN_KEY_CHARS:
        raise ValueError(f"{path} holds no usable key: delete it and start again")
    return key.encode()


def approval_key(settings: ApprovalSettings) -> bytes:
    """``load_approval_key`` for a server starting: a bad key or an unwritable ``DATA_DIR``
    stops startup with what to do (``meshkit.settings.fail``)."""
    data_dir = settings.data_dir
    configured = settings.approval_key.get_secret_value() if settings.approval_key else None
    try:
        return load_approval_key(data_dir, configured)
    except ValueError as error:
        fail(str(error))
    except OSError as error:
        fail(
            f"cannot read or create the approval key {data_dir / KEY_FILE} ({error.strerror}): "
            f"make DATA_DIR writable, or set {KEY_ENV} (the same value for every server)"
        )


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
    db.execute("BEGIN IMMEDIATE")
    try:
        row = db.execute(
            "SELECT result FROM confirmations WHERE action_id = ?", (approval.action_id,)
        ).fetchone()
        if row is not None:
            db.execute("COMMIT")
            return Confirmed(json.loads(row[0]), replayed=True)
        stored = json.dumps(perform(db), ensure_ascii=False)
        db.execute(
            "INSERT INTO confirmations (action_id, kind, result, at) VALUES (?, ?, ?, ?)",
            (approval.action_id, approval.kind, stored, at),
        )
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    return Confirmed(json.loads(stored), replayed=False)
