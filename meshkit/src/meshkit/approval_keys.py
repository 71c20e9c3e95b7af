"""The Ed25519 key pair approval tokens are signed with: the private key pending-actions alone
holds, and the public key every server with confirm tools checks with.

- pending-actions: ``MESH_APPROVAL_SIGNING_KEY_FILE`` (PEM, PKCS8, unencrypted), else
  ``$DATA_DIR/approval_signing_key`` (0600), made at its first start, with the public key
  written beside it as ``$DATA_DIR/approval_public_key`` (0600 too, like every file of
  DATA_DIR): what embedded mode, every server sharing one ``DATA_DIR``, checks with.
- confirm servers: ``MESH_APPROVAL_PUBLIC_KEY_FILE`` (PEM, SubjectPublicKeyInfo), read at
  startup; else ``$DATA_DIR/approval_public_key``, read at each check, because in embedded
  mode pending-actions may be built (and write it) after them.

A confirm server never reads a private key: with the public one it can check a token, not
make one, so a server broken into cannot approve a change on another.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
    load_pem_private_key,
    load_pem_public_key,
)

from meshkit.private import private_dir
from meshkit.settings import ApprovalSettings, SigningSettings, fail

SIGNING_KEY_ENV = "MESH_APPROVAL_SIGNING_KEY_FILE"
PUBLIC_KEY_ENV = "MESH_APPROVAL_PUBLIC_KEY_FILE"
SIGNING_KEY_FILE = "approval_signing_key"
PUBLIC_KEY_FILE = "approval_public_key"
MAX_KEY_FILE_BYTES = 64 * 1024  # a PEM Ed25519 key is about 120 bytes

PublicKeySource = Callable[[], Ed25519PublicKey]


class KeyFileError(ValueError):
    """A key file that is missing, unreadable or not the key it should be (for an operator)."""


def signing_pem(key: Ed25519PrivateKey) -> bytes:
    """``key`` as pending-actions reads it: PEM, PKCS8, unencrypted."""
    return key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())


def public_pem(key: Ed25519PublicKey) -> bytes:
    """``key`` as confirm servers read it: PEM, SubjectPublicKeyInfo."""
    return key.public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)


def read_signing_key(path: Path, named_by: str | None = None) -> Ed25519PrivateKey:
    """The Ed25519 private key in ``path`` (``named_by``: the variable that named it)."""
    where = f"{named_by} ({path})" if named_by else str(path)
    data = _read(path, where)
    try:
        key = load_pem_private_key(data, password=None)
    except (ValueError, TypeError):
        key = None  # encrypted, another format, or not a key at all
    if not isinstance(key, Ed25519PrivateKey):
        raise KeyFileError(
            f"{where} is not an unencrypted Ed25519 private key in PEM (PKCS8): make one with "
            "`openssl genpkey -algorithm ed25519`"
        )
    return key


def read_public_key(path: Path, named_by: str | None = None) -> Ed25519PublicKey:
    """The Ed25519 public key in ``path`` (``named_by``: the variable that named it)."""
    where = f"{named_by} ({path})" if named_by else str(path)
    data = _read(path, where)
    if b"PRIVATE KEY" in data:
        # Refused even though the public key could be derived: a confirm server must not
        # hold what signs approvals.
        raise KeyFileError(
            f"{where} holds a private key: give this server pending-actions' public key only "
            "(`openssl pkey -in <private key> -pubout`)"
        )
    try:
        key = load_pem_public_key(data)
    except (ValueError, TypeError):
        key = None
    if not isinstance(key, Ed25519PublicKey):
        raise KeyFileError(
            f"{where} is not an Ed25519 public key in PEM (SubjectPublicKeyInfo): write "
            "pending-actions' with `openssl pkey -in <private key> -pubout`"
        )
    return key


def _read(path: Path, where: str) -> bytes:
    try:
        with path.open("rb") as file:
            return file.read(MAX_KEY_FILE_BYTES + 1)
    except OSError as error:
        raise KeyFileError(f"cannot read {where}: {error.strerror}") from error


def load_signing_key(data_dir: Path, configured: Path | None = None) -> Ed25519PrivateKey:
    """``configured`` (``MESH_APPROVAL_SIGNING_KEY_FILE``), else the key pair in ``data_dir``,
    made when missing. OSError: ``data_dir`` cannot be written."""
    if configured is not None:
        return read_signing_key(configured, SIGNING_KEY_ENV)
    path = data_dir / SIGNING_KEY_FILE
    if not path.exists():
        private_dir(data_dir)
        _write_aside(path, signing_pem(Ed25519PrivateKey.generate()), 0o600, replace=False)
    key = read_signing_key(path)
    public = public_pem(key.public_key())
    target = data_dir / PUBLIC_KEY_FILE
    if not target.exists() or target.read_bytes() != public:
        # Written again when it is not this key's (a signing key replaced by hand): the
        # private key decides, and the servers of this DATA_DIR check with what it signs.
        _write_aside(target, public, 0o600, replace=True)
    return key


def _write_aside(path: Path, data: bytes, mode: int, *, replace: bool) -> None:
    """``path`` with ``data``, written aside, then renamed into place (``replace``) or linked
    unless another process made it first (then theirs stands): another server starting at
    the same moment sees no file or a whole one, never a part of one."""
    draft = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(fd, "wb") as out:
            os.fchmod(out.fileno(), mode)  # exactly this mode, whatever the umask
            out.write(data)
        if replace:
            draft.replace(path)
        else:
            with contextlib.suppress(FileExistsError):  # theirs is the key
                os.link(draft, path)
    finally:
        draft.unlink(missing_ok=True)


def signing_key(settings: SigningSettings) -> Ed25519PrivateKey:
    """``load_signing_key`` for pending-actions starting: a bad key file or an unwritable
    ``DATA_DIR`` stops startup with what to do (``meshkit.settings.fail``)."""
    data_dir, configured = settings.data_dir, settings.approval_signing_key_file
    try:
        return load_signing_key(data_dir, configured)
    except KeyFileError as error:
        fail(str(error) if configured else f"{error} (or delete it and start again)")
    except OSError as error:
        fail(
            f"cannot write the approval key pair in {data_dir} ({error.strerror}): "
            f"make DATA_DIR writable, or set {SIGNING_KEY_ENV}"
        )


def public_key(settings: ApprovalSettings) -> PublicKeySource:
    """What a confirm server checks tokens with: ``MESH_APPROVAL_PUBLIC_KEY_FILE`` read now
    (missing or not a public key: startup stops naming it), else the file pending-actions
    writes in ``DATA_DIR``, read when a token is checked (KeyFileError while there is none)."""
    configured = settings.approval_public_key_file
    if configured is None:
        default = settings.data_dir / PUBLIC_KEY_FILE
        return lambda: read_public_key(default)
    try:
        key = read_public_key(configured, PUBLIC_KEY_ENV)
    except KeyFileError as error:
        fail(str(error))
    return lambda: key
