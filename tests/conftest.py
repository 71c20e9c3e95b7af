"""What every test shares: the anyio backend; and the one rule of the parallel run (``make
pytest``: pytest-xdist with ``--dist loadfile``, a module per worker at a time)."""

import pytest


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


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
