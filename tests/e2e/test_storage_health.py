"""A real disk filling up under a served server (``python -m mcp_memory`` over HTTP, its
DATA_DIR a small tmpfs): the tool error says so, ``/health`` answers 503 with
``storage: fail: ...`` until a write succeeds after space is freed, then 200; the log
says it once, without a traceback."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client

from fakes.disks import free, small_disk
from fakes.serving import ServerProcess, sdk_client

pytestmark = pytest.mark.anyio

TOKEN = "storage-health-test-token-5e2a9c"
KEY = {"agent": "clawdia", "chat_id": "42"}
DISK_KB, BALLAST_KB = 1280, 700  # room for the four empty databases and a few writes


def turn(n: int) -> dict[str, Any]:
    words = f"turn {n}: " + "remember this " * 700  # ~10 kB
    return {**KEY, "items": [{"type": "message", "role": "user", "content": words}]}


async def append(client: Client, n: int) -> Any:
    return await client.call_tool("append_items", turn(n))


def health(url: str) -> tuple[int, dict[str, Any]]:
    response = httpx2.get(f"{url}/health", timeout=5)
    return response.status_code, response.json()["checks"]


async def test_health_reports_a_full_disk_until_a_write_succeeds_after_space_is_freed(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    command = small_disk(data_dir, DISK_KB, BALLAST_KB, [sys.executable, "-m", "mcp_memory"])
    server = ServerProcess("mcp_memory", data_dir, TOKEN, command=command)
    try:
        url = server.ready()
        before = health(url)
        async with sdk_client(f"{url}/mcp", TOKEN) as client:
            for n in range(1, 200):
                refused = await append(client, n)
                if refused.is_error:
                    break
            else:
                raise AssertionError("the small disk never filled up")
            assert not (await client.call_tool("load_window", KEY)).is_error  # reads go on
            again = await append(client, 1000)  # refused too, and not logged again
            while_full = health(url)
            free(server.process.pid, data_dir)
            freed_but_unwritten = health(url)
            written = await append(client, 1001)
            after = health(url)
    finally:
        log = server.stop()

    assert before == (200, {"database": "ok", "storage": "ok"})
    assert n > 1  # some turns were stored before the disk filled up
    assert refused.content[0].text.startswith(
        "The server's storage failed (the disk is full), so this request was not completed "
        "and nothing was changed."
    )
    assert again.is_error
    assert while_full[0] == 503
    assert while_full[1]["storage"] == (
        "fail: the disk is full (memory.sqlite3); free space on the disk that holds DATA_DIR"
    )
    assert freed_but_unwritten == while_full  # it says what the last write found
    assert not written.is_error
    assert after == (200, {"database": "ok", "storage": "ok"})
    reports = [line for line in log.splitlines() if "storage of" in line]
    assert len(reports) == 2, reports
    assert f"storage of {data_dir / 'memory.sqlite3'} failed: the disk is full;" in reports[0]
    assert reports[1].endswith("works again: a write succeeded")
    assert "Traceback" not in log
