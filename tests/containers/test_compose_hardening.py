"""compose.yaml, as Compose v2 resolves it, holds every service to the hardening rules:
a service added without the shared template fails here (``docker compose config``). The
stack is resolved with two capabilities (``CAPABILITIES``: their services generated from a
registry of the test's own, as make up generates them), so each rule holds for those too."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from containers.stack import ROOT, compose_command, config
from fakes.checkout import shipped
from meshkit.secret_files import BOT_TOKENS, make_secrets, relay_servers
from orchestrator.cli import stack_file
from orchestrator.cli.compose import STACK_FILE

# What the orchestrator's SHUTDOWN_GRACE_S gives a turn in flight.
SHUTDOWN_GRACE_S = 20
EGRESS = {"orchestrator", "telegram-io", "weather", "fetch"}  # fetch: its entry says egress
STATELESS = {"weather"}
# As a user's .env has them, and as a shell may export them: none may reach compose's output.
ENV = {
    "MESH_TOKEN": "static-mesh-token-of-old",
    "MESH_APPROVAL_KEY": "static-approval-key-of-old",
    "OPENAI_API_KEY": "sk-static-0123456789",
    "TELEGRAM_BOT_TOKEN": "1:static-0123456789",
    "CLAWDIA_BOT_TOKEN": "2:static-0123456789",
}
SECRET_NAMES = re.compile(r"(TOKEN|KEY|SECRET|PASSWORD|CREDENTIAL)S?$")
GATEWAY = "gateway"
CAPABILITY_NAMES = ("fetch", "notes")

pytestmark = pytest.mark.skipif(compose_command() is None, reason="no Compose v2 here")


# Two capabilities, as clawmesh capability add writes them (their locks are never read here).
CAPABILITIES = """servers:
  fetch:
    package: mcp-server-fetch==2026.10.24
    egress: true
    debian: [git, ca-certificates]
  notes:
    package: clawmesh-plain-notes==1.0.0
    command: [plain-notes]
    args: [notes.json]
    data: true
    memory: 128m
"""


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """compose.capabilities.yaml for ``CAPABILITIES``, beside a copy of the shipped config."""
    config_dir = shipped(tmp_path_factory.mktemp("project"), "config") / "config"
    (config_dir / "capabilities.yaml").write_text(CAPABILITIES)
    (config_dir / "capabilities").mkdir(exist_ok=True)
    for name in ("fetch", "notes"):
        (config_dir / "capabilities" / f"{name}.lock").write_text("# a lock\n")
    made = config_dir.parent / STACK_FILE
    made.write_text(stack_file.render(ROOT, config_dir / "mcp_servers.yaml", {}))
    return made


@pytest.fixture(scope="module")
def resolved(generated: Path) -> dict[str, Any]:
    return config({"PATH": os.environ.get("PATH", ""), **ENV}, generated)


def services(resolved: dict[str, Any]) -> list[str]:
    return sorted(resolved["services"])


def with_confirm_tools() -> set[str]:
    """The servers that declare confirm tools: their settings check signed approvals
    (``ApprovalSettings``), whether each tool is written out or made by the consent kernel.
    The gateway's are each capability's."""
    found = {
        path.name
        for path in (ROOT / "servers").iterdir()
        if any("(ApprovalSettings)" in src.read_text() for src in path.glob("src/*/settings.py"))
    }
    return (found - {GATEWAY}) | set(CAPABILITY_NAMES) if GATEWAY in found else found


def duration_s(value: str | int) -> float:
    if isinstance(value, int):
        return value / 1e9  # compose writes nanoseconds
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3}
    return sum(float(n) * units[u] for n, u in re.findall(r"([\d.]+)(ms|h|m|s)", value))


def test_the_stack_has_every_component_as_a_service(resolved: dict[str, Any]) -> None:
    servers = {p.name for p in (ROOT / "servers").iterdir() if (p / "pyproject.toml").is_file()}
    # The gateway is no service of its own: each capability is one, built on it.
    expected = (servers - {GATEWAY}) | {"orchestrator", *CAPABILITY_NAMES}
    assert set(resolved["services"]) == expected


def test_every_service_runs_read_only_as_non_root_without_capabilities(
    resolved: dict[str, Any],
) -> None:
    for name, service in resolved["services"].items():
        assert service.get("read_only") is True, name
        assert any(t.split(":")[0] == "/tmp" for t in service.get("tmpfs", [])), name
        assert service.get("cap_drop") == ["ALL"], name
        assert not service.get("cap_add"), name
        assert "no-new-privileges:true" in service.get("security_opt", []), name
        user = str(service.get("user", "0")).split(":")[0]
        assert user not in {"", "0", "root"}, name
        assert not service.get("privileged"), name


def test_every_service_has_limits_a_healthcheck_and_a_restart_policy(
    resolved: dict[str, Any],
) -> None:
    for name, service in resolved["services"].items():
        assert int(service.get("mem_limit", 0)) > 0, name
        assert float(service.get("cpus", 0)) > 0, name
        assert int(service.get("pids_limit", 0)) > 0, name
        check = service.get("healthcheck", {})
        assert check.get("test"), name
        assert not check.get("disable"), name
        assert service.get("restart") == "unless-stopped", name
        assert service.get("init") is True, name  # SIGTERM reaches the Python process
        assert duration_s(service.get("stop_grace_period", "10s")) > SHUTDOWN_GRACE_S, name


def test_every_healthcheck_runs_the_probe_script_without_site_packages(
    resolved: dict[str, Any],
) -> None:
    # It runs every interval inside the service's CPU quota: importing the settings through
    # pydantic cost 300 ms of CPU a probe (meshkit/healthcheck.py says more).
    dockerfile = (ROOT / "containers" / "Dockerfile").read_text()
    assert "COPY meshkit/src/meshkit/healthcheck.py /app/healthcheck.py\n" in dockerfile
    for name, service in resolved["services"].items():
        test = service["healthcheck"]["test"]
        assert test == ["CMD", "python", "-I", "-S", "/app/healthcheck.py"], name
        # Unhealthy after as long a run of failures as before (3 probes 10 s apart).
        check = service["healthcheck"]
        assert duration_s(check["interval"]) * check["retries"] >= 30, name


def test_no_service_publishes_a_port(resolved: dict[str, Any]) -> None:
    for name, service in resolved["services"].items():
        assert not service.get("ports"), name


def test_every_service_is_on_the_internal_mesh_and_only_some_reach_out(
    resolved: dict[str, Any],
) -> None:
    networks = resolved["networks"]
    assert networks["mesh"].get("internal") is True
    assert not networks["egress"].get("internal")
    for name, service in resolved["services"].items():
        joined = set(service.get("networks", {}))
        assert "mesh" in joined, name
        assert joined <= {"mesh", "egress"}, name
        assert ("egress" in joined) == (name in EGRESS), name


def test_only_the_orchestrator_may_name_the_host_for_an_llm_served_there(
    resolved: dict[str, Any],
) -> None:
    # docs/operations.md: OPENAI_BASE_URL=http://host.docker.internal:11434/v1 on Linux too.
    for name, service in resolved["services"].items():
        # Compose v2 resolves each entry to "name=address" (older releases: "name:address").
        hosts = {re.split("[=:]", entry, maxsplit=1)[0] for entry in service.get("extra_hosts", [])}
        assert hosts == ({"host.docker.internal"} if name == "orchestrator" else set()), name


def test_the_local_calendar_is_on_the_internal_network_only(resolved: dict[str, Any]) -> None:
    calendar = resolved["services"]["calendar"]
    assert calendar["environment"]["CALENDAR_BACKEND"] == "local"
    assert set(calendar["networks"]) == {"mesh"}


def test_every_stateful_service_keeps_data_in_a_named_volume(resolved: dict[str, Any]) -> None:
    for name, service in resolved["services"].items():
        if name in STATELESS:
            continue
        data = [v for v in service.get("volumes", []) if v.get("target") == "/data"]
        assert data, name
        assert data[0]["type"] == "volume", name
        assert data[0]["source"], name


def test_the_orchestrator_starts_after_every_server_is_healthy(resolved: dict[str, Any]) -> None:
    depends = resolved["services"]["orchestrator"].get("depends_on", {})
    others = set(resolved["services"]) - {"orchestrator"}
    assert set(depends) == others
    assert all(d["condition"] == "service_healthy" for d in depends.values())


def mounted(service: dict[str, Any]) -> dict[str, str]:
    """A service's secrets: target (under /run/secrets) → the top-level secret's name."""
    return {s["target"]: s["source"] for s in service.get("secrets", [])}


def test_no_secret_is_in_any_environment_or_in_the_resolved_configuration(
    resolved: dict[str, Any],
) -> None:
    text = json.dumps(resolved)
    for value in ENV.values():
        assert value not in text
    for name, service in resolved["services"].items():
        env = service.get("environment") or {}
        assert not service.get("env_file"), name  # .env whole would hand out every secret
        assert [key for key in env if SECRET_NAMES.search(key)] == [], name
        for key, path in env.items():  # every *_FILE names a secret this service mounts
            if key.endswith("_FILE"):
                assert path.removeprefix("/run/secrets/") in mounted(service), (name, key)


def test_each_service_mounts_only_its_own_secrets(
    resolved: dict[str, Any], generated: Path
) -> None:
    checkers = with_confirm_tools()
    for name, service in resolved["services"].items():
        sources = set(mounted(service).values())
        if name == "orchestrator":
            assert sources == {"mesh-credentials", "openai-api-key"}
            continue
        # A server: the digest of the orchestrator's credential for it, its own only.
        expected = {f"{name}-digest"}
        if name in checkers:  # and it stages its bound clients' proposals with its own token
            expected |= {"approval-public-key", f"{name}-relay-token"}
        if name == "pending-actions":
            expected |= {"approval-signing-key", "mesh-peers"}
        if name == "telegram-io":
            expected |= {"bot-tokens"}
        if name in CAPABILITY_NAMES:  # its entry's env: values, for its gateway
            expected |= {f"{name}-env"}
        assert sources == expected, name
        assert mounted(service)["mesh_token_sha256"] == f"{name}-digest", name
    assert "pending-actions" not in checkers  # it signs; the others only check
    # make up writes a relay token for each server the registry lets propose
    registry = generated.parent / "config" / "mcp_servers.yaml"
    assert checkers == set(relay_servers(registry, {}))


def test_the_bot_tokens_are_one_secret_mounted_in_telegram_io_alone(
    resolved: dict[str, Any],
) -> None:
    # A new agent's token (clawmesh agent init) reaches telegram-io through this one file:
    # no per-agent secret to add here.
    holders = [n for n, s in resolved["services"].items() if "bot-tokens" in mounted(s).values()]
    assert holders == ["telegram-io"]
    telegram_io = resolved["services"]["telegram-io"]
    assert mounted(telegram_io)["bot_tokens"] == "bot-tokens"
    assert telegram_io["environment"]["TELEGRAM_BOT_TOKENS_FILE"] == "/run/secrets/bot_tokens"
    assert Path(resolved["secrets"]["bot-tokens"]["file"]).name == BOT_TOKENS
    assert not [s for s in resolved["secrets"] if s.endswith("-bot-token")]


def test_each_server_with_confirm_tools_knows_where_pending_actions_is(
    resolved: dict[str, Any],
) -> None:
    for name in with_confirm_tools():
        env = resolved["services"][name]["environment"]
        assert env["MESH_RELAY_URL"] == "http://pending-actions:8105/mcp", name
        assert env["MESH_RELAY_TOKEN_FILE"] == "/run/secrets/relay_token", name
    peers = resolved["services"]["pending-actions"]["environment"]["MESH_PEERS_FILE"]
    assert peers == "/run/secrets/mesh_peers"


def test_every_secret_file_compose_names_is_one_make_up_writes(
    resolved: dict[str, Any], generated: Path, tmp_path: Path
) -> None:
    secrets_dir = tmp_path / "secrets"
    env = {"PATH": os.environ.get("PATH", ""), **ENV, "CLAWMESH_SECRETS": str(secrets_dir)}
    make_secrets(secrets_dir, generated.parent / "config" / "mcp_servers.yaml", env)
    files = {name: Path(s["file"]) for name, s in config(env, generated)["secrets"].items()}
    assert set(files) == set(resolved["secrets"])
    assert all(path.parent == secrets_dir and path.is_file() for path in files.values()), files
    assert files["openai-api-key"].read_text().strip() == ENV["OPENAI_API_KEY"]
    assert f"TELEGRAM_BOT_TOKEN {ENV['TELEGRAM_BOT_TOKEN']}\n" in files["bot-tokens"].read_text()
    assert secrets_dir.stat().st_mode & 0o777 == 0o700


def test_every_image_is_built_from_the_shared_dockerfile_with_its_own_package(
    resolved: dict[str, Any],
) -> None:
    dockerfile = (ROOT / "containers" / "Dockerfile").read_text()
    for name, service in resolved["services"].items():
        build = service["build"]
        assert Path(build["dockerfile"]).name == "Dockerfile", name
        assert f"AS {build['target']}\n" in dockerfile, name
        assert build["args"]["PACKAGE"], name


def test_the_google_calendar_overlay_mounts_only_its_credentials_read_only() -> None:
    google = config(
        {"PATH": os.environ.get("PATH", ""), **ENV}, ROOT / "compose.calendar-google.yaml"
    )
    calendar = google["services"]["calendar"]
    assert calendar["environment"]["CALENDAR_BACKEND"] == "google"
    credentials = [v for v in calendar["volumes"] if v["target"] == "/credentials"]
    assert [v["type"] for v in credentials] == ["bind"]
    assert credentials[0]["read_only"] is True
    assert calendar["environment"]["CALENDAR_CREDENTIALS_DIR"] == "/credentials"
    assert calendar["read_only"] is True  # the template still applies
    assert set(calendar["networks"]) == {"mesh", "egress"}  # Google is on the internet
    others = {name: s for name, s in google["services"].items() if name != "calendar"}
    assert all(
        all(v.get("target") != "/credentials" for v in s.get("volumes", []))
        for s in others.values()
    )


def test_compose_reads_no_variable_that_only_make_sets() -> None:
    # Plain `docker compose ...` after make up must resolve as make up did: what compose
    # reads comes from .env or a file, never from a variable the Makefile exports.
    makefile = (ROOT / "Makefile").read_text()
    exported = set(re.findall(r"^export ([A-Z_][A-Z0-9_]*)", makefile, re.MULTILINE))
    assert "ARCH" in exported  # the Makefile's own use (containers/wheels.sh)
    for file in (ROOT / "compose.yaml", ROOT / "compose.calendar-google.yaml"):
        read = set(re.findall(r"\$\{([A-Z_][A-Z0-9_]*)", file.read_text()))
        assert not read & exported, (file.name, read & exported)


def test_only_the_images_that_keep_data_declare_a_data_volume() -> None:
    dockerfile = (ROOT / "containers" / "Dockerfile").read_text()
    stages = dict(re.findall(r"^FROM \S+ AS (\S+)\n(.*?)(?=^FROM |\Z)", dockerfile, re.M | re.S))
    declaring = {name for name, body in stages.items() if 'VOLUME ["/data"]' in body}
    assert declaring
    assert not declaring & (STATELESS | {"build", "runtime"}), declaring


def test_a_capabilitys_service_is_generated_from_its_entry_alone(resolved: dict[str, Any]) -> None:
    fetch, notes = resolved["services"]["fetch"], resolved["services"]["notes"]
    assert set(fetch["networks"]) == {"mesh", "egress"}  # egress: true
    assert set(notes["networks"]) == {"mesh"}  # the default: no internet
    assert int(notes["mem_limit"]) == 128 * 2**20  # memory: 128m
    assert notes["environment"]["GATEWAY_WORKDIR"] == "/data/server"  # data: true
    assert "GATEWAY_WORKDIR" not in fetch["environment"]
    assert json.loads(notes["environment"]["GATEWAY_COMMAND"]) == [
        "/opt/capability/bin/plain-notes",
        "notes.json",
    ]
    assert json.loads(fetch["environment"]["GATEWAY_COMMAND"]) == [
        "/opt/capability/bin/mcp-server-fetch"
    ]
    for name, service in (("fetch", fetch), ("notes", notes)):
        assert service["build"]["target"] == "capability", name
        assert service["build"]["args"] == {
            "BASE_IMAGE": "python:3.11-slim-bookworm",
            "PACKAGE": "mcp-gateway",
            "CAPABILITY": name,
            "DEBIAN_PACKAGES": "git ca-certificates" if name == "fetch" else "",
        }, name
        assert [v["target"] for v in service["volumes"]] == ["/data"], name
        depends = resolved["services"]["orchestrator"]["depends_on"][name]
        assert depends["condition"] == "service_healthy", name
        # Two processes to start: a longer grace than a first-party server's, the probe the same.
        check, weather = service["healthcheck"], resolved["services"]["weather"]["healthcheck"]
        assert duration_s(check["start_period"]) > duration_s(weather["start_period"]), name
        assert {k: v for k, v in check.items() if k != "start_period"} == {
            k: v for k, v in weather.items() if k != "start_period"
        }, name


def test_a_capability_with_a_port_is_published_for_clients_as_the_mesh_s_own_servers_are(
    tmp_path: Path,
) -> None:
    config_dir = shipped(tmp_path, "config") / "config"
    (config_dir / "capabilities.yaml").write_text(CAPABILITIES + "    port: 8121\n")
    (config_dir / "capabilities").mkdir(exist_ok=True)
    for name in CAPABILITY_NAMES:
        (config_dir / "capabilities" / f"{name}.lock").write_text("# a lock\n")
    made = config_dir.parent / STACK_FILE
    made.write_text(stack_file.render(ROOT, config_dir / "mcp_servers.yaml", {}))
    base = {"PATH": os.environ.get("PATH", "")}
    # With the clients overlay, as README "In Claude Desktop" has it, and without it.
    for overlay in ((ROOT / "compose.clients.example.yaml",), ()):
        resolved = config(base, made, *overlay)
        notes = resolved["services"]["notes"]
        published = notes["ports"]
        assert [(p["host_ip"], p["published"], p["target"]) for p in published] == [
            ("127.0.0.1", "8121", 8110)
        ]
        assert set(notes["networks"]) == {"mesh", "clients"}
        clients = resolved["networks"]["clients"]
        assert clients["driver_opts"] == {"com.docker.network.bridge.enable_ip_masquerade": "false"}
        assert not clients.get("internal")
        assert not resolved["services"]["fetch"].get("ports")  # no port: entry, none published
    lan = config({**base, "CLIENTS_ADDRESS": "0.0.0.0"}, made)
    assert lan["services"]["notes"]["ports"][0]["host_ip"] == "0.0.0.0"
