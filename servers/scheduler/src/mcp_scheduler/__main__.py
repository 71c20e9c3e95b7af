"""``python -m mcp_scheduler [--stdio]``: serve the scheduler (default port 8107).

Jobs come from config/schedule.yaml (CLAWMESH_SCHEDULE), each agent's time zone from
config/agents.yaml (CLAWMESH_AGENTS); data lives in $DATA_DIR/scheduler.sqlite3.
"""

from __future__ import annotations

from mcp_scheduler.server import build_server
from mcp_scheduler.settings import SchedulerSettings
from meshkit.serve import run_server
from meshkit.stopping import Stopping


def main() -> None:
    stopping = Stopping()  # ends open long polls at once on SIGTERM
    run_server(
        SchedulerSettings,
        lambda settings: build_server(settings, stopping=stopping),
        name="scheduler",
        default_port=8107,
        stopping=stopping,
        description=__doc__,
        secrets=lambda settings: [settings.relay_credential],
    )


if __name__ == "__main__":
    main()
