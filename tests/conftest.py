"""What every test shares: the anyio backend, and the units the parallel run (``make
pytest``: pytest-xdist, ``--dist loadgroup``) hands out to its workers."""

import pytest


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test module runs on one worker (its module fixtures are made once), and so do all
    the tests on the container stack (one stack per run: a name, ports and volumes that
    two workers would fight over)."""
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        on_stack = "stack" in getattr(item, "fixturenames", ())
        group = "container-stack" if on_stack else item.nodeid.split("::", 1)[0]
        item.add_marker(pytest.mark.xdist_group(group))
