"""``python -m meshkit.healthcheck``: a container's HEALTHCHECK without curl, as Docker runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from fakes.serving import free_port, serving_in_thread


def probe(port: int) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MCP_PORT": str(port)}
    return subprocess.run(
        [sys.executable, "-m", "meshkit.healthcheck"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )


def app(status: int) -> Starlette:
    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok" if status == 200 else "fail"}, status_code=status)

    return Starlette(routes=[Route("/health", health)])


@pytest.fixture
def healthy() -> Iterator[int]:
    with serving_in_thread(app(200)) as url:
        yield int(url.rsplit(":", 1)[1])


@pytest.fixture
def failing() -> Iterator[int]:
    with serving_in_thread(app(503)) as url:
        yield int(url.rsplit(":", 1)[1])


def test_a_server_answering_200_on_health_is_healthy(healthy: int) -> None:
    done = probe(healthy)
    assert done.returncode == 0
    assert done.stdout.strip().endswith("/health: 200")


def test_a_server_answering_503_is_unhealthy_and_the_answer_is_shown(failing: int) -> None:
    done = probe(failing)
    assert done.returncode == 1
    assert "503" in done.stdout
    assert '"fail"' in done.stdout


def test_nothing_listening_is_unhealthy_in_one_line() -> None:
    done = probe(free_port())
    assert done.returncode == 1
    assert "Connection refused" in done.stdout
    assert "Traceback" not in done.stderr
