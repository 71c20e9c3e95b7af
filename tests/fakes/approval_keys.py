"""The approval key pair of the tests: pending-actions' signing key, written where a test
server reads it, and tokens minted with it as pending-actions mints them on a tap."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from meshkit.approval_keys import public_pem, signing_pem
from meshkit.proposals import ApprovalSigner

# Fixed, so a token minted in one place of a test checks in another.
SIGNING_KEY = Ed25519PrivateKey.from_private_bytes(hashlib.sha256(b"clawmesh tests").digest())
PUBLIC_KEY = SIGNING_KEY.public_key()
SIGNING_ENV = "MESH_APPROVAL_SIGNING_KEY_FILE"
PUBLIC_ENV = "MESH_APPROVAL_PUBLIC_KEY_FILE"


def signer(clock: Callable[[], float]) -> ApprovalSigner:
    """Mints as pending-actions does, with the tests' signing key."""
    return ApprovalSigner(SIGNING_KEY, clock=clock)


def write_public_key(directory: Path, key: Ed25519PrivateKey = SIGNING_KEY) -> Path:
    """``key``'s public half as a confirm server reads it (MESH_APPROVAL_PUBLIC_KEY_FILE)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "approval_public_key.pem"
    path.write_bytes(public_pem(key.public_key()))
    return path


def write_signing_key(directory: Path, key: Ed25519PrivateKey = SIGNING_KEY) -> Path:
    """``key`` as pending-actions reads it (MESH_APPROVAL_SIGNING_KEY_FILE), mode 0600."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "approval_signing_key.pem"
    path.write_bytes(signing_pem(key))
    path.chmod(0o600)
    return path
