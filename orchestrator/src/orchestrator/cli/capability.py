"""``clawmesh capability``: any published MCP server as a capability, from one entry.

    add NAME --package SPEC [--egress] [--data] [--port N] [--command W] [--arg W]
                                           lock, start, write its entry
    list [--json]                          each capability, each tool and its class
    remove NAME                            its entry and its lock

The entries live in ``capabilities.yaml`` beside the registry (``cli/capabilities.py``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import anyio
from cyclopts import App, Parameter

from meshkit.command import Json, guarded
from orchestrator.cli import capabilities
from orchestrator.cli.mesh import fleet, settings
from orchestrator.config.registry import load_capabilities

capability_app = App(name="capability")  # its description: clawmesh's (cli/main.py)


@capability_app.command
def add(
    name: str,
    /,
    *,
    package: Annotated[str, Parameter(help="the server, e.g. mcp-server-git==2026.10.19")],
    egress: Annotated[
        bool, Parameter(negative=(), help="its container reaches the internet")
    ] = False,
    data: Annotated[bool, Parameter(negative=(), help="it keeps files (a volume)")] = False,
    memory: Annotated[str | None, Parameter(help="its container's memory limit, e.g. 384m")] = None,
    debian: Annotated[
        list[str] | None, Parameter(help="a Debian package its image needs (repeat)")
    ] = None,
    port: Annotated[
        int | None,
        Parameter(help="publish it on this machine's port for other MCP clients (make client)"),
    ] = None,
    command: Annotated[
        list[str] | None, Parameter(help="the program (default: the package)")
    ] = None,
    arg: Annotated[list[str] | None, Parameter(help="a word more for it: --arg=--flag")] = None,
    description: Annotated[str, Parameter(help="one line for the model")] = "",
    find_links: Annotated[Path | None, Parameter(help="a folder of wheels to look in too")] = None,
    as_json: Json = False,
) -> None:
    """Add a published MCP server as a capability: lock it (hashes), make its environment,
    start it and list its tools, then write its entry (comments kept)."""

    def run() -> None:
        config = settings()
        added = capabilities.add(
            config.registry,
            name,
            package,
            command=command,
            args=arg,
            egress=egress,
            data=data,
            memory=memory,
            debian=debian,
            port=port,
            description=description,
            find_links=find_links,
        )
        listed = capabilities.rows(added.tools)
        if as_json:
            print(json.dumps({"name": name, "package": added.package, "file": str(added.file),
                              "lock": str(added.lock), "tools": listed}))  # fmt: skip
            return
        print(f"Added {name} ({added.package}) to {added.file}, locked in {added.lock}:")
        _print_tools(listed)
        print("Next: restart make run or make chat, which start it here behind a gateway.")
        print("Its changes wait for your tap; agents.yaml's consent: sets a policy per tool,")
        print(f"e.g. consent: {{{name}.<tool>: auto}}.")

    guarded(run, as_json=as_json)


@capability_app.command(name="list")
def list_capabilities(*, as_json: Json = False) -> None:
    """Each capability, each tool and its class: read, change (with each agent's policy),
    or hidden and why."""

    def run() -> None:
        config = settings()
        file = capabilities.capabilities_file(config.registry)
        entries = load_capabilities(file)
        agents = fleet(config)
        found: list[dict[str, Any]] = []
        for name, entry in entries.items():

            def policy(kind: str, destructive: bool, server: str = name) -> dict[str, str]:
                return {
                    agent: "ask (always: it may destroy data)"
                    if destructive and agent_entry.policies.rule(server, kind).policy != "deny"
                    else agent_entry.policies.rule(server, kind).describe()
                    for agent, agent_entry in agents.items()
                }

            tools = anyio.run(capabilities.listing, entry)
            rows = capabilities.rows(tools, policy)
            found.append(
                {"name": name, "package": entry.package, "egress": entry.egress,
                 "port": entry.port, "tools": rows}
            )  # fmt: skip
        if as_json:
            print(json.dumps(found))
            return
        if not found:
            print(f"No capabilities in {file}: clawmesh capability add NAME --package SPEC")
        for capability in found:
            published = f", port {capability['port']}" if capability["port"] else ""
            print(f"{capability['name']} ({capability['package']}{published})")
            _print_tools(capability["tools"])

    guarded(run, as_json=as_json)


@capability_app.command
def remove(name: str, /, *, as_json: Json = False) -> None:
    """Remove a capability: its entry (comments kept) and its lock."""

    def run() -> None:
        file = capabilities.remove(settings().registry, name)
        if as_json:
            print(json.dumps({"removed": name, "file": str(file)}))
            return
        print(f"Removed {name} from {file}. Restart make run or make chat.")

    guarded(run, as_json=as_json)


def _print_tools(rows: list[dict[str, object]]) -> None:
    for row in rows:
        word = str(row["class"])
        if word == "change":
            word = "change ⚠️" if row.get("destructive") else "change"
            policies = row.get("policy")
            if isinstance(policies, dict) and policies:
                word += " (" + ", ".join(f"{a}: {p}" for a, p in policies.items()) + ")"
        elif word == "hidden":
            word = f"hidden: {row.get('why')}"
        print(f"  {row['tool']:<28} {word}")
