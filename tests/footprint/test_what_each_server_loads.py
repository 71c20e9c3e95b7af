"""Each server process loads only the client libraries it calls.

A fresh interpreter per server imports its entry point (what ``python -m mcp_<name>``
imports), builds the server from its environment as that entry point does, lists its tools
as a client sees them (as the HTTP server does at start) and prints ``sorted(sys.modules)``.
The calendar with the local backend loads no Google client (the google backend imports it
where it is built); no server loads requests, an OAuth or JWT library, the MCP client
machinery, the OpenAI client, or (telegram-io aside) the Telegram client.

The orchestrator of the container stack (every server reached by URL, config/mcp_servers.yaml)
loads fastmcp's client side only: not its server side (``fastmcp.server``, whose auth brings
joserfc), which only an in-process ``module:`` entry uses.

The embedded orchestrator (``make run``: every server of config/mcp_servers.local.yaml built
in its process) loads none of those either, the clients it uses aside, nor the HTTP serving
code of meshkit (it serves no MCP over HTTP).

rich and click are not in the lists: every server loads them through its dependencies' own
unconditional imports (fastmcp.settings imports rich.console for its log handler,
``uvicorn/__init__`` imports click for its command line), which no import of ours avoids.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from bounds.every_server import AGENTS_YAML, BOT
from fakes.approval_keys import PUBLIC_ENV, SIGNING_ENV, write_public_key, write_signing_key

PACKAGES = {
    "weather": "mcp_weather",
    "calendar": "mcp_calendar",
    "shopping": "mcp_shopping",
    "memory": "mcp_memory",
    "scheduler": "mcp_scheduler",
    "pending-actions": "mcp_pending_actions",
    "telegram-io": "mcp_telegram_io",
}
NO_SERVER_LOADS = (
    "googleapiclient",  # google-api-python-client: the calendar's google backend only
    "google.auth",
    "google.oauth2",
    "google_auth_oauthlib",
    "google_auth_httplib2",
    "httplib2",
    "requests",  # also jsonref's, when fastmcp inlines $refs (meshkit.server turns it off)
    "jsonref",
    "oauthlib",
    "requests_oauthlib",
    "authlib",
    "jwt",
    "fastmcp.client",  # a server is no MCP client (and its auth pulls beartype, key_value)
    "openai",
)
ONLY_TELEGRAM_IO = ("telegram",)
ORCHESTRATOR_USES = ("fastmcp.client", "openai", "jwt")  # jwt: fastmcp.client's own import
EMBEDDED_NEVER_LOADS = ("meshkit.serve", "meshkit.http")
CLIENT_NEVER_LOADS = ("fastmcp.server", "joserfc")  # the orchestrator reaching servers by URL
# Built, then its tools listed as a client sees them (what the HTTP server does at start).
BUILD = """\
import importlib, sys, anyio
importlib.import_module("{package}.__main__")
server = importlib.import_module("{package}.server").build_server()
anyio.run(server.list_tools)
print("\\n".join(sorted(sys.modules)))
"""

# orchestrator.__main__, then every server of the local registry built and listed in one
# process, as the embedded orchestrator builds them.
EMBEDDED = """\
import importlib, sys, anyio, yaml
importlib.import_module("orchestrator.__main__")
entries = yaml.safe_load(open({registry!r}, encoding="utf-8"))["servers"].values()
async def build():
    for entry in entries:
        module, factory = entry["module"].split(":")
        await getattr(importlib.import_module(module), factory)().list_tools()
anyio.run(build)
print("\\n".join(sorted(sys.modules)))
"""
# orchestrator.__main__, then a client for every entry of the stack's registry (all URLs).
BY_URL = """\
import importlib, sys
from pathlib import Path
from fastmcp import Client
importlib.import_module("orchestrator.__main__")
from orchestrator.config.registry import load_registry
from orchestrator.mesh.transports import transport_for
entries = load_registry(Path({registry!r}))
assert entries and all(entry.url for entry in entries.values())
clients = [Client(transport_for(entry, token="t", server=None)) for entry in entries.values()]
print("\\n".join(sorted(sys.modules)))
"""
REGISTRY = Path(__file__).resolve().parents[2] / "config" / "mcp_servers.local.yaml"
STACK_REGISTRY = REGISTRY.with_name("mcp_servers.yaml")


def _environment(tmp_path: Path, name: str) -> dict[str, str]:
    return {
        **os.environ,
        SIGNING_ENV: str(write_signing_key(tmp_path / "keys")),
        PUBLIC_ENV: str(write_public_key(tmp_path / "keys")),
        "ADA_TOKEN": BOT,
        "CLAWMESH_AGENTS": str(tmp_path / "agents.yaml"),
        "CLAWMESH_SCHEDULE": str(tmp_path / "schedule.yaml"),
        "CALENDAR_BACKEND": "local",
        "DATA_DIR": str(tmp_path / "data" / name),
        "TELEGRAM_API_BASE": "http://127.0.0.1:9/bot",  # nobody listens: built, never started
        "PTB_TIMEDELTA": "true",
    }


def _loaded(tmp_path: Path) -> dict[str, set[str]]:
    """Server name → the modules its process holds once built (the servers side by side)."""
    (tmp_path / "agents.yaml").write_text(AGENTS_YAML, encoding="utf-8")
    (tmp_path / "schedule.yaml").write_text("jobs: []\n", encoding="utf-8")
    builds = {
        name: subprocess.Popen(
            [sys.executable, "-c", BUILD.format(package=package)],
            env=_environment(tmp_path, name),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, package in PACKAGES.items()
    }
    loaded = {}
    for name, build in builds.items():
        out, err = build.communicate(timeout=120)
        assert build.returncode == 0, f"{name}: {err[-3000:]}"
        loaded[name] = set(out.split())
    return loaded


def _of(modules: set[str], packages: tuple[str, ...]) -> list[str]:
    return sorted(
        package
        for package in packages
        if any(m == package or m.startswith(package + ".") for m in modules)
    )


def test_no_server_loads_a_client_library_it_never_calls(tmp_path: Path) -> None:
    loaded = _loaded(tmp_path)
    assert all(f"{PACKAGES[name]}.server" in loaded[name] for name in PACKAGES)  # all built
    unneeded = {
        name: _of(modules, NO_SERVER_LOADS + (() if name == "telegram-io" else ONLY_TELEGRAM_IO))
        for name, modules in loaded.items()
    }
    assert {name: found for name, found in unneeded.items() if found} == {}


def test_the_embedded_orchestrator_loads_no_client_it_never_calls_nor_http_serving(
    tmp_path: Path,
) -> None:
    (tmp_path / "agents.yaml").write_text(AGENTS_YAML, encoding="utf-8")
    (tmp_path / "schedule.yaml").write_text("jobs: []\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", EMBEDDED.format(registry=str(REGISTRY))],
        env=_environment(tmp_path, "embedded"),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    modules = set(done.stdout.split())
    assert {"mcp_calendar.server", "mcp_telegram_io.server"} <= modules  # all built
    unused = tuple(p for p in NO_SERVER_LOADS if p not in ORCHESTRATOR_USES)
    assert _of(modules, unused + EMBEDDED_NEVER_LOADS) == []


def test_the_orchestrator_reaching_servers_by_url_loads_no_server_side_of_fastmcp(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", BY_URL.format(registry=str(STACK_REGISTRY))],
        env=_environment(tmp_path, "orchestrator"),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    modules = set(done.stdout.split())
    assert {"orchestrator.app", "fastmcp.client"} <= modules  # the client side is there
    assert _of(modules, CLIENT_NEVER_LOADS) == []
