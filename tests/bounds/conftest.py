from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fastmcp import FastMCP

from bounds.every_server import every_server


@pytest.fixture
async def servers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[dict[str, FastMCP[Any]]]:
    async with every_server(tmp_path, monkeypatch) as built:
        yield built
