"""The running stack for the container tests: built here (base image, wheels, images),
started with the fakes, torn down with its volumes. Skipped where no engine answers."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator

import pytest

from containers.stack import BASE_TAG, ROOT, TEST_ENV, Stack, compose_command, engine_problem


def _uv() -> str:
    return shutil.which("uv") or str(ROOT / ".tools" / "bin" / "uv")


def _run(argv: list[str], env: dict[str, str], what: str) -> None:
    started = time.monotonic()
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"{what} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    print(f"{what}: {time.monotonic() - started:.0f} s")


@pytest.fixture(scope="session")
def stack() -> Iterator[Stack]:
    problem = engine_problem() or (None if compose_command() else "no Compose v2 here")
    if problem:
        pytest.skip(f"container tests need a Docker engine: {problem}")
    env = {**os.environ, **TEST_ENV}
    env["ARCH"] = (
        env.get("ARCH")
        or subprocess.run(
            ["docker", "version", "-f", "{{.Server.Arch}}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    env["UV"] = _uv()
    running = Stack(env)
    _run([str(ROOT / "containers" / "base-image.sh"), BASE_TAG], env, "base image")
    _run([str(ROOT / "containers" / "wheels.sh"), env["ARCH"]], env, "wheels")
    _run([*running.command, "build", *running.services()], env, "stack images")
    _run([*running.command, "build", "fake-llm"], env, "fakes image")
    running.compose("down", "--volumes", "--remove-orphans", check=False)
    started = time.monotonic()
    running.compose("up", "--detach", "--wait", "--wait-timeout", "240")
    print(f"stack up, all healthy: {time.monotonic() - started:.0f} s")
    try:
        yield running
    finally:
        running.compose("down", "--volumes", "--remove-orphans", "--timeout", "30", check=False)
