"""``clawmesh``: the operator's command (a console script of the workspace and of the
orchestrator image).

    clawmesh agent init|list|status|stop|start   the fleet's agents (cli/agent.py)
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
from orchestrator.cli.agent import agent_app
from orchestrator.cli.backup import backup_app
from orchestrator.cli.compose import compose
from orchestrator.cli.doctor import doctor
from orchestrator.cli.keys import client, secrets
from orchestrator.cli.proxy import mcp
from orchestrator.cli.usage import usage

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
app.command(agent_app)
app.command(usage)
app.command(doctor)
app.command(backup_app)
app.command(client)
app.command(secrets)
app.command(compose)
app.command(mcp)
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
