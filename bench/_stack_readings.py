"""What bench.containers reads off a running compose stack: ``docker stats`` memory, each
container's CPU time from its cgroup, and a restarted server's time from start to listening.

Readings only, taken from outside the containers (the host's cgroup files, ``docker``'s own
answers), so that taking them costs the stack nothing it would be measured for.
"""

from __future__ import annotations

import statistics
import subprocess
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from containers.stack import Stack

UNITS = {"B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "kB": 1000, "MB": 1000**2}
# Where the engine puts a container's cgroup: cgroup v2 (systemd or cgroupfs driver), then v1.
V2_DIRS = ("/sys/fs/cgroup/system.slice/docker-{id}.scope", "/sys/fs/cgroup/docker/{id}")
V1_USAGE = "/sys/fs/cgroup/cpuacct/docker/{id}/cpuacct.usage"
V1_STAT = "/sys/fs/cgroup/cpu/docker/{id}/cpu.stat"
# uvicorn's line once the application has started and the socket listens.
LISTENING = "Uvicorn running on"


def _memory_once(stack: Stack, ids: dict[str, str]) -> dict[str, float]:
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


def memory_mib(stack: Stack, readings: int = 3, apart_s: float = 2.0) -> dict[str, float]:
    """Each mesh container's memory as ``docker stats`` reports it: the median of
    ``readings`` readings ``apart_s`` apart (one may fall on a healthcheck in flight)."""
    ids = {stack.container(service): service for service in stack.services()}
    taken: list[dict[str, float]] = []
    for reading in range(readings):
        if reading:
            time.sleep(apart_s)  # a reading, not a test: spacing the samples
        taken.append(_memory_once(stack, ids))
    return {service: statistics.median(t[service] for t in taken) for service in ids.values()}


@dataclass(frozen=True)
class Cpu:
    """A cgroup's CPU time and how often its quota held it back, both since its start."""

    seconds: float
    throttled: int  # periods in which the quota ran out

    def __sub__(self, other: Cpu) -> Cpu:
        return Cpu(self.seconds - other.seconds, self.throttled - other.throttled)


def _stat(path: Path) -> dict[str, int]:
    return {k: int(v) for k, v in (line.split() for line in path.read_text().splitlines())}


def container_cpu(container: str) -> Cpu:
    """The CPU time of everything that ran in the container (its healthchecks too)."""
    for pattern in V2_DIRS:
        folder = Path(pattern.format(id=container))
        if (folder / "cpu.stat").is_file():
            stat = _stat(folder / "cpu.stat")
            return Cpu(stat["usage_usec"] / 1e6, stat.get("nr_throttled", 0))
    usage = Path(V1_USAGE.format(id=container))
    if usage.is_file():
        stat = _stat(Path(V1_STAT.format(id=container)))
        return Cpu(int(usage.read_text()) / 1e9, stat.get("nr_throttled", 0))
    raise RuntimeError(f"no cgroup of container {container[:12]} under /sys/fs/cgroup")


def stack_cpu(stack: Stack) -> dict[str, Cpu]:
    return {service: container_cpu(stack.container(service)) for service in stack.services()}


def _instant(stamp: str) -> float:
    """An RFC 3339 time as Docker writes it (nanoseconds, Z) → seconds since the epoch."""
    whole, _, fraction = stamp.rstrip("Z").partition(".")
    seconds = datetime.fromisoformat(whole + "+00:00").timestamp()
    return seconds + float(f"0.{fraction or 0}")


@dataclass(frozen=True)
class Start:
    """A restarted server: seconds from its start to listening, and the CPU seconds its
    container used from its start until then (a restart begins a new cgroup)."""

    seconds: float
    cpu_s: float


def restart(stack: Stack, service: str) -> Start:
    """``docker compose restart <service>`` and how long it took to listen again."""
    seconds = start_to_listening_s(stack, service)
    return Start(seconds, container_cpu(stack.container(service)).seconds)


def start_to_listening_s(stack: Stack, service: str, timeout_s: float = 120) -> float:
    """``docker compose restart <service>``, then the seconds from the new process's start
    (the container's StartedAt) to uvicorn's line saying it listens (docker's timestamp)."""
    stack.compose("restart", service)
    container = stack.container(service)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        started = stack.inspect(service)["State"]["StartedAt"]
        logs = subprocess.run(
            ["docker", "logs", "--timestamps", "--since", started, container],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        for line in (logs.stdout + logs.stderr).splitlines():
            if LISTENING in line:
                return _instant(line.split(" ", 1)[0]) - _instant(started)
        time.sleep(0.2)  # the log offers no event to wait on: read it again
    raise RuntimeError(f"{service} did not log {LISTENING!r} within {timeout_s:g} s")


def cpu_limits(stack: Stack) -> dict[str, float]:
    """Each mesh service's ``cpus`` as the engine applies it."""
    return {
        service: stack.inspect(service)["HostConfig"]["NanoCpus"] / 1e9
        for service in stack.services()
    }


def health_probe(stack: Stack, service: str) -> list[str]:
    """The healthcheck command a service's container runs."""
    return [str(part) for part in stack.inspect(service)["Config"]["Healthcheck"]["Test"]]
