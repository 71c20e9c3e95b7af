"""The mesh in its containers against the same build run as processes, in one run.

    .venv/bin/python -m bench.containers [--messages 60] [--reference DIR [--reference-tag ref]]
                                         [--no-build] [--keep]

Builds what the container tests build (tests/containers/stack.py: the base image, the
wheels, the images, the fakes), then measures, one after the other:

- processes: this build's servers and orchestrator as processes (tests/fakes/mesh.py's
  running_mesh, as bench.e2e runs them), the fakes served in this process;
- the reference stack, with ``--reference``: another tree's compose.yaml and images already
  built from it under ``--reference-tag`` (today's main: ``TAG=ref`` builds in that tree, or
  in a copy of it), started under a project of its own;
- this stack: compose.yaml with tests/containers/compose.fakes.yaml (the fakes as containers).

For each: ``--messages`` messages, every other one a weather question (a tool call through
the mesh), each ``--gap-s`` after the previous reply (above the per-chat pace of one message
a second, which thus never delays one); the time from the message's injection at the fake
Telegram to the reply's sendMessage there, p50 and p99, and the ratio of each stack's p50 to
the processes'; the CPU time per message of each service (a process's own; a container's
cgroup, its healthchecks included) and the CFS periods its ``cpus`` quota throttled. For
each stack also: ``docker stats`` memory idle (before the messages, median of three
readings) and each server's time from its start to listening at its CPU limit after a
``docker compose restart``. Figures only; it asserts nothing. Needs a Docker engine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # as pytest has it

from bench._stack_readings import (
    cpu_limits,
    health_probe,
    memory_mib,
    restart,
    stack_cpu,
)
from containers.stack import (
    BOT_TOKEN,
    USER_ID,
    Stack,
    build,
    down,
    engine_problem,
    sources_tag,
    up,
)
from containers.stack import stack_environment as stack_env
from fakes.mesh import TOKENS, USER, Mesh, running_mesh
from fakes.standalone import converse

GOAL_RATIO = 1.5  # the stack's p50 over the processes'
GOAL_IDLE_MIB = 600.0
GOAL_LISTENING_S = 3.0
TOOL_PROMPT = "What's the weather in Paris?"
WARMUP = 4  # untimed messages first: connections opened, caches filled
POLL_S = 0.05  # how often the driver asks the fake Telegram for the reply


@dataclass
class Sample:
    kind: str  # "text" or "tool"
    ms: float


@dataclass
class Run:
    """One build's figures."""

    name: str
    samples: list[Sample] = field(default_factory=list)
    cpu_ms: dict[str, float] = field(default_factory=dict)  # per message, per service
    throttled: dict[str, int] = field(default_factory=dict)
    idle_mib: dict[str, float] = field(default_factory=dict)
    listening_s: dict[str, float] = field(default_factory=dict)
    start_cpu_s: dict[str, float] = field(default_factory=dict)
    load: float = 0.0  # the machine's 1-minute load average after the messages
    limits: dict[str, float] = field(default_factory=dict)
    probe: list[str] = field(default_factory=list)

    def p(self, q: float, kind: str | None = None) -> float:
        values = sorted(s.ms for s in self.samples if kind in (None, s.kind))
        if q == 0.5:
            return statistics.median(values)
        return values[min(len(values) - 1, round(q * (len(values) - 1)))]


# --- driving a conversation: the same messages, whichever fake Telegram --------------------

Replies = Callable[[], Awaitable[list[tuple[float, str]]]]
Say = Callable[[str], Awaitable[None]]


async def converse_for(
    run: Run | None, say: Say, replies: Replies, messages: int, gap_s: float
) -> None:
    """``messages`` messages, every other one a weather question; timed into ``run.samples``
    (None: a warm-up, untimed)."""
    for number in range(messages):
        kind = "tool" if number % 2 == 0 else "text"
        before = len(await replies())
        injected = time.time()
        await say(TOOL_PROMPT if kind == "tool" else f"hello {number}")
        with anyio.fail_after(120):
            # The fake Telegram in a container offers no event: it is asked again.
            while len(sent := await replies()) <= before:  # noqa: ASYNC110
                await anyio.sleep(POLL_S)
        reply_time, text = sent[before]
        expected = "Here is what the tool said" if kind == "tool" else "Hello from the fake"
        if not text.startswith(expected):
            raise RuntimeError(f"unexpected reply {text[:300]!r}")
        if run is not None:
            run.samples.append(Sample(kind, (reply_time - injected) * 1000))
        await anyio.sleep(gap_s)


# --- this build as processes ---------------------------------------------------------------


def process_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


async def measure_processes(messages: int, gap_s: float) -> Run:
    run = Run("processes")
    # As the stack runs telegram-io: its long poll, the fakes overlay's lease, pacing on.
    telegram_io = {"TELEGRAM_POLL_TIMEOUT_S": "25", "TELEGRAM_LEASE_S": "5"}
    servers = ("weather", "memory", "shopping", "scheduler", "pending-actions")
    with tempfile.TemporaryDirectory(prefix="bench-containers-") as tmp:
        async with running_mesh(Path(tmp), telegram_io_env=telegram_io, servers=servers) as mesh:
            mesh.llm.default = converse
            token = TOKENS["clawdia"]

            async def say(text: str) -> None:
                mesh.telegram.user_message(token, USER, text)

            async def replies() -> list[tuple[float, str]]:
                return [(s.time, s.text) for s in mesh.telegram.sent(token, USER)]

            await converse_for(None, say, replies, WARMUP, gap_s)
            before = _process_cpu(mesh)
            await converse_for(run, say, replies, messages, gap_s)
            after = _process_cpu(mesh)
            run.load = os.getloadavg()[0]
    run.cpu_ms = {name: (after[name] - before[name]) * 1000 / messages for name in after}
    return run


def _process_cpu(mesh: Mesh) -> dict[str, float]:
    return {name: process_cpu_s(service.pid) for name, service in mesh.services.items()}


# --- a build as a compose stack ------------------------------------------------------------


async def measure_stack(name: str, stack: Stack, messages: int, gap_s: float, keep: bool) -> Run:
    run = Run(name)
    started = time.monotonic()
    try:
        up(stack)
    except AssertionError as error:  # a service unhealthy: on a loaded machine, it may recover
        print(f"{name}: not all healthy at first ({str(error).splitlines()[-1]}); again")
        stack.compose("up", "--detach", "--wait", "--wait-timeout", "240")
    print(f"{name}: up, all healthy in {time.monotonic() - started:.0f} s", flush=True)
    try:
        run.limits = cpu_limits(stack)
        run.probe = health_probe(stack, "weather")
        base = stack.url("fake-telegram", 8443)
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:

            async def say(text: str) -> None:
                body = {"token": BOT_TOKEN, "user_id": USER_ID, "text": text}
                (await client.post("/_control/message", json=body)).raise_for_status()

            async def replies() -> list[tuple[float, str]]:
                params: dict[str, str | int] = {"token": BOT_TOKEN, "chat_id": USER_ID}
                answer = await client.get("/_control/sent", params=params)
                return [(s["time"], s["text"]) for s in answer.raise_for_status().json()]

            await anyio.sleep(10)  # after start-up, before the idle reading: a reading
            run.idle_mib = memory_mib(stack)
            await converse_for(None, say, replies, WARMUP, gap_s)
            before = stack_cpu(stack)
            await converse_for(run, say, replies, messages, gap_s)
            run.load = os.getloadavg()[0]
            used = {service: cpu - before[service] for service, cpu in stack_cpu(stack).items()}
        run.cpu_ms = {service: cpu.seconds * 1000 / messages for service, cpu in used.items()}
        run.throttled = {service: cpu.throttled for service, cpu in used.items()}
        for service in stack.services():
            if service != "orchestrator":
                again = restart(stack, service)
                run.listening_s[service] = again.seconds
                run.start_cpu_s[service] = again.cpu_s
    finally:
        if not keep:
            down(stack)
    return run


# --- the figures side by side --------------------------------------------------------------


def table(title: str, rows: dict[str, list[str]], columns: list[str]) -> None:
    print(f"\n{title}")
    print(f"{'':18}" + "".join(f"{c:>18}" for c in columns))
    for label, cells in rows.items():
        print(f"{label:18}" + "".join(f"{c:>18}" for c in cells))


def report(runs: list[Run], messages: int, gap_s: float) -> None:
    processes, stacks = runs[0], runs[1:]
    names = [run.name for run in runs]
    print(
        f"\nmessage → reply at the fake Telegram: {messages} messages (half a weather tool "
        f"call), {gap_s:g} s apart, after {WARMUP} untimed; ms"
    )
    rows = {}
    for label, q, kind in [
        ("text p50", 0.5, "text"),
        ("tool p50", 0.5, "tool"),
        ("all p50", 0.5, None),
        ("all p99", 0.99, None),
    ]:
        rows[label] = [f"{run.p(q, kind):.0f}" for run in runs]
    rows["machine load (1 min)"] = [f"{run.load:.1f}" for run in runs]
    rows[f"p50 ratio (≤ {GOAL_RATIO:g})"] = [
        f"{run.p(0.5) / processes.p(0.5):.2f}×" for run in runs
    ]
    table("", rows, names)
    services = sorted({service for run in runs for service in run.cpu_ms})
    cpu_rows = {
        service: [
            f"{run.cpu_ms.get(service, 0):.1f}"
            + (f" ({run.throttled[service]} thr)" if service in run.throttled else "")
            for run in runs
        ]
        for service in services
    }
    cpu_rows["sum"] = [f"{sum(run.cpu_ms.values()):.1f}" for run in runs]
    table(
        "CPU ms per message (containers: the whole cgroup; thr: periods throttled)", cpu_rows, names
    )
    if not stacks:
        return
    stack_names = [run.name for run in stacks]
    table(
        "how each stack runs",
        {
            "cpus (server/orch)": [
                f"{run.limits['weather']:g} / {run.limits['orchestrator']:g}" for run in stacks
            ],
            "healthcheck": [" ".join(run.probe[1:])[-17:] for run in stacks],
        },
        stack_names,
    )
    memory = {s: [f"{run.idle_mib.get(s, 0):.1f}" for run in stacks] for s in services}
    memory[f"all (≤ {GOAL_IDLE_MIB:g})"] = [f"{sum(run.idle_mib.values()):.0f}" for run in stacks]
    table("idle memory, docker stats, MiB", memory, stack_names)
    listening = {
        s: [f"{run.listening_s[s]:.1f} ({run.start_cpu_s[s]:.1f} cpu)" for run in stacks]
        for s in stacks[0].listening_s
    }
    listening[f"slowest (≤ {GOAL_LISTENING_S:g})"] = [
        f"{max(run.listening_s.values()):.1f}" for run in stacks
    ]
    table(
        "restart: start → listening at the CPU limit, s (CPU s by then)",
        listening,
        stack_names,
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.containers",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--messages", type=int, default=60, help="timed messages per build")
    parser.add_argument("--gap-s", type=float, default=1.0, help="pause after each reply")
    parser.add_argument("--reference", type=Path, help="another tree: its compose files")
    parser.add_argument("--reference-tag", default="ref", help="its images' TAG")
    parser.add_argument("--no-build", action="store_true", help="use the images as they are")
    parser.add_argument("--keep", action="store_true", help="leave this stack running")
    args = parser.parse_args()
    problem = engine_problem()
    if problem:
        raise SystemExit(f"bench.containers needs a Docker engine: {problem}")
    # The stacks' secret files, as make up writes them (kept with --keep: the stack reads them).
    secrets = Path(tempfile.mkdtemp(prefix="bench-containers-"))
    this = Stack(stack_env(dict(os.environ), secrets / "this"), project="clawmesh-bench")
    if args.no_build:
        this.env["TAG"] = sources_tag(this.env)  # the images the tests built from this tree
    else:
        for step, seconds in build(this).items():
            print(f"{step}: {seconds:.0f} s", flush=True)
    runs = [anyio.run(measure_processes, args.messages, args.gap_s)]
    print(f"processes: p50 {runs[0].p(0.5):.0f} ms", flush=True)
    if args.reference is not None:
        env = stack_env({**os.environ, "TAG": args.reference_tag}, secrets / "reference")
        reference = Stack(env, project="clawmesh-bench-ref", root=args.reference.resolve())
        runs.append(
            anyio.run(measure_stack, "reference stack", reference, args.messages, args.gap_s, False)
        )
    runs.append(anyio.run(measure_stack, "this stack", this, args.messages, args.gap_s, args.keep))
    report(runs, args.messages, args.gap_s)


if __name__ == "__main__":
    main()
