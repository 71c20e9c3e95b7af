"""The mesh in its containers: build times, time to healthy, and memory idle and after turns.

    .venv/bin/python -m bench.containers [--turns 50] [--keep]

Builds what the container tests build (tests/containers/stack.py: the base image, the
wheels, the images, the fakes), starts the stack with the fakes, prints ``docker stats``
memory of every container idle, drives ``--turns`` turns through the fake Telegram (every
other one a weather question: a tool call through the mesh), and prints memory again.
Figures only; it asserts nothing. Needs a Docker engine.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from containers.stack import Stack, build, down, engine_problem, stack_environment, up
from containers.test_stack_runtime import Chat

UNITS = {"B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "kB": 1000, "MB": 1000**2}


def memory_mib(stack: Stack) -> dict[str, float]:
    """Each stack container's memory use as ``docker stats --no-stream`` reports it."""
    ids = {stack.container(service): service for service in stack.services()}
    done = subprocess.run(
        ["docker", "stats", "--no-stream", "--format", "{{.ID}} {{.MemUsage}}", *ids],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    used: dict[str, float] = {}
    for line in done.stdout.splitlines():
        short, usage = line.split(" ", 1)
        amount = usage.split("/")[0].strip()
        number = amount.rstrip("KMGiBk")
        unit = amount[len(number) :]
        service = next(name for full, name in ids.items() if full.startswith(short))
        used[service] = float(number) * UNITS[unit] / 1024**2
    return used


def show(title: str, used: dict[str, float]) -> None:
    print(f"{title}: {sum(used.values()):.0f} MiB in all")
    for service, mib in sorted(used.items()):
        print(f"  {service:16} {mib:6.1f} MiB")


def image_sizes(stack: Stack) -> None:
    tag = stack.env.get("TAG", "latest")
    for service in [*stack.services(), "fakes"]:
        image = f"clawmesh/{service}:{tag}"
        size = subprocess.run(
            ["docker", "image", "inspect", "-f", "{{.Size}}", image],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        print(f"  {image:32} {int(size) / 1e6:6.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.containers", description=__doc__)
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--keep", action="store_true", help="leave the stack running")
    args = parser.parse_args()
    problem = engine_problem()
    if problem:
        raise SystemExit(f"bench.containers needs a Docker engine: {problem}")
    # The stack's secret files, as make up writes them (kept with --keep: the stack reads them).
    secrets = Path(tempfile.mkdtemp(prefix="bench-containers-")) / "secrets"
    stack = Stack(stack_environment(dict(os.environ), secrets))
    for step, seconds in build(stack).items():
        print(f"{step}: {seconds:.0f} s")
    image_sizes(stack)
    print(f"make up's part, from start to all healthy: {up(stack):.0f} s")
    try:
        chat = Chat(stack)
        time.sleep(15)  # let start-up settle before the idle figure (not a test: a reading)
        show("idle", memory_mib(stack))
        started = time.monotonic()
        for turn in range(args.turns):
            before = len(chat.sent())
            chat.say("What's the weather in Paris?" if turn % 2 == 0 else f"hello {turn}")
            chat.reply_after(before, timeout_s=120)
        elapsed = time.monotonic() - started
        print(f"{args.turns} turns in {elapsed:.0f} s ({elapsed / args.turns:.2f} s a turn)")
        show(f"after {args.turns} turns", memory_mib(stack))
    finally:
        if not args.keep:
            down(stack)


if __name__ == "__main__":
    main()
