"""What each process loads, its memory, and how soon it listens: this build against the reference.

uv run python -m bench.footprint [--runs 5] [--reference REVISION|DIR]

Per process: every server as ``python -m mcp_<name>`` (HTTP, its own data directory kept
from one start to the next, as a container restart keeps its volume) and the embedded
orchestrator (``make run``: ``python -m orchestrator`` with config/mcp_servers.local.yaml,
every server in-process, against fake Telegram and fake OpenAI). For each:

    modules     the modules imported by the time it listens (``-X importtime``, one start)
    RSS         VmRSS once it listens (the embedded orchestrator: also after SETTLE_S idle)
    listen      from the spawn to the first answer of GET /health
    start CPU   the process's user + system CPU time at that moment (/proc/<pid>/stat)

Both builds run in one invocation with the same interpreter and virtualenv, alternating
per start, medians of ``--runs`` starts each after one unmeasured warm-up. The reference is
a checkout (today's main) put ahead of the editable installs with PYTHONPATH; each build's
modules are checked by their ``__file__`` before anything is measured. Both builds read and
write their bytecode under one PYTHONPYCACHEPREFIX (the reference checkout is never written).

A container at ``cpus: 0.5`` gets half a core: its start takes at least start CPU / 0.5,
the "at 0.5 CPU" column (the start is one thread). Ratios are new / old.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import anyio.abc
import httpx

import bench._fakes  # noqa: F401 (puts tests/ on the path for fakes.*)
from bench.reference import BEFORE_LEAN, reference_tree
from fakes.approval_keys import PUBLIC_ENV, SIGNING_ENV, write_public_key, write_signing_key
from fakes.mesh import TOKENS, running_embedded
from fakes.serving import free_port
from fakes.telegram_api import FakeTelegram

ROOT = Path(__file__).resolve().parent.parent
SERVERS = {
    "weather": "mcp_weather",
    "calendar": "mcp_calendar",
    "shopping": "mcp_shopping",
    "memory": "mcp_memory",
    "pending-actions": "mcp_pending_actions",
    "telegram-io": "mcp_telegram_io",
    "scheduler": "mcp_scheduler",
}
EMBEDDED = "embedded"  # the orchestrator with every server in it
PACKAGES = ("meshkit", "orchestrator", *SERVERS.values())
# Third-party packages worth naming when a process loads them.
WATCHED = (
    "googleapiclient",
    "google.auth",
    "requests",
    "rich",
    "click",
    "cyclopts",
    "authlib",
    "jwt",
    "joserfc",
    "cryptography",
    "beartype",
    "openai",
    "telegram",
    "jsonschema",
    "pygments",
    "yaml",
    "icalendar",
)
AGENT = "clawdia"
PRIVATE = ("OPENAI_", "TELEGRAM_", "MESH_")  # a developer's own, never here
SETTLE_S = 2.0
CPU_LIMIT = 0.5
GOAL_LISTEN_S = 3.0
GOAL_EMBEDDED_RSS_MIB = 135.0


@dataclass
class Build:
    name: str
    root: Path
    pythonpath: str | None  # None: the virtualenv's editable installs (this checkout)

    def env(self) -> dict[str, str]:
        return {} if self.pythonpath is None else {"PYTHONPATH": self.pythonpath}


@dataclass
class Sample:
    listen_s: float
    cpu_s: float
    rss_mib: float
    settled_mib: float | None = None


@dataclass
class Figures:
    samples: list[Sample] = field(default_factory=list)
    modules: int = 0
    watched: list[str] = field(default_factory=list)

    def median(self, pick: Callable[[Sample], float | None]) -> float:
        values = [v for v in map(pick, self.samples) if v is not None]
        return statistics.median(values) if values else float("nan")


def builds(reference: Path) -> list[Build]:
    sources = [reference / "meshkit" / "src", reference / "orchestrator" / "src"]
    sources += sorted((reference / "servers").glob("*/src"))
    return [
        Build("old", reference, os.pathsep.join(map(str, sources))),
        Build("new", ROOT, None),
    ]


def check_build(build: Build, base: dict[str, str]) -> None:
    """Refuse to measure unless every package of the build comes from its own checkout."""
    code = f"import importlib\nfor p in {PACKAGES!r}: print(importlib.import_module(p).__file__)"
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**base, **build.env()},
        capture_output=True,
        text=True,
        check=False,
    )
    files = done.stdout.split()
    if done.returncode != 0 or len(files) != len(PACKAGES):
        raise SystemExit(f"{build.name}: the packages do not import: {done.stderr[-500:]}")
    strays = [f for f in files if not Path(f).resolve().is_relative_to(build.root.resolve())]
    if strays:
        raise SystemExit(f"{build.name} build loads code from elsewhere: {strays}")


def cpu_s(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc, clock ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def imported(log: str) -> tuple[int, list[str]]:
    """From ``-X importtime`` lines on stderr: how many modules, and the WATCHED among them."""
    names = {
        line.rsplit("|", 1)[1].strip()
        for line in log.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    names.discard("imported package")  # the header line
    watched = [w for w in WATCHED if any(n == w or n.startswith(w + ".") for n in names)]
    return len(names), watched


async def until_listening(url: str, process: anyio.abc.Process, began: float, log: Path) -> float:
    """Seconds from ``began`` to the first HTTP answer at ``url``."""
    async with httpx.AsyncClient(timeout=2) as client:
        with anyio.fail_after(120):
            while True:
                if process.returncode is not None:
                    said = await anyio.Path(log).read_text(errors="replace")
                    raise RuntimeError(f"exited before listening: {said[-2000:]}")
                try:
                    await client.get(url)
                    return time.perf_counter() - began
                except httpx.TransportError:
                    await anyio.sleep(0.01)


class Servers:
    """The server processes' environments (fake Telegram for telegram-io, test keys)."""

    def __init__(self, tmp: Path, telegram_url: str) -> None:
        self.tmp = tmp
        fleet = tmp / "config" / "agents.yaml"
        fleet.parent.mkdir(parents=True, exist_ok=True)
        fleet.write_text(
            f"agents:\n  {AGENT}:\n    name: Clawdia\n    persona: {ROOT / 'agents' / AGENT}\n"
            f"    bot_token_env: CLAWDIA_BOT_TOKEN\n    timezone: Europe/Paris\n"
        )
        (tmp / "config" / "schedule.yaml").write_text("agents: {}\n")
        keys = tmp / "keys"
        public = {PUBLIC_ENV: str(write_public_key(keys))}
        self.base = {
            **{k: v for k, v in os.environ.items() if not k.startswith(PRIVATE)},
            "FASTMCP_SHOW_SERVER_BANNER": "false",
            "FASTMCP_CHECK_FOR_UPDATES": "off",
            "FASTMCP_LOG_ENABLED": "false",
            "PTB_TIMEDELTA": "true",
            # Bytecode written and read here, for both builds (empty: the variable unset).
            "PYTHONPYCACHEPREFIX": str(Path(tempfile.gettempdir()) / "clawmesh-footprint-pyc"),
            "PYTHONDONTWRITEBYTECODE": "",
            "CLAWMESH_AGENTS": str(fleet),
            "CLAWMESH_SCHEDULE": str(tmp / "config" / "schedule.yaml"),
            "MESH_TOKEN_SHA256": hashlib.sha256(b"footprint").hexdigest(),
        }
        self.base.pop("PYTHONPATH", None)
        self.extra = {
            "weather": {  # never called: nothing listens there
                "WEATHER_FORECAST_URL": "http://127.0.0.1:9/v1/forecast",
                "WEATHER_GEOCODING_URL": "http://127.0.0.1:9/v1/search",
            },
            "calendar": {**public, "CALENDAR_BACKEND": "local"},
            "shopping": public,
            "memory": public,
            "scheduler": public,
            "pending-actions": {SIGNING_ENV: str(write_signing_key(keys))},
            "telegram-io": {
                "CLAWDIA_BOT_TOKEN": TOKENS[AGENT],
                "TELEGRAM_API_BASE": telegram_url,
            },
        }

    async def start(self, build: Build, name: str, *, count: bool) -> tuple[Sample, str]:
        port = free_port()
        log = self.tmp / "logs" / f"{build.name}-{name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        env = {
            **self.base,
            **self.extra[name],
            **build.env(),
            "MCP_PORT": str(port),
            "DATA_DIR": str(self.tmp / "data" / build.name / name),
            **({"PYTHONPROFILEIMPORTTIME": "1"} if count else {}),
        }
        with log.open("wb") as out:
            began = time.perf_counter()
            process = await anyio.open_process(
                [sys.executable, "-m", SERVERS[name]],
                env=env,
                cwd=self.tmp,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
            )
        try:
            url = f"http://127.0.0.1:{port}/health"
            listen = await until_listening(url, process, began, log)
            sample = Sample(listen, cpu_s(process.pid), rss_mib(process.pid))
        finally:
            await stop(process)
        return sample, log.read_text(errors="replace")


async def stop(process: anyio.abc.Process) -> None:
    if process.returncode is None:
        process.terminate()
        with anyio.move_on_after(10):
            await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()


async def start_embedded(
    base: dict[str, str], build: Build, tmp: Path, *, count: bool
) -> tuple[Sample, str]:
    """``make run`` against the fakes: listening once its /health answers (the registry
    connected, the channel running), then SETTLE_S idle for the settled RSS."""
    port = free_port()
    env = {
        **{k: base[k] for k in ("PYTHONPYCACHEPREFIX", "PYTHONDONTWRITEBYTECODE")},
        "FASTMCP_LOG_ENABLED": "false",
        **build.env(),
        "MCP_PORT": str(port),
        **({"PYTHONPROFILEIMPORTTIME": "1"} if count else {}),
    }
    servers = ("weather", "calendar", "shopping")  # every registry server the model uses
    began = time.perf_counter()
    async with running_embedded(tmp, env=env, servers=servers) as mesh:
        process = mesh.orchestrator.process
        assert process is not None
        log = mesh.orchestrator.log
        listen = await until_listening(f"http://127.0.0.1:{port}/health", process, began, log)
        sample = Sample(listen, cpu_s(process.pid), rss_mib(process.pid))
        await anyio.sleep(SETTLE_S)
        sample.settled_mib = rss_mib(process.pid)
    return sample, log.read_text(errors="replace")


@asynccontextmanager
async def serving_telegram() -> AsyncIterator[str]:
    telegram = FakeTelegram()
    telegram.add_bot(TOKENS[AGENT], name="Clawdia")
    async with AsyncExitStack() as stack:
        url = await stack.enter_async_context(telegram.serve())
        stack.callback(telegram.close)
        yield url


async def measure(
    reference: Path, runs: int, names: Sequence[str]
) -> dict[str, dict[str, Figures]]:
    pair = builds(reference)
    figures = {name: {b.name: Figures() for b in pair} for name in names}
    with tempfile.TemporaryDirectory(prefix="clawmesh-footprint-") as tmp_dir:
        tmp = Path(tmp_dir)
        async with serving_telegram() as telegram_url:
            servers = Servers(tmp, telegram_url)
            for build in pair:
                check_build(build, servers.base)

            async def once(build: Build, name: str, *, count: bool, tag: str) -> Sample:
                if name == EMBEDDED:
                    where = tmp / "embedded" / build.name / tag
                    sample, log = await start_embedded(servers.base, build, where, count=count)
                else:
                    sample, log = await servers.start(build, name, count=count)
                if count:
                    figures[name][build.name].modules, figures[name][build.name].watched = imported(
                        log
                    )
                return sample

            for name in names:  # a warm-up (bytecode, data files), then the module count
                for build in pair:
                    await once(build, name, count=False, tag="runs")
                    await once(build, name, count=True, tag="count")
            for run in range(runs):
                for name in names:
                    for build in pair if run % 2 == 0 else pair[::-1]:
                        sample = await once(build, name, count=False, tag="runs")
                        figures[name][build.name].samples.append(sample)
                print(f"run {run + 1}/{runs} done", file=sys.stderr)
    return figures


def ratio(new: float, old: float) -> str:
    return f"{new / old:5.2f}" if old else "  -  "


def report(figures: dict[str, dict[str, Figures]], runs: int) -> None:
    print(f"per process, medians of {runs} starts per build (alternating), ratio new/old\n")
    head = (
        f"{'process':<16} | {'modules old→new':>17} {'×':>5} | {'RSS MiB old→new':>17} {'×':>5} "
        f"| {'listen s old→new':>17} {'×':>5} | {'start CPU s old→new':>19} {'×':>5} "
        f"| {'at 0.5 CPU':>10}"
    )
    print(head)
    print("-" * len(head))
    for name, pair in figures.items():
        old, new = pair["old"], pair["new"]
        cells = []
        for pick in (
            lambda s: s.rss_mib,
            lambda s: s.listen_s,
            lambda s: s.cpu_s,
        ):
            o, n = old.median(pick), new.median(pick)
            cells.append((o, n))
        (ro, rn), (lo, ln), (co, cn) = cells
        print(
            f"{name:<16} | {old.modules:>8}→{new.modules:<8} {ratio(new.modules, old.modules)} "
            f"| {ro:>8.1f}→{rn:<8.1f} {ratio(rn, ro)} | {lo:>8.2f}→{ln:<8.2f} {ratio(ln, lo)} "
            f"| {co:>9.2f}→{cn:<9.2f} {ratio(cn, co)} | {cn / CPU_LIMIT:>8.1f} s"
        )
    print("\nwatched third-party packages loaded (new build; old build where it differs):")
    for name, pair in figures.items():
        line = f"  {name:<16} {' '.join(pair['new'].watched)}"
        gone = [w for w in pair["old"].watched if w not in pair["new"].watched]
        print(line + (f"   (no longer: {' '.join(gone)})" if gone else ""))
    if EMBEDDED in figures:
        old, new = figures[EMBEDDED]["old"], figures[EMBEDDED]["new"]
        o, n = old.median(lambda s: s.settled_mib), new.median(lambda s: s.settled_mib)
        verdict = "met" if n <= GOAL_EMBEDDED_RSS_MIB else "MISSED"
        print(
            f"\nembedded after {SETTLE_S:g} s idle: {o:.1f} → {n:.1f} MiB RSS ({ratio(n, o)}); "
            f"goal ≤ {GOAL_EMBEDDED_RSS_MIB:g} MiB: {verdict}"
        )
    slowest = max(
        (pair["new"].median(lambda s: s.cpu_s) / CPU_LIMIT, name)
        for name, pair in figures.items()
        if name != EMBEDDED
    )
    verdict = "met" if slowest[0] <= GOAL_LISTEN_S else "MISSED"
    print(
        f"slowest server at {CPU_LIMIT} CPU (start CPU / {CPU_LIMIT}): {slowest[1]} "
        f"{slowest[0]:.1f} s; goal ≤ {GOAL_LISTEN_S:g} s: {verdict}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.footprint",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--runs", type=int, default=5, help="measured starts per build")
    parser.add_argument(
        "--reference",
        default=BEFORE_LEAN,
        help=f"the reference build: a git revision or a checkout (default {BEFORE_LEAN})",
    )
    parser.add_argument(
        "--only", nargs="*", choices=[*SERVERS, EMBEDDED], help="these processes only"
    )
    args = parser.parse_args()
    names = args.only or [*SERVERS, EMBEDDED]
    with reference_tree(args.reference) as reference:
        figures = anyio.run(measure, reference, args.runs, names)
    report(figures, args.runs)


if __name__ == "__main__":
    main()
