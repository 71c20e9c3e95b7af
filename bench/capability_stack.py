"""A capability in the container stack: from ``clawmesh capability add`` to the model's first
call, the image its container runs and the memory it holds idle.

uv run python -m bench.capability_stack [--idle 30]

The test stack of tests/containers (the mesh and the fakes under a project of this run's
own), its configuration a copy of the shipped one where the tests' capabilities are added as
an operator adds them (``containers.stack.capabilities_of``: mcp-server-fetch from PyPI on
the egress network, the plain SDK server from its wheel). Steps, each timed:

    add        clawmesh capability add, each of the three (lock, environment, start, list)
    wheels     containers/wheels.sh (the workspace's wheels kept; the capabilities' fetched)
    build      the fetch capability's image alone, from scratch (--no-cache)
    up         the whole stack from nothing to healthy (make up, after a first add)
    first call a message whose model turn calls fetch__fetch, to its reply

Then, after ``--idle`` seconds of nothing, ``docker stats`` of every service (median of 3
readings) and the images' sizes: a capability's beside weather's (a first-party server).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import bench._fakes  # noqa: F401  (tests/ on the import path)
from bench._stack_readings import memory_mib
from containers.stack import (
    BOT_TOKEN,
    CAPABILITIES,
    USER_ID,
    Stack,
    build,
    down,
    stack_environment,
    up,
)


def call(url: str, body: dict[str, Any] | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as answer:  # loopback only
        return json.load(answer)


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    started = time.monotonic()
    subprocess.run(argv, env=env, cwd=cwd, check=True, capture_output=True, timeout=3600)
    return time.monotonic() - started


def first_call_s(stack: Stack) -> float:
    telegram = stack.url("fake-telegram", 8443)
    llm = stack.url("fake-llm", 8080)
    sent = f"{telegram}/_control/sent?token={BOT_TOKEN}&chat_id={USER_ID}"
    before = len(call(sent))
    page = "http://fake-open-meteo:8090/v1/search?name=Paris&count=1"
    steps = [{"calls": [{"name": "fetch__fetch", "arguments": {"url": page}}]}]
    call(f"{llm}/_control/script", {"steps": steps})
    started = time.monotonic()
    call(f"{telegram}/_control/message", {"token": BOT_TOKEN, "user_id": USER_ID,
                                          "text": "what does the page say?"})  # fmt: skip
    while len(call(sent)) <= before:
        assert time.monotonic() - started < 120, "no reply"
        time.sleep(0.05)  # a reading: polling the fake's record
    reply = call(sent)[before]["text"]
    assert "Paris" in reply, reply
    return time.monotonic() - started


def image_mib(image: str) -> float:
    size = subprocess.run(
        ["docker", "image", "inspect", "--format", "{{.Size}}", image],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    return int(size) / 1024**2


def run(idle_s: float) -> None:
    with tempfile.TemporaryDirectory() as folder:
        secrets = Path(folder) / "stack" / "secrets"
        secrets.parent.mkdir()
        started = time.monotonic()
        env = stack_environment(dict(os.environ), secrets, capabilities=CAPABILITIES)
        add_s = time.monotonic() - started
        assert not env.get("CLAWMESH_TEST_CAPABILITIES_SKIPPED"), env
        stack = Stack(env)
        steps = build(stack)
        root = stack.root
        wheels_s = timed([str(root / "containers" / "wheels.sh"), env["ARCH"]], env, root)
        build_s = timed([*stack.command, "build", "--no-cache", "fetch"], env, root)
        try:
            up_s = up(stack)
            first_s = first_call_s(stack)
            time.sleep(idle_s)  # a reading: the stack left idle
            memory = memory_mib(stack)
        finally:
            down(stack)
        tag = env["TAG"]
        print("From clawmesh capability add to the model's first call (s):")
        for name, seconds in (("add (fetch, notes, git)", add_s), ("wheels", wheels_s),
                              ("build fetch (--no-cache)", build_s), ("up, all healthy", up_s),
                              ("first call", first_s)):  # fmt: skip
            print(f"  {name:<26} {seconds:7.1f}")
        total = add_s + wheels_s + build_s + up_s + first_s
        print(f"  {'total':<26} {total:7.1f}")
        print(f"  (images built before for the rest: {', '.join(steps)})")
        print(f"Idle memory after {idle_s:g} s, docker stats (MiB):")
        for service, mib in sorted(memory.items()):
            print(f"  {service:<26} {mib:7.1f}")
        print(f"  {'sum':<26} {sum(memory.values()):7.1f}")
        print("Image sizes (MiB, the base image's layers shared):")
        for image in ("capability-fetch", "capability-notes", "weather"):
            print(f"  {image:<26} {image_mib(f'clawmesh/{image}:{tag}'):7.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.capability_stack", description=__doc__)
    parser.add_argument("--idle", type=float, default=30.0)
    args = parser.parse_args()
    run(args.idle)


if __name__ == "__main__":
    main()
