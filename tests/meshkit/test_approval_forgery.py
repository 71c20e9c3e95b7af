"""Only pending-actions can approve (issue 22): a process holding every secret a confirm
server holds cannot make a token that another server accepts, while a tap on pending-actions
does. Every server is a real process with the environment compose gives it: pending-actions
the signing key file, each confirm server the public key file and a data directory of its
own, and no server the orchestrator's token (only its digest)."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from mcp.types import CallToolResult

from fakes.approval_keys import write_public_key, write_signing_key
from fakes.serving import ServerProcess, sdk_client
from meshkit.credentials import token_digest

pytestmark = pytest.mark.anyio

TOKEN = "approval-forgery-orchestrator-token-0123456789"
FORGER = Path(__file__).with_name("approval_forger.py")
AGENT = "clawdia"
WHERE = {"agent": AGENT, "chat_id": "42"}


@dataclass
class Mesh:
    pending: ServerProcess
    shopping: ServerProcess  # the one broken into
    targets: dict[str, ServerProcess]  # calendar, memory
    public_key: Path


def _confirm_server(module: str, data_dir: Path, public_key: Path, **env: str) -> ServerProcess:
    """As compose starts one: the token's digest, the public key file, its own DATA_DIR."""
    env = {**env, "MESH_APPROVAL_PUBLIC_KEY_FILE": str(public_key)}
    digest = token_digest(TOKEN)
    return ServerProcess(module, data_dir, "", command=None, MESH_TOKEN_SHA256=digest, **env)


@pytest.fixture(scope="module")
def mesh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mesh]:
    root = tmp_path_factory.mktemp("forgery")
    key = Ed25519PrivateKey.generate()
    public_key = write_public_key(root / "public", key)
    signing_key = write_signing_key(root / "pending-actions-secrets", key)
    pending = ServerProcess(
        "mcp_pending_actions",
        root / "pending-actions",
        "",  # no MESH_TOKEN
        MESH_TOKEN_SHA256=token_digest(TOKEN),
        MESH_APPROVAL_SIGNING_KEY_FILE=str(signing_key),
    )
    shopping = _confirm_server(
        "mcp_shopping", root / "shopping", public_key, SHOPPING_EXAMPLE_AGENT=""
    )
    targets = {
        "calendar": _confirm_server(
            "mcp_calendar", root / "calendar", public_key, CALENDAR_TIMEZONE="Europe/Berlin"
        ),
        "memory": _confirm_server("mcp_memory", root / "memory", public_key),
    }
    started = [pending, shopping, *targets.values()]
    try:
        yield Mesh(pending, shopping, targets, public_key)
    finally:
        for server in started:
            server.stop()


def _text(result: CallToolResult) -> str:
    return " ".join(getattr(part, "text", "") for part in result.content)


async def _call(url: str, tool: str, arguments: dict[str, Any]) -> CallToolResult:
    async with sdk_client(f"{url}/mcp", TOKEN) as client:
        return await client.call_tool(tool, arguments)


async def _structured(url: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await _call(url, tool, arguments)
    assert not result.is_error, _text(result)
    structured: dict[str, Any] | None = result.structured_content
    assert structured is not None
    return structured


PROPOSE = {
    "calendar": ("propose_event_add", {"title": "Dentist", "start": "2030-05-14T15:00"}),
    "memory": ("propose_remember", {"text": "Has a dog called Rex", "user": "7001"}),
}


def _forge(shopping: ServerProcess, request: dict[str, Any]) -> list[tuple[str, str]]:
    """What the broken-into shopping server makes of its secrets: (how, token) pairs."""
    made = subprocess.run(
        [sys.executable, str(FORGER)],
        input=json.dumps(request),
        env=shopping.env,  # exactly what the shopping server was given
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return [(how, token) for how, token in json.loads(made.stdout)]


async def _done(target: str, url: str) -> list[str]:
    """What the target holds: the calendar's events that day, memory's remembered notes."""
    if target == "calendar":
        day = await _structured(url, "get_events", {"start": "2030-05-14"})
        return [event["title"] for event in day["events"]]
    listed = await _structured(url, "list_memories", {"agent": AGENT, "user": "7001"})
    return [memory["text"] for memory in listed["memories"]]


@pytest.mark.parametrize("target", ["calendar", "memory"])
async def test_a_process_with_every_secret_of_a_confirm_server_makes_no_token_another_accepts(
    mesh: Mesh, target: str
) -> None:
    mesh.shopping.ready()
    url = mesh.targets[target].ready()
    tool, arguments = PROPOSE[target]
    proposal = await _structured(url, tool, {**arguments, "agent": AGENT})
    kind, payload = proposal["kind"], proposal["payload"]
    request = {
        "server": target,
        "kind": kind,
        "payload": payload,
        "agent": AGENT,
        "action_id": f"act_{secrets.token_hex(6)}",
    }

    forged = _forge(mesh.shopping, request)
    async with sdk_client(f"{url}/mcp", TOKEN) as client:
        answers = [
            (how, await client.call_tool(f"confirm_{kind}", {"payload": payload, "approval": t}))
            for how, t in forged
        ]

    hows = [how for how, _ in forged]
    assert f"v3 HMAC keyed with {mesh.public_key}" in hows  # the public key, tried as a secret
    assert f"Ed25519 key from {mesh.public_key} (stripped)" in hows
    assert "meshkit ApprovalSigner with a key pair made in DATA_DIR" in hows
    accepted = [how for how, result in answers if not result.is_error]
    assert accepted == [], f"{target} accepted a forged token"
    for how, result in answers:
        assert "Nothing was changed" in _text(result), how
    assert await _done(target, url) == []

    # The same change, approved by a tap on pending-actions, is made.
    pending = mesh.pending.ready()
    staging = {**WHERE, "server": target, "proposal": proposal, "message_key": "k9"}
    staged = await _structured(pending, "stage", staging)
    tap = {**WHERE, "action_id": staged["action_id"], "user_id": "7001", "message_key": "k9"}
    decision = await _structured(pending, "approve", tap)
    approved = {"payload": decision["payload"], "approval": decision["approval"]}
    done = await _structured(url, f"confirm_{kind}", approved)

    assert done["replayed"] is False
    assert len(await _done(target, url)) == 1
