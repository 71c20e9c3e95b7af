"""The running stack for the container tests: built here (base image, wheels, images),
started with the fakes, torn down with its volumes. Skipped where no engine answers.
The images are built once per change of their sources (``stack.build``)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from containers.stack import (
    CAPABILITIES,
    Stack,
    build,
    compose_command,
    down,
    engine_problem,
    stack_environment,
    up,
)

# A test on the stack may build everything first (a base image, the wheels, nine images):
# more than the suite's default timeout (pyproject's), still an end to a hang.
STACK_TIMEOUT_S = 2400
HERE = Path(__file__).parent


@pytest.hookimpl(tryfirst=True)  # marked before ``-m`` selects (pytest's own hook)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if not item.path.is_relative_to(HERE):
            continue
        item.add_marker(pytest.mark.containers)  # -m "not containers": the suite without them
        on_stack = "stack" in getattr(item, "fixturenames", ())
        if on_stack and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(STACK_TIMEOUT_S))


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    problem = engine_problem() or (None if compose_command() else "no Compose v2 here")
    if problem:
        pytest.skip(f"container tests need a Docker engine: {problem}")
    secrets = tmp_path_factory.mktemp("stack") / "secrets"
    running = Stack(stack_environment(dict(os.environ), secrets, capabilities=CAPABILITIES))
    for step, seconds in build(running).items():
        print(f"{step}: {seconds:.0f} s")  # the figures the issue asks for, never asserted
    try:  # a stack that never got healthy is taken down too, its volumes with it
        print(f"stack up, all healthy: {up(running):.0f} s")
        yield running
    finally:
        down(running)
