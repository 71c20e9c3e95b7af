"""meshkit/healthcheck.py: a container's HEALTHCHECK without curl, run as Docker runs it
(``python -I -S`` on the file: no site-packages, no environment-driven path)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from fakes.serving import free_port, serving_in_thread
from meshkit import healthcheck

# As the image runs it (containers/Dockerfile copies the file to /app/healthcheck.py).
IMAGE_COMMAND = [sys.executable, "-I", "-S", healthcheck.__file__]


def probe(port: int, command: list[str] = IMAGE_COMMAND) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MCP_PORT": str(port)}
    return subprocess.run(
        command,
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


def test_the_probe_as_a_module_gives_the_same_verdict(healthy: int, failing: int) -> None:
    by_hand = [sys.executable, "-m", "meshkit.healthcheck"]
    assert probe(healthy, by_hand).returncode == 0
    assert probe(failing, by_hand).returncode == 1


def test_the_probe_imports_nothing_beyond_the_standard_library(healthy: int) -> None:
    # What it loads is what each container pays at every interval: no pydantic, no meshkit.
    shown = [*IMAGE_COMMAND[:-1], "-c", LOADED, healthcheck.__file__]
    done = probe(healthy, shown)
    assert done.returncode == 0, done.stderr
    loaded = set(done.stdout.split())
    assert not {"pydantic", "pydantic_settings", "meshkit", "urllib.request"} & loaded
    assert "socket" in loaded


# Runs the probe file as __main__ and lists the modules loaded by then (it exits with its
# verdict: the list is printed on the way out).
LOADED = """
import atexit, runpy, sys
atexit.register(lambda: print(*sorted(sys.modules)))
runpy.run_path(sys.argv[1], run_name="__main__")
"""


def test_an_answer_that_is_not_http_is_unhealthy_in_one_line() -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        server.settimeout(30)  # a probe that never connects leaves no thread behind

        def garbage() -> None:
            connection, _ = server.accept()
            with connection:
                connection.recv(4096)  # the request, read: closing unread would reset
                connection.sendall(b"SSH-2.0-OpenSSH\r\n\r\n")

        thread = threading.Thread(target=garbage, daemon=True)
        thread.start()
        done = probe(port)
        thread.join(timeout=10)
    assert done.returncode == 1
    assert "not an HTTP answer" in done.stdout
    assert "Traceback" not in done.stderr
