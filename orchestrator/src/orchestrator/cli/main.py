"""``clawmesh``: the operator's command (a console script of the workspace and of the
orchestrator image).

    clawmesh agent init|list|status|stop|start   the fleet's agents (cli/agent.py)
    clawmesh doctor [--json]                      what breaks a deployment here (cli/doctor.py)
    clawmesh backup create|verify|restore         databases and configuration (cli/backup.py)

Each sub-command group is an App of its own module, added here; errors follow one form
(cli/errors.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from cyclopts import App

from orchestrator.cli.backup import backup_app

app = App(
    name="clawmesh",
    help="Operate a clawmesh fleet: its agents, its health, its backups.",
    version_flags=[],
)
app.command(backup_app)


def main(argv: Sequence[str] | None = None) -> None:
    app(list(argv) if argv is not None else None)


if __name__ == "__main__":
    main()
