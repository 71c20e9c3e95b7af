"""meshkit.process_memory: freed heap pages go back to the system (glibc, as on a Pi's Debian)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from meshkit.process_memory import Trimmer

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not Trimmer().available, reason="malloc_trim is glibc's"),
]


def resident_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def fragment_the_heap() -> list[bytes]:
    """~80 MB of malloc'd blocks freed, with one in 50 kept: free pages glibc keeps."""
    blocks = [bytes(4000) for _ in range(20_000)]
    kept = blocks[::50]
    del blocks
    return kept


def test_trim_gives_the_free_pages_back() -> None:
    kept = fragment_the_heap()
    before = resident_mb()
    assert Trimmer().trim() is True
    assert before - resident_mb() > 40
    assert len(kept) == 400


async def test_a_served_server_trims_at_start_and_in_a_quiet_moment_after_requests() -> None:
    trimmer = Trimmer(every_s=0.05, quiet_s=0.01)
    trimmer.trim()
    kept = fragment_the_heap()
    trimmer.request_seen()
    fragmented = resident_mb()
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(trimmer.keep_trimmed)
        with anyio.fail_after(5):
            while trimmer.trims < 2:  # noqa: ASYNC110 (polled: no event for it)
                await anyio.sleep(0.01)
        started = resident_mb()  # after its first trim, at start
        kept += fragment_the_heap()
        trimmer.request_seen()
        again = resident_mb()
        with anyio.fail_after(5):
            while trimmer.trims < 3:  # noqa: ASYNC110 (polled: no event for it)
                await anyio.sleep(0.01)
        tasks.cancel_scope.cancel()
    assert fragmented - started > 40  # trimmed at start
    assert again - resident_mb() > 40  # then trimmed again after the requests, in a quiet moment
    assert len(kept) == 800
