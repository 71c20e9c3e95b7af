"""Capabilities: what one costs a turn that does not use it, and a tap on one of its changes.

uv run python -m bench.capabilities [--turns 60] [--block 10] [--taps 15]

``make run``'s shape twice, side by side against their own fakes (tests/fakes/mesh.py): one
orchestrator with the shipped servers (memory, shopping) and one with the same plus two
capabilities behind their gateways: mcp-server-fetch from PyPI (a package entry: its lock and
environment, as clawmesh capability add makes them) and the official SDK's server with
unannotated tools (tests/fakes/plain_notes_server, a command entry).

1. A text turn's CPU (utime + stime of the orchestrator and its children: the capabilities'
   servers are its child processes), per block of ``--block`` turns, the two alternating
   block by block; the figure is the median over blocks. The model is offered the
   capabilities' tools in every request: that is what a turn that does not use them pays.
2. Tap → result: a proposal with its buttons, then the time from the tap at the fake Telegram
   to the edit that shows the change done: notes' ``add_note`` (the gateway's claim, the call
   to the server behind it, the record) against shopping's ``add_to_list`` (a first-party
   confirm), in the same orchestrator; medians over ``--taps``.

Figures only, never asserted: the machine is noisy, compare the ratios.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import anyio

import bench._fakes  # noqa: F401  (tests/ on the import path, for the fakes below)
from fakes.mesh import ROOT, TOKENS, USER, Mesh, running_embedded
from fakes.responses_api import call, calls, text
from orchestrator.mesh.environments import environment, lock

CLAWDIA = TOKENS["clawdia"]
FETCH = "mcp-server-fetch==2026.10.24"
NOTES_SERVER = ROOT / "tests" / "fakes" / "plain_notes_server" / "plain_notes.py"
TICK_S = 100  # os.sysconf("SC_CLK_TCK") on Linux


def cpu_s(root: int) -> float:
    """utime + stime of ``root`` and its children, in seconds."""
    pids = [root] + [
        int(child)
        for task in Path(f"/proc/{root}/task").iterdir()
        for child in (task / "children").read_text().split()
    ]
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / TICK_S


async def said(mesh: Mesh, prompt: str) -> None:
    before = len(mesh.telegram.sent(CLAWDIA, USER))
    mesh.telegram.user_message(CLAWDIA, USER, prompt)
    await mesh.telegram.wait_for(lambda: len(mesh.telegram.sent(CLAWDIA, USER)) > before, 60)


async def text_turns(mesh: Mesh, count: int, serial: Iterator[int]) -> None:
    for _ in range(count):
        number = next(serial)
        mesh.llm.script(text(f"Answer {number}."))
        await said(mesh, f"question {number}")


async def tap_s(mesh: Mesh, proposing: str, **arguments: object) -> float:
    """Seconds from the tap on Confirm to the edit that shows the change done."""
    before = len(mesh.telegram.sent(CLAWDIA, USER))
    mesh.llm.script(calls(call(proposing, **arguments)), text("Shall I?"))
    await said(mesh, "please")
    await mesh.telegram.wait_for(
        lambda: any(m.reply_markup for m in mesh.telegram.sent(CLAWDIA, USER)[before:]), 60
    )
    proposal = next(m for m in mesh.telegram.sent(CLAWDIA, USER)[before:] if m.reply_markup)
    rows = (proposal.reply_markup or {}).get("inline_keyboard", [])
    confirm = rows[0][0]["callback_data"]  # the first button: Confirm (shopping's: Add)
    started = time.perf_counter()
    mesh.telegram.tap(CLAWDIA, USER, proposal.message_id, confirm)
    await mesh.telegram.wait_for(lambda: len(proposal.edits) >= 1, 60)
    elapsed = time.perf_counter() - started
    assert "✅" in proposal.edits[-1].text, proposal.edits[-1].text
    return elapsed


def capabilities_of(tmp: Path, made: Path) -> tuple[str, str]:
    (tmp / "config" / "capabilities").mkdir(parents=True, exist_ok=True)
    (tmp / "config" / "capabilities" / "fetch.lock").write_bytes(made.read_bytes())
    capabilities = f"servers:\n  fetch:\n    package: {FETCH}\n    egress: true\n"
    notes = tmp / "notes.json"
    entry = f"  notes:\n    command: [{sys.executable}, {NOTES_SERVER}, {notes}]\n"
    return capabilities, entry


async def run(turns: int, size: int, taps: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        made = base / "fetch.lock"
        lock(FETCH, made)
        environment(made)
        capabilities, notes = capabilities_of(base / "with", made)
        pace = {"TELEGRAM_PACE_S": "0"}
        async with (
            running_embedded(base / "without", servers=("memory", "shopping"), env=pace) as without,
            running_embedded(
                base / "with",
                servers=("memory", "shopping", "fetch", "notes"),
                env=pace,
                capabilities=capabilities,
                more_servers=notes,
            ) as with_,
        ):
            runs = {"without": without, "with two capabilities": with_}
            serial = iter(range(1_000_000))
            pids = {name: mesh.services["orchestrator"].pid for name, mesh in runs.items()}
            for mesh in runs.values():
                await text_turns(mesh, 5, serial)  # warm-up
            per_turn: dict[str, list[float]] = {name: [] for name in runs}
            for _ in range(max(1, turns // size)):
                for name, mesh in runs.items():
                    before = cpu_s(pids[name])
                    await text_turns(mesh, size, serial)
                    per_turn[name].append(1000 * (cpu_s(pids[name]) - before) / size)
            taps_s: dict[str, list[float]] = {"notes.add_note (gateway)": [], "shopping": []}
            for number in range(taps + 1):
                notes_s = await tap_s(with_, "notes__add_note", text=f"note {number}")
                shop_s = await tap_s(
                    with_, "shopping__propose_add_to_list", name=f"item {number}", quantity=1
                )
                if number:  # the first of each: warm-up
                    taps_s["notes.add_note (gateway)"].append(notes_s)
                    taps_s["shopping"].append(shop_s)
        print(f"A text turn's CPU, ms (orchestrator and children; median of {turns // size}"
              f" blocks of {size}):")  # fmt: skip
        medians = {name: statistics.median(values) for name, values in per_turn.items()}
        for name, value in medians.items():
            print(f"  {name:<24} {value:7.1f}")
        ratio = medians["with two capabilities"] / medians["without"]
        print(f"  ratio                    {ratio:7.2f}×")
        print(f"Tap → result, ms (median of {taps}):")
        for name, values in taps_s.items():
            print(f"  {name:<24} {1000 * statistics.median(values):7.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.capabilities", description=__doc__)
    parser.add_argument("--turns", type=int, default=60)
    parser.add_argument("--block", type=int, default=10)
    parser.add_argument("--taps", type=int, default=15)
    args = parser.parse_args()
    anyio.run(run, args.turns, args.block, args.taps)


if __name__ == "__main__":
    main()
