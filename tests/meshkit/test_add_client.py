"""`make client` (clawmesh client: meshkit.add_client) binds a new credential to one agent and one
user, and is how an entry from before bindings is replaced."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from meshkit.client_file import read_client_file
from meshkit.credentials import Binding, new_client, parse_clients, token_digest

FLEET = "agents:\n  clawdia: {timezone: Europe/Berlin}\n  ops: {}\n"


def add_client(
    tmp_path: Path, *args: str, clients: str = "", registry: Path | None = None
) -> subprocess.CompletedProcess[str]:
    (tmp_path / "agents.yaml").write_text(FLEET, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MESH_", "CLAWMESH_"))}
    env |= {"CLAWMESH_AGENTS": str(tmp_path / "agents.yaml"), "MESH_CLIENTS": clients}
    if registry is not None:
        env["CLAWMESH_REGISTRY"] = str(registry)
    return subprocess.run(
        [Path(sys.executable).with_name("clawmesh"), "client", *args],
        cwd=tmp_path,  # no .env of the checkout
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_new_client_is_bound_to_its_agent_and_user_and_replaces_an_unbound_entry(
    tmp_path: Path,
) -> None:
    _, kept = new_client("script", Binding("ops", "1002"), ["read"])
    old = f"desk:read+producer:sha256:{'0' * 64}"
    stale = f"laptop:read:sha256:{'1' * 64}"
    result = add_client(
        tmp_path,
        "desk",
        "--agent",
        "clawdia",
        "--user",
        "1001",
        clients=f"{kept.entry()},{old},{stale}",
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    token = lines[1].strip()
    line = lines[-1].strip().removeprefix("MESH_CLIENTS=")
    clients = parse_clients(line)  # what a server reads back
    assert [c.name for c in clients] == ["script", "desk"]
    desk = clients[1]
    assert desk.digest == token_digest(token)  # the entry admits the token printed
    assert desk.binding == Binding("clawdia", "1001")
    assert desk.scopes == ("read", "producer")
    assert "for user 1001 of agent clawdia" in lines[0]
    assert "dropped client 'laptop', bound to no one" in result.stderr
    assert "'desk'" not in result.stderr  # the one being made again is simply replaced


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["--agent", "nobody", "--user", "1001"],
            "AGENT 'nobody' is not an agent of ",
        ),
        (
            ["--agent", "clawdia", "--user", "@alice"],
            "user '@alice' is not a Telegram user id: give the number, as in config/agents.yaml",
        ),
    ],
    ids=["unknown-agent", "user-not-a-number"],
)
def test_a_bad_agent_or_user_is_named_in_one_line(
    tmp_path: Path, args: list[str], expected: str
) -> None:
    result = add_client(tmp_path, "desk", *args)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("Error: ")
    assert expected in lines[0]
    assert result.stdout == ""


def test_with_out_it_writes_the_client_file_clawmesh_mcp_reads_with_the_token_in_a_private_file(
    tmp_path: Path,
) -> None:
    (tmp_path / "registry.yaml").write_text(
        "servers:\n"
        "  weather: {url: '${WEATHER_URL:-http://weather:8101/mcp}', auth: mesh}\n"
        "  memory: {role: memory, url: 'http://memory:8104/mcp', auth: mesh}\n"
        "  pending-actions: {role: pending-actions, url: 'http://pa:8105/mcp', auth: mesh}\n"
        "  telegram-io: {role: telegram-io, url: 'http://tio:8106/mcp', auth: mesh}\n"
        "  notes: {url: 'https://notes.example.com/mcp', token: abc}\n",
        encoding="utf-8",
    )
    result = add_client(
        tmp_path,
        *("claude-desktop", "--agent", "clawdia", "--user", "1001"),
        *("--out", "clients", "--host", "pi.local"),
        registry=tmp_path / "registry.yaml",
    )
    assert result.returncode == 0, result.stderr
    token = result.stdout.splitlines()[1].strip()
    assert parse_clients(result.stdout.splitlines()[-1].split("=", 1)[1])[0].digest == (
        token_digest(token)
    )
    assert "clawmesh mcp " in result.stdout
    client, read = read_client_file(tmp_path / "clients" / "claude-desktop.yaml")
    assert read == token
    assert client.client == "claude-desktop"
    assert client.speaks_for == "1001@clawdia"
    assert client.servers == {  # the servers with client tools, their ports on the host given
        "weather": "http://pi.local:8101/mcp",
        "memory": "http://pi.local:8104/mcp",
    }
    assert (tmp_path / "clients" / "claude-desktop.token").stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "clients").stat().st_mode & 0o777 == 0o700
    assert token not in (tmp_path / "clients" / "claude-desktop.yaml").read_text()


def test_the_client_file_lists_each_capability_published_on_a_port_of_its_own(
    tmp_path: Path,
) -> None:
    (tmp_path / "registry.yaml").write_text(
        "capabilities: http\nservers:\n  weather: {url: 'http://weather:8101/mcp', auth: mesh}\n",
        encoding="utf-8",
    )
    (tmp_path / "capabilities.yaml").write_text(  # as clawmesh capability add writes them
        "servers:\n"
        "  git:\n    package: mcp-server-git==2026.10.19\n    port: 8121\n"
        "  fetch:\n    package: mcp-server-fetch==2026.10.24\n    egress: true\n",
        encoding="utf-8",
    )
    result = add_client(
        tmp_path,
        *("claude-desktop", "--agent", "clawdia", "--user", "1001", "--out", "clients"),
        registry=tmp_path / "registry.yaml",
    )
    assert result.returncode == 0, result.stderr
    client, _ = read_client_file(tmp_path / "clients" / "claude-desktop.yaml")
    assert client.servers == {  # fetch publishes no port: no client reaches it over HTTP
        "weather": "http://127.0.0.1:8101/mcp",
        "git": "http://127.0.0.1:8121/mcp",
    }
