"""A confirm server broken into, trying to approve a change on another server.

    python approval_forger.py < request.json > tokens.json

Run with exactly the environment a confirm server gets (its DATA_DIR, the public key file):
it gathers every secret it can reach (environment values, the files they name, every file
in its DATA_DIR) and makes every token it can from them for the change the request names
(``{"server", "kind", "payload", "agent", "action_id"}``): HMAC tokens (v2, and v3 shapes)
keyed with each, Ed25519 signatures with anything that loads as a private key, and a token
from meshkit's own API, with the key pair that API makes where this server may write.
It prints ``[[how, token], ...]``; test_approval_forgery shows every one is refused.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key

from meshkit.proposals import payload_hash

MAX_FILE = 1 << 20


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def secrets_within_reach() -> dict[str, bytes]:
    """Every value of the environment, every file one names, every file in DATA_DIR."""
    found: dict[str, bytes] = {}
    paths: list[Path] = []
    for name, value in os.environ.items():
        found[f"${name}"] = value.encode()
        if value.startswith("/") and Path(value).is_file():
            paths.append(Path(value))
    data_dir = Path(os.environ.get("DATA_DIR", "data"))
    if data_dir.is_dir():
        paths += [path for path in sorted(data_dir.rglob("*")) if path.is_file()]
    for path in paths:
        with contextlib.suppress(OSError):
            content = path.read_bytes()[:MAX_FILE]
            found[str(path)] = content
            found[f"{path} (stripped)"] = content.strip()
    return found


def hmac_token(key: bytes, version: str, request: dict[str, Any], expiry: int) -> str:
    parts = [
        version,
        request["action_id"],
        request["agent"],
        request["server"],
        request["kind"],
        payload_hash(request["payload"]),
        expiry,
    ]
    message = json.dumps(parts, ensure_ascii=False, separators=(",", ":")).encode()
    mac = hmac.new(key, message, hashlib.sha256).digest()
    return f"{version}.{request['action_id']}.{expiry}.{_b64(mac)}"


def signed_token(key: Ed25519PrivateKey, request: dict[str, Any], expiry: int) -> str:
    parts = [
        "v3",
        request["action_id"],
        request["agent"],
        request["server"],
        request["kind"],
        payload_hash(request["payload"]),
        expiry,
    ]
    message = json.dumps(parts, ensure_ascii=False, separators=(",", ":")).encode()
    return f"v3.{request['action_id']}.{expiry}.{_b64(key.sign(message))}"


def as_private_keys(material: bytes) -> list[Ed25519PrivateKey]:
    """Whatever in ``material`` can be taken for an Ed25519 private key."""
    keys = []
    with contextlib.suppress(Exception):
        key = load_pem_private_key(material, password=None)
        if isinstance(key, Ed25519PrivateKey):
            keys.append(key)
    if len(material) >= 32:  # any 32 bytes are a seed: the raw public key's, a file's
        keys.append(Ed25519PrivateKey.from_private_bytes(material[-32:]))
    return keys


def with_meshkit(request: dict[str, Any], expiry: int) -> list[list[str]]:
    """The approval API a confirm server's code can reach, in this environment."""
    tokens: list[list[str]] = []
    try:
        from meshkit.approval_keys import signing_key
        from meshkit.proposals import ApprovalSigner
        from meshkit.settings import SigningSettings
    except ImportError:
        return tokens
    # A key pair of its own, made in the DATA_DIR this server may write.
    key = signing_key(SigningSettings())
    token = ApprovalSigner(key, clock=lambda: expiry - 300).mint(
        request["action_id"],
        request["server"],
        request["kind"],
        request["payload"],
        agent=request["agent"],
    )
    tokens.append(["meshkit ApprovalSigner with a key pair made in DATA_DIR", token])
    return tokens


def main() -> None:
    request = json.load(sys.stdin)
    expiry = int(time.time()) + 300
    tokens: list[list[str]] = []
    for where, material in secrets_within_reach().items():
        if not material:
            continue
        for version in ("v2", "v3"):
            tokens.append(
                [
                    f"{version} HMAC keyed with {where}",
                    hmac_token(material, version, request, expiry),
                ]
            )
        for key in as_private_keys(material):
            tokens.append([f"Ed25519 key from {where}", signed_token(key, request, expiry)])
    tokens += with_meshkit(request, expiry)
    json.dump(tokens, sys.stdout)


if __name__ == "__main__":
    main()
