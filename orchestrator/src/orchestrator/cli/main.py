"""``clawmesh``: the operator's command (a console script of the workspace and of the
orchestrator image).

    clawmesh agent init|list|status|stop|start   the fleet's agents (cli/agent.py)
    clawmesh capability add|list|remove          published MCP servers (cli/capability.py)
    clawmesh usage [--json]                       what the model cost (cli/usage.py)
    clawmesh doctor [--json]                      what breaks a deployment here (cli/doctor.py)
    clawmesh backup create|verify|restore         databases and configuration (cli/backup.py)
    clawmesh client NAME --agent A --user U       another MCP client's credential (cli/keys.py)
    clawmesh secrets                              the mesh's secret files, for make up
    clawmesh compose ...                          Docker Compose v2, wherever it is (cli/compose.py)
    clawmesh mcp CLIENT_FILE                      the mesh's tools over stdio (cli/proxy.py)
    clawmesh audit | memory | calendar | shopping
                                                  a server's own commands, on its data: the
                                                  server's package (mcp_<name>.commands),
                                                  loaded lazily

Each sub-command group is an App of its own module, added here; errors follow one form
(meshkit/command.py). A server's commands live in its package because they need its code
and its data: the workspace has every package (make run's data is here); in the containers
they run in the server's own (docker compose exec memory python -m mcp_memory export ...),
whose image carries its code, while the orchestrator's image does not.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from cyclopts import App

from meshkit import command
from meshkit.command import CliError, report

# The orchestrator's own commands (cli/<module>:<command>), each imported when it runs: a
# command loads only what it needs (backup, compose and secrets never load the MCP
# libraries). Their descriptions are here, where cyclopts lists commands it has not loaded.
COMMANDS = {
    "agent": ("agent:agent_app", "Create, list, look at, pause and resume the fleet's agents."),
    "capability": (
        "capability:capability_app",
        "Add, list and remove capabilities: published MCP servers, each from one entry.",
    ),
    "usage": (
        "usage:usage",
        "What the model cost, per agent: today and this month with where each limit stands,"
        " or one --month or --day.",
    ),
    "doctor": (
        "doctor:doctor",
        "Check what breaks a deployment on this machine; each finding with its fix.",
    ),
    "backup": ("backup:backup_app", "Back up and restore the databases and configuration."),
    "client": (
        "keys:client",
        "A credential for another MCP client, bound to one agent and one user.\n\n"
        "Prints its token (shown once: only its SHA-256 is kept) and the MESH_CLIENTS line for"
        " .env (the clients already there kept). Restart the servers to admit it.",
    ),
    "secrets": (
        "keys:secrets",
        "The secret files compose mounts (make up runs it).\n\n"
        "What is missing is made, the .env secrets copied (meshkit.secret_files says which"
        " files). Prints the names of the files it changed, one a line (never a value): make up"
        " recreates the containers when one did.",
    ),
    "compose": (
        "compose:compose",
        "Docker Compose v2 (the plugin, else the venv's): wherever the docs say docker compose."
        "\n\nclawmesh compose ps; clawmesh compose exec orchestrator clawmesh usage.",
    ),
    "mcp": (
        "proxy:mcp",
        "Serve the mesh's tools over stdio, for Claude Desktop or any stdio MCP client.\n\n"
        "Give the client file of make client (clients/NAME.yaml: the servers' URLs and the"
        " token file); the tools are named SERVER__TOOL.",
    ),
}

# A server's commands: its clawmesh name -> its service in compose.yaml (the package
# mcp_<service>, whose module commands holds the App) and what it does.
SERVER_COMMANDS = {
    "audit": ("pending-actions", "The consent ledger, and the check of its hash chain."),
    "memory": ("memory", "Remembered rules and notes as Markdown, out and in."),
    "calendar": ("calendar", "The calendar's .ics import and export, and Google's consent."),
    "shopping": ("shopping", "An agent's order history: import a CSV, forget the examples."),
}


def _package(service: str) -> str:
    return f"mcp_{service.replace('-', '_')}"


app = App(
    name="clawmesh",
    help="Operate a clawmesh fleet: its agents, its health, its backups, its servers' data.",
    version_flags=[],
)
for _name, (_target, _help) in COMMANDS.items():
    app.command(f"orchestrator.cli.{_target}", name=_name, help=_help)
for _name, (_service, _help) in SERVER_COMMANDS.items():
    app.command(f"{_package(_service)}.commands:app", name=_name, help=_help)


def main(argv: Sequence[str] | None = None) -> None:
    tokens = list(argv) if argv is not None else sys.argv[1:]
    try:
        command.run(app, tokens)
    except ImportError as error:  # a server's commands, where its package is not installed
        name = tokens[0] if tokens else ""
        if name not in SERVER_COMMANDS:
            raise
        service = SERVER_COMMANDS[name][0]
        rest = " ".join(tokens[1:] if name != "audit" else tokens)
        report(
            CliError(
                f"the {name} commands need the {service} server's package, which is not here "
                f"({error})",
                f"run them in its container: docker compose exec {service} python -m "
                f"{_package(service)} "
                f"{rest}",
            ),
            as_json="--json" in tokens,
        )
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
