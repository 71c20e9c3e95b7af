"""``clawmesh``: the operator's command (a console script of the workspace and of the
orchestrator image).

    clawmesh agent init|list|status|stop|start   the fleet's agents (cli/agent.py)
    clawmesh doctor [--json]                      what breaks a deployment here (cli/doctor.py)
    clawmesh backup create|verify|restore         databases and configuration (cli/backup.py)
    clawmesh mcp CLIENT_FILE                      the mesh's tools over stdio (cli/proxy.py)

Each sub-command group is an App of its own module, added here; errors follow one form
(cli/errors.py).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from cyclopts import App, CycloptsError

from meshkit.command import CliError, report
from orchestrator.cli.agent import agent_app
from orchestrator.cli.backup import backup_app
from orchestrator.cli.doctor import doctor
from orchestrator.cli.proxy import mcp

app = App(
    name="clawmesh",
    help="Operate a clawmesh fleet: its agents, its health, its backups.",
    version_flags=[],
)
app.command(agent_app)
app.command(doctor)
app.command(backup_app)
app.command(mcp)


def main(argv: Sequence[str] | None = None) -> None:
    tokens = list(argv) if argv is not None else sys.argv[1:]
    try:
        app(tokens, exit_on_error=False, print_error=False)
    except CycloptsError as error:  # a typo in the command line: the one form too
        what = " ".join(str(error).split()) or "the command line is not understood"
        fix = "see clawmesh --help, or clawmesh <command> --help"
        report(CliError(what, fix, code=2), as_json="--json" in tokens)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
