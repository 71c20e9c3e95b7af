"""Crash recovery: from restarting a killed orchestrator to the reply it owed.

uv run python -m bench.recovery [--runs 5] [--model-s 1]

In each shape (embedded: ``python -m orchestrator`` with every server in it; mesh: the
servers as HTTP processes and the orchestrator apart), ``--runs`` times:

    a user writes → the orchestrator asks the model (which never answers that request)
    → SIGKILL of the orchestrator mid-turn → restart (a new process, same data)
    → the new run gets the update at once, asks the model again (it answers in --model-s)
    → the reply reaches the fake Telegram

    recovery = reply at the fake − restart − the model's time

telegram-io leases for two minutes here (``TELEGRAM_LEASE_S=120``), so nothing comes back
by a lease running out: what is measured is the restarted run taking over what its crashed
run held. The restart includes starting Python and connecting every server: the
``imports s`` column times, just before each run, a Python that only imports what that
shape's orchestrator imports, the part of the recovery that is the machine's speed (it
is about 2 s on an idle laptop, far more on a loaded machine). Figures are medians over
the runs (and each run's), printed, never asserted.

Then, per shape, a graceful stop: SIGTERM while the model answers (in --model-s), timed
from the signal to the reply reaching the fake Telegram and to the process's exit (code
0); the next run starts after it.
"""

from __future__ import annotations

import argparse
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio

from bench._fakes import Body, Step, text
from fakes.mesh import TOKENS, Mesh, running_embedded, running_mesh
from fakes.responses_api import HANG, Slow

TOKEN = TOKENS["clawdia"]
LEASE = "120"
GOAL_S = 5.0
IMPORTS = {
    "mesh": "import orchestrator.__main__",
    "embedded": "import orchestrator.__main__, mcp_memory.server, mcp_pending_actions.server, "
    "mcp_shopping.server, mcp_telegram_io.server, mcp_weather.server",
}


@asynccontextmanager
async def running(mode: str, tmp: Path) -> AsyncIterator[Mesh]:
    if mode == "mesh":
        async with running_mesh(tmp, lease_s=float(LEASE)) as mesh:
            yield mesh
    else:
        async with running_embedded(tmp, env={"TELEGRAM_LEASE_S": LEASE}) as mesh:
            yield mesh


async def imports_s(mode: str) -> float:
    """Seconds a Python takes to start and import what ``mode``'s orchestrator imports."""
    began = time.perf_counter()
    await anyio.run_process([sys.executable, "-c", IMPORTS[mode]])
    return time.perf_counter() - began


async def one(mesh: Mesh, mode: str, model_s: float) -> tuple[float, float, float]:
    """Seconds to import (a control), from the restart to the model asked again, and to the
    reply minus the model."""
    imports = await imports_s(mode)
    user = mesh.new_user()
    asked: list[float] = []

    def answer(_body: Body) -> Step:
        asked.append(time.time())
        return Slow(model_s, text("Back, and answering."))

    mesh.llm.script(HANG, answer)
    mesh.telegram.user_message(TOKEN, user, "are you there?")
    await mesh.telegram.wait_for(lambda: len(mesh.llm.requests) == 1, 60)
    await mesh.orchestrator.kill()
    mesh.llm.release()
    restarted = time.time()
    await mesh.orchestrator.start()
    await mesh.telegram.wait_for(lambda: bool(mesh.telegram.sent(TOKEN, user)), 120)
    replies = mesh.telegram.sent(TOKEN, user)
    if [r.text for r in replies] != ["Back, and answering."] or len(asked) != 1:
        raise RuntimeError(f"not answered once: {[r.text for r in replies]}, {len(asked)} asks")
    return imports, asked[0] - restarted, replies[0].time - restarted - model_s


async def stopped(mesh: Mesh, model_s: float) -> tuple[float, float]:
    """Seconds from SIGTERM (the model answering) to the reply at the fake, and to exit 0."""
    user = mesh.new_user()
    asked = len(mesh.llm.requests)
    mesh.llm.script(Slow(model_s, text("Finished before stopping.")))
    mesh.telegram.user_message(TOKEN, user, "one more thing")
    await mesh.telegram.wait_for(lambda: len(mesh.llm.requests) > asked, 60)
    signalled = time.time()
    mesh.orchestrator.send_signal(signal.SIGTERM)
    code = await mesh.orchestrator.exited()
    exited = time.time()
    replies = mesh.telegram.sent(TOKEN, user)
    if code != 0 or [r.text for r in replies] != ["Finished before stopping."]:
        raise RuntimeError(f"exit {code}, replies {[r.text for r in replies]}")
    await mesh.orchestrator.start()  # for the next run
    return replies[0].time - signalled, exited - signalled


async def run(runs: int, model_s: float) -> None:
    print(
        f"restart of a SIGKILLed orchestrator → the reply it owed; {runs} runs per shape, "
        f"model time {model_s:g} s (subtracted), leases of {LEASE} s\n"
    )
    print(
        f"{'shape':<9} | {'imports s':>9} | {'model asked s':>13} | {'recovery s':>10} | "
        "goal | runs (recovery s)"
    )
    print(f"{'-' * 9}-+-{'-' * 9}-+-{'-' * 13}-+-{'-' * 10}-+------+-{'-' * 30}")
    for mode in ("embedded", "mesh"):
        with tempfile.TemporaryDirectory(prefix="clawmesh-bench-") as tmp:
            async with running(mode, Path(tmp)) as mesh:
                samples = [await one(mesh, mode, model_s) for _ in range(runs)]
        imports, asked, recovery = (statistics.median(s[i] for s in samples) for i in range(3))
        verdict = "met" if recovery < GOAL_S else "MISS"
        each = " ".join(f"{s[2]:.2f}" for s in samples)
        print(
            f"{mode:<9} | {imports:9.2f} | {asked:13.2f} | {recovery:10.2f} | {verdict:<4} | {each}"
        )
    print(
        f"\nSIGTERM while the model answers ({model_s:g} s): the reply is sent, then exit 0\n"
        f"{'shape':<9} | {'reply s':>7} | {'exit s':>6} | runs (exit s)"
    )
    print(f"{'-' * 9}-+-{'-' * 7}-+-{'-' * 6}-+-{'-' * 30}")
    for mode in ("embedded", "mesh"):
        with tempfile.TemporaryDirectory(prefix="clawmesh-bench-") as tmp:
            async with running(mode, Path(tmp)) as mesh:
                stops = [await stopped(mesh, model_s) for _ in range(runs)]
        reply, exit_s = (statistics.median(s[i] for s in stops) for i in range(2))
        each = " ".join(f"{s[1]:.2f}" for s in stops)
        print(f"{mode:<9} | {reply:7.2f} | {exit_s:6.2f} | {each}")


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.recovery",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--runs", type=int, default=5, help="crashes and restarts per shape")
    parser.add_argument("--model-s", type=float, default=1.0, help="the model's answer time")
    args = parser.parse_args()
    anyio.run(run, args.runs, args.model_s)


if __name__ == "__main__":
    main()
