"""Server restarted → first successful tool call, per way of reaching a server.

uv run python -m bench.restart [--runs 5]

The weather server (real ``python -m mcp_weather``, fake Open-Meteo in this process) is
killed (SIGKILL) while this process's registry is connected to it, then comes back;
the figure is the time from "back" to the end of the first call that succeeds, with the
registry's background retry set to 60 s so only the reconnect the call makes counts
(the default backoff, 0.5 s doubling to 30 s, can only make it sooner).

mesh, HTTP     the server is started again on the same port by someone else (compose);
               "back" is when its /health answers. Two cases: a call found it gone
               while it was down (the registry marked it down), or no call did.
embedded,      a ``command:`` entry: the registry's own child. "Back" is the kill: the
stdio          next call starts the server again itself, so the figure includes the
               child's start (Python, imports, MCP initialize).

In-process (``module:``) servers are not measured: they live in the orchestrator's
process and cannot die or restart without it.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import select
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from subprocess import DEVNULL

import anyio
from anyio.abc import Process

from bench._fakes import FakeOpenMeteo, serving
from bench.hop import CHILD_ENV, ROOT, free_port, wait_until_answering
from meshkit.credentials import token_digest
from orchestrator.config.registry import ServerEntry
from orchestrator.mesh.errors import ServerUnavailable
from orchestrator.mesh.registry import Registry

TOKEN = "bench-token-0123456789abcdef"
NEVER = 60.0
PARIS = {"location": "Paris"}


async def first_call_ms(registry: Registry, server: str) -> float:
    tool = registry.find(server, "get_current_weather")
    assert tool is not None
    started = time.perf_counter()
    await registry.call(tool, PARIS)
    return (time.perf_counter() - started) * 1000


async def start_http(port: int, env: dict[str, str]) -> Process:
    """``python -m mcp_weather`` on ``port``, once its /health answers."""
    process = await anyio.open_process(
        [sys.executable, "-m", "mcp_weather"],
        cwd=ROOT,
        env={**os.environ, **env, "MCP_PORT": str(port)},
        stdin=DEVNULL,
        stdout=DEVNULL,
        stderr=DEVNULL,
    )
    await wait_until_answering(process, f"http://127.0.0.1:{port}/health")
    return process


async def crash(process: Process) -> None:
    if process.returncode is None:
        process.kill()
    await process.wait()


async def http_runs(runs: int, env: dict[str, str], *, call_while_down: bool) -> list[float]:
    port = free_port()
    entry = ServerEntry(url=f"http://127.0.0.1:{port}/mcp", auth="mesh")
    registry = Registry(
        {"weather": entry}, credentials={"weather": TOKEN}, retry_initial_s=NEVER, retry_max_s=NEVER
    )
    figures = []
    server = await start_http(port, env)
    try:
        async with registry.running():
            await first_call_ms(registry, "weather")
            for _ in range(runs):
                await crash(server)
                if call_while_down:
                    with contextlib.suppress(ServerUnavailable):
                        await first_call_ms(registry, "weather")
                        raise RuntimeError("a call to the killed server succeeded")
                server = await start_http(port, env)
                figures.append(await first_call_ms(registry, "weather"))
    finally:
        await crash(server)
    return figures


def child_pids() -> list[int]:
    return [
        int(pid)
        for task in Path("/proc/self/task").iterdir()
        for pid in (task / "children").read_text().split()
    ]


async def kill_and_wait(pid: int) -> None:
    fd = os.pidfd_open(pid)
    try:
        os.kill(pid, signal.SIGKILL)
        await anyio.to_thread.run_sync(select.select, [fd], [], [], 10)
    finally:
        os.close(fd)


async def stdio_runs(runs: int, env: dict[str, str]) -> list[float]:
    command = [sys.executable, "-m", "mcp_weather", "--stdio"]
    entry = ServerEntry(command=command, env={**env, "PATH": os.environ.get("PATH", "")})
    registry = Registry({"weather": entry}, retry_initial_s=NEVER, retry_max_s=NEVER)
    figures = []
    async with registry.running():
        await first_call_ms(registry, "weather")
        for _ in range(runs):
            [child] = [pid for pid in child_pids() if _is_weather(pid)]
            await kill_and_wait(child)
            figures.append(await first_call_ms(registry, "weather"))
    return figures


def _is_weather(pid: int) -> bool:
    return b"mcp_weather" in Path(f"/proc/{pid}/cmdline").read_bytes()


def line(label: str, figures: list[float]) -> str:
    runs = " ".join(f"{f:.0f}" for f in figures)
    return f"{label:<48} median {statistics.median(figures):7.0f} ms   (runs: {runs})"


async def main(runs: int) -> None:
    logging.basicConfig(level=logging.ERROR)  # "server weather is gone" is what is measured
    with tempfile.TemporaryDirectory(prefix="bench-restart-") as tmp:
        async with serving(FakeOpenMeteo().app) as open_meteo:
            env = {
                **CHILD_ENV,
                "MESH_TOKEN_SHA256": token_digest(TOKEN),
                "DATA_DIR": tmp,
                "WEATHER_FORECAST_URL": f"{open_meteo}/v1/forecast",
                "WEATHER_GEOCODING_URL": f"{open_meteo}/v1/search",
            }
            cases: list[tuple[str, Callable[[], Awaitable[list[float]]]]] = [
                (
                    "mesh, HTTP: a call found it gone",
                    lambda: http_runs(runs, env, call_while_down=True),
                ),
                (
                    "mesh, HTTP: no call while down",
                    lambda: http_runs(runs, env, call_while_down=False),
                ),
                ("embedded, stdio child killed (incl. its start)", lambda: stdio_runs(runs, env)),
            ]
            print(f"server back -> first successful call, {runs} runs each")
            for label, measure in cases:
                print(line(label, await measure()), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    anyio.run(main, parser.parse_args().runs)
