"""What every test shares: the anyio backend; a working directory outside the checkout; and
the one rule of the parallel run (``make pytest``: pytest-xdist with ``--dist loadfile``, a
module per worker at a time)."""

import os
from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session", autouse=True)
def outside_the_checkout(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The tests run in a folder of their own: a program a test starts (or an entry point it
    calls) reads no .env, config/ or agents/ of the checkout, which are a person's (a filled
    .env, ``clawmesh agent init bob``). A test whose subject they are names them (ROOT), on
    a copy (fakes.checkout.shipped)."""
    before = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("cwd"))
    try:
        yield
    finally:
        os.chdir(before)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests on the container stack stay in one module: loadfile gives that module to
    one worker, which brings the stack up once; tests in two modules could get two workers,
    two stacks under one project name fighting over its containers and volumes. (xdist's
    ``loadgroup``, which could group them across modules, does not group with pytest 9.)"""
    modules = {item.nodeid.split("::", 1)[0] for item in items if _on_stack(item)}
    if len(modules) > 1:
        raise pytest.UsageError(
            f"tests on the container stack are in {sorted(modules)}: keep them in one module"
        )


def _on_stack(item: pytest.Item) -> bool:
    return "stack" in getattr(item, "fixturenames", ())
