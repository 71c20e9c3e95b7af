"""A turn's cost, this build against a reference build, in one run (issue 23, points 1 and 2).

uv run python -m bench.lean [--ref REVISION|DIR] [--turns 200] [--block 20] [--bursts 3]

Both builds run the same way against the same fakes (tests/fakes/mesh.py): the reference's
processes with its ``*/src`` folders first on PYTHONPATH (its code, checked by each
package's ``__file__``), this build's as installed; the same interpreter and libraries for
both. Only public behaviour is driven and read: the fake Telegram's messages and taps, the
fake OpenAI's requests. Turn kinds:

    text      a message, a text answer
    tool      a message, one weather call, a text answer
    tap       a message, a proposal (shopping add, with buttons), a tap on "Add", the edit
    scheduled a scheduled prompt: a job of schedule.yaml come due, a normal turn in the
              owner's chat (calls only)

1. Internal MCP calls per turn: each mesh server behind a counting HTTP proxy (it counts
   the JSON-RPC ``tools/call`` requests passing through, by tool), in a pass of its own so
   the timed passes have no proxy. The poll that brings a message (telegram-io's
   ``next_updates``; the scheduler's ``next_due`` for a scheduled prompt) is counted
   apart; the rest is split into the tools the model asked for, the work beside the reply
   (leases kept, "typing…", the other long poll, a summary round when one is due) and the
   turn's own plumbing, which the issue's goal (at most 3) is about. Scheduled prompts:
   ``--turns`` prompt jobs at the same minute, on a scheduler whose clock the bench moves
   (``python -m fakes.clocked``) past that minute once the other kinds are counted; they
   are handled side by side (8 at once) and counted until every firing is acked.
2. Process CPU time (utime + stime, /proc/<pid>/stat) per turn: the embedded orchestrator
   (``make run``'s shape, every server in it) and summed over the mesh's processes.
   Per-chat pacing is off (TELEGRAM_PACE_S=0) in both. CPU is read per block of
   ``--block`` turns (the kernel counts in 10 ms ticks), the builds alternating block by
   block; a figure is the median over blocks of CPU / turns.
3. 20 chats × 10 messages at once (the mesh as processes, pacing off): the time from the
   injection to the last reply, median over ``--bursts`` bursts, the builds alternating.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import anyio
import httpx
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from bench._fakes import serving
from bench.e2e import TAP_ANSWER, TAP_PROMPT, answer
from bench.reference import BEFORE_LEAN, reference_tree
from bench.turn import TEXT_ANSWER, TEXT_PROMPT, TOOL_ANSWER, TOOL_PROMPT
from fakes.mesh import (
    MORE_USERS,
    PROPOSING,
    ROOT,
    SERVERS,
    TOKENS,
    USER,
    Mesh,
    eventually,
    running_embedded,
    running_mesh,
    source_path,
)

TOKEN = TOKENS["clawdia"]
PACE_OFF = {"TELEGRAM_PACE_S": "0"}
POLL = "next_updates"  # telegram-io's long poll: the call that brings a message
POLLS = {"scheduled": "next_due"}  # the kinds another poll brings
KINDS = ("text", "tool", "tap")
CALL_KINDS = (*KINDS, "scheduled")
SCHEDULED_PROMPT = "Time for the scheduled check-in."
PARIS = ZoneInfo("Europe/Paris")  # the fleet's zone (fakes.mesh)
GOALS = {  # new / ref, at most
    "embedded CPU, text": 0.4,
    "embedded CPU, tool": 0.5,
    "mesh CPU, text": 0.5,
    "mesh CPU, tool": 0.5,
    "mesh CPU, tap": 0.5,
    "20 chats × 10": 0.5,
}
GOAL_CALLS = 3
# Calls that are not the turn's own plumbing: the tools the model asked for (and the one a
# tap confirms), and the work beside and after the reply (leases kept, "typing…", the
# scheduler's poll, a summary round when memory says one is due).
ASKED = {"get_current_weather", "propose_add_to_list", "confirm_add_to_list"}
BESIDE = {"extend_leases", "send_chat_action", "next_due", "evicted_items", "save_summary"}
WARM_UP_S = 120  # a process just started on a busy machine may take long for its first turn
CHATS, MESSAGES = 20, 10
TICK_S = os.sysconf("SC_CLK_TCK")
PACKAGES = ("meshkit", "orchestrator", *SERVERS.values())


# ---------------------------------------------------------------------------- builds


@dataclass(frozen=True)
class Build:
    name: str
    root: Path


def proposing(build: Build) -> tuple[str, ...]:
    """The servers the mesh's registry says may propose (``proposes: true``), for a build
    that reads the key: one from before issue 35 refuses it (and offers every producer)."""
    package = build.root / "orchestrator" / "src" / "orchestrator"
    config = package / "config" / "registry.py"  # config.py before issue 36
    config = config if config.exists() else package / "config.py"
    return PROPOSING if "proposes: bool" in config.read_text() else ()


def check_sources(build: Build) -> None:
    """Each package of ``build`` loads from its tree (not from another one's install)."""
    env = dict(os.environ)
    if build.root != ROOT:
        env["PYTHONPATH"] = source_path(build.root)
    probe = (
        "import importlib, sys\nfor n in sys.argv[1:]: print(importlib.import_module(n).__file__)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, *PACKAGES],
        env=env,
        cwd=build.root,
        capture_output=True,
        text=True,
        check=False,
    )
    files = done.stdout.split()
    stray = [f for f in files if not Path(f).resolve().is_relative_to(build.root.resolve())]
    if done.returncode != 0 or stray or len(files) != len(PACKAGES):
        raise SystemExit(
            f"{build.name}: its code does not load from {build.root}: {stray or done.stderr[-500:]}"
        )


# ---------------------------------------------------------------------------- turns


async def turn(mesh: Mesh, kind: str, user: int, serial: int, timeout_s: float = 30) -> None:
    """One turn of ``kind`` in ``user``'s chat, until its reply (or the tap's edit)."""
    telegram = mesh.telegram
    before = len(telegram.sent(TOKEN, user))
    prompt = {"text": TEXT_PROMPT, "tool": TOOL_PROMPT, "tap": f"{TAP_PROMPT} item {serial}"}[kind]
    expected = {"text": TEXT_ANSWER, "tool": TOOL_ANSWER, "tap": TAP_ANSWER}[kind]
    telegram.user_message(TOKEN, user, prompt)
    await telegram.wait_for(lambda: len(telegram.sent(TOKEN, user)) > before, timeout_s)
    reply = telegram.sent(TOKEN, user)[before]
    if not reply.text.startswith(expected):
        raise RuntimeError(f"{kind}: unexpected reply {reply.text[:300]!r}")
    if kind != "tap":
        return
    rows = (reply.reply_markup or {})["inline_keyboard"]
    telegram.tap(TOKEN, user, reply.message_id, rows[0][0]["callback_data"])
    await telegram.wait_for(lambda: bool(reply.edits), timeout_s)
    if "✅" not in reply.edits[0].text:
        raise RuntimeError(f"tap: unexpected edit {reply.edits[0].text[:300]!r}")


async def block(
    mesh: Mesh, kind: str, turns: int, serial: Iterable[int], timeout_s: float = 30
) -> None:
    """``turns`` turns one after the other, then until every update is acked (what follows
    a reply, such as storing the turn, belongs to the block)."""
    numbers = iter(serial)
    for _ in range(turns):
        await turn(mesh, kind, USER, next(numbers), timeout_s)
    await mesh.all_acked()


# ---------------------------------------------------------------------------- CPU


def cpu_s(pids: Iterable[int]) -> float:
    """utime + stime of the processes, in seconds."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    return total / TICK_S


@dataclass
class Running:
    build: Build
    mesh: Mesh
    serial: Iterator[int] = field(default_factory=lambda: iter(range(1_000_000)))

    @property
    def pids(self) -> list[int]:
        return [service.pid for service in self.mesh.services.values()]


async def cpu_per_turn(
    runs: list[Running], kinds: Iterable[str], turns: int, size: int
) -> dict[tuple[str, str], list[float]]:
    """(build, kind) → ms of CPU per turn, one value per block; builds alternate per block."""
    found: dict[tuple[str, str], list[float]] = {}
    for kind in kinds:
        for run in runs:  # warm-up: the first turns of a kind load code and fill caches
            await block(run.mesh, kind, 3, run.serial, WARM_UP_S)
        for _ in range(max(1, turns // size)):
            for run in runs:
                before = cpu_s(run.pids)
                await block(run.mesh, kind, size, run.serial)
                spent = cpu_s(run.pids) - before
                found.setdefault((run.build.name, kind), []).append(1000 * spent / size)
    return found


# ---------------------------------------------------------------------------- calls


class CountingProxy:
    """Passes HTTP requests on to one MCP server, counting the ``tools/call`` in them."""

    def __init__(self, server: str, counts: Counter[tuple[str, str]]) -> None:
        self.server = server
        self.target = ""
        self.counts = counts
        self.client = httpx.AsyncClient(timeout=None)  # long polls: the server's own timeout
        self.app = Starlette(
            routes=[Route("/{path:path}", self.forward, methods=["GET", "POST", "DELETE"])]
        )

    def count(self, body: bytes) -> None:
        try:
            message = json.loads(body)
        except ValueError:
            return
        for item in message if isinstance(message, list) else [message]:
            if isinstance(item, dict) and item.get("method") == "tools/call":
                self.counts[self.server, str(item.get("params", {}).get("name"))] += 1

    async def forward(self, request: Request) -> Response:
        body = await request.body()
        if request.method == "POST":
            self.count(body)
        headers = [
            (k, v) for k, v in request.headers.raw if k.lower() not in (b"host", b"content-length")
        ]
        upstream = await self.client.send(
            self.client.build_request(
                request.method,
                self.target,
                params=request.url.query,
                headers=headers,
                content=body,
            ),
            stream=True,
        )
        passed = {
            k: v
            for k, v in upstream.headers.items()
            if k.lower() not in ("transfer-encoding", "connection", "content-length")
        }
        return StreamingResponse(
            upstream.aiter_raw(),
            status_code=upstream.status_code,
            headers=passed,
            background=BackgroundTask(upstream.aclose),
        )


@asynccontextmanager
async def counting(
    counts: Counter[tuple[str, str]],
) -> AsyncIterator[Callable[[str, str], str]]:
    """A proxy per mesh server; yields running_mesh's ``front``."""
    async with AsyncExitStack() as stack:
        urls: dict[str, str] = {}
        proxies: dict[str, CountingProxy] = {}
        for server in SERVERS:
            proxies[server] = CountingProxy(server, counts)
            urls[server] = await stack.enter_async_context(serving(proxies[server].app))
            stack.push_async_callback(proxies[server].client.aclose)

        def front(server: str, url: str) -> str:
            proxies[server].target = url
            return f"{urls[server]}/mcp"

        yield front


def prompt_jobs(count: int, at: datetime) -> str:
    """schedule.yaml: ``count`` prompt jobs, each daily at ``at``."""
    jobs = "".join(
        f'      - {{name: check-in-{n}, cron: "{at.minute} {at.hour} * * *", '
        f"prompt: {SCHEDULED_PROMPT}}}\n"
        for n in range(count)
    )
    return f"agents:\n  clawdia:\n    prompts:\n{jobs}"


def fired(mesh: Mesh) -> tuple[int, int]:
    """(firings due, firings done), read from the scheduler's database file."""
    path = mesh.tmp / "data" / "scheduler" / "scheduler.sqlite3"
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        due, done = db.execute(
            "SELECT COUNT(*) FILTER (WHERE state = 'due'), COUNT(*) FILTER (WHERE state = 'done')"
            " FROM firings"
        ).fetchone()
    db.close()
    return int(due), int(done)


async def scheduled_prompts(mesh: Mesh, count: int, at: datetime, clock: Path) -> None:
    """Move the scheduler's clock past ``at``: ``count`` prompts fire at once; until each
    has its reply and every firing is acked."""
    telegram = mesh.telegram
    before = len(telegram.sent(TOKEN, USER))
    await anyio.Path(clock).write_text(str(at.timestamp() + 1 - time.time()))
    await telegram.wait_for(lambda: len(telegram.sent(TOKEN, USER)) >= before + count, WARM_UP_S)
    replies = {sent.text for sent in telegram.sent(TOKEN, USER)[before:]}
    if replies != {TEXT_ANSWER}:
        raise RuntimeError(f"scheduled: unexpected replies {sorted(replies)[:3]!r}")

    async def all_acked() -> bool:
        return fired(mesh) == (0, count)

    await eventually(all_acked, 60)


async def calls_per_turn(
    build: Build, tmp: Path, turns: int
) -> dict[str, Counter[tuple[str, str]]]:
    """kind → (server, tool) → calls per turn (mean over ``turns``, after a warm-up; the
    scheduled prompts after the other kinds, which warm their paths up)."""
    counts: Counter[tuple[str, str]] = Counter()
    per_kind: dict[str, Counter[tuple[str, str]]] = {}
    at = (datetime.now(PARIS) + timedelta(hours=2)).replace(second=0, microsecond=0)
    await anyio.Path(tmp).mkdir(parents=True, exist_ok=True)
    clock = tmp / "scheduler-clock"
    async with (
        counting(counts) as front,
        running_mesh(
            tmp,
            telegram_io_env=PACE_OFF,
            front=front,
            root=build.root,
            proposing=proposing(build),
            schedule=prompt_jobs(turns, at),
            clock_file=clock,
        ) as mesh,
    ):
        mesh.llm.default = answer
        serial = iter(range(1_000_000))
        for kind in CALL_KINDS:
            if kind != "scheduled":
                await block(mesh, kind, 3, serial, WARM_UP_S)
            before = Counter(counts)
            if kind == "scheduled":
                await scheduled_prompts(mesh, turns, at, clock)
            else:
                await block(mesh, kind, turns, serial)
            delta = Counter(counts)
            delta.subtract(before)
            per_kind[kind] = Counter({k: v / turns for k, v in delta.items() if v})
    return per_kind


# ---------------------------------------------------------------------------- burst


async def burst(mesh: Mesh) -> float:
    """Seconds from 20 chats sending 10 messages each at once to the last reply."""
    telegram = mesh.telegram
    users = [USER, *MORE_USERS[: CHATS - 1]]
    before = {user: len(telegram.sent(TOKEN, user)) for user in users}
    started = time.perf_counter()
    for n in range(MESSAGES):
        for user in users:
            telegram.user_message(TOKEN, user, f"{TEXT_PROMPT} ({n})")

    def done() -> bool:
        return all(len(telegram.sent(TOKEN, u)) >= before[u] + MESSAGES for u in users)

    await telegram.wait_for(done, 300)
    elapsed = time.perf_counter() - started
    await mesh.all_acked()
    return elapsed


# ---------------------------------------------------------------------------- report


def ratio(new: float, ref: float) -> str:
    return f"{new / ref:5.2f}×" if ref else "   - "


def poll_of(kind: str) -> str:
    return POLLS.get(kind, POLL)


def beside(kind: str) -> set[str]:
    """The work beside a turn of ``kind``'s reply, with the long poll that did not bring it."""
    return (BESIDE | {POLL}) - {poll_of(kind)}


def own(tool: str, kind: str) -> bool:
    """A call of the turn's own plumbing (see ASKED and BESIDE)."""
    return tool != poll_of(kind) and tool not in ASKED and tool not in beside(kind)


def summary_lines(kind: str) -> list[tuple[str, Callable[[str], bool]]]:
    """The sums printed under a kind's calls: label, and which tools it adds up."""
    poll, aside = poll_of(kind), beside(kind)
    return [
        ("= after the poll, all", lambda tool: tool != poll),
        ("  the model's tools", lambda tool: tool in ASKED),
        ("  beside the reply", lambda tool: tool in aside),
        ("  the turn's own", lambda tool: own(tool, kind)),
    ]


def print_calls(
    per_build: dict[str, dict[str, Counter[tuple[str, str]]]], names: list[str]
) -> None:
    ref, new = names
    print(
        "internal MCP calls per turn (counting proxies, mean over the turns; the poll apart:"
        f" {POLL}, for a scheduled prompt next_due)"
    )
    w = max(len(kind) for kind in CALL_KINDS)
    print(f"{'kind':<{w}} | {'tool':<36} | {ref:>6} | {new:>6}")
    print(f"{'-' * w}-+-{'-' * 36}-+-{'-' * 6}-+-{'-' * 6}")
    for kind in CALL_KINDS:
        tools = sorted(set(per_build[ref][kind]) | set(per_build[new][kind]))
        for server, tool in tools:
            a, b = per_build[ref][kind][server, tool], per_build[new][kind][server, tool]
            print(f"{kind:<{w}} | {server + '.' + tool:<36} | {a:6.2f} | {b:6.2f}")
        for label, keep in summary_lines(kind):
            a, b = (
                sum(v for (_, tool), v in per_build[name][kind].items() if keep(tool))
                for name in (ref, new)
            )
            verdict = ""
            if label == "  the turn's own":
                verdict = f"   goal ≤ {GOAL_CALLS}: {'met' if b <= GOAL_CALLS else 'MISSED'}"
            print(f"{kind:<{w}} | {label:<36} | {a:6.2f} | {b:6.2f}{verdict}")
        print(f"{'-' * w}-+-{'-' * 36}-+-{'-' * 6}-+-{'-' * 6}")


def print_figures(rows: list[tuple[str, str, float, float]], names: list[str]) -> None:
    ref, new = names
    print(f"\n{'figure (median)':<22} | {'unit':<9} | {ref:>8} | {new:>8} | new/ref | goal")
    print(f"{'-' * 22}-+-{'-' * 9}-+-{'-' * 8}-+-{'-' * 8}-+---------+-{'-' * 16}")
    for name, unit, a, b in rows:
        goal = GOALS.get(name)
        verdict = "" if goal is None else f"≤ {goal}×: {'met' if b <= goal * a else 'MISSED'}"
        print(f"{name:<22} | {unit:<9} | {a:8.2f} | {b:8.2f} | {ratio(b, a):>7} | {verdict}")


# ---------------------------------------------------------------------------- run


async def run(ref: Path, turns: int, size: int, bursts: int) -> None:
    builds = [Build("ref", ref), Build("new", ROOT)]
    names = [b.name for b in builds]
    for build in builds:
        check_sources(build)
    print(f"ref: {ref}\nnew: {ROOT}\n{turns} turns per figure, CPU in blocks of {size}\n")
    rows: list[tuple[str, str, float, float]] = []
    with tempfile.TemporaryDirectory(prefix="clawmesh-lean-") as tmp:
        base = Path(tmp)

        calls: dict[str, dict[str, Counter[tuple[str, str]]]] = {}
        for build in builds:
            calls[build.name] = await calls_per_turn(build, base / f"count-{build.name}", turns)
        print_calls(calls, names)

        async with AsyncExitStack() as stack:
            runs = []
            for build in builds:
                mesh = await stack.enter_async_context(
                    running_embedded(base / f"embedded-{build.name}", env=PACE_OFF, root=build.root)
                )
                mesh.llm.default = answer
                runs.append(Running(build, mesh))
            cpu = await cpu_per_turn(runs, ("text", "tool"), turns, size)
        for kind in ("text", "tool"):
            a, b = (statistics.median(cpu[n, kind]) for n in names)
            rows.append((f"embedded CPU, {kind}", "ms/turn", a, b))

        async with AsyncExitStack() as stack:
            runs = []
            for build in builds:
                mesh = await stack.enter_async_context(
                    running_mesh(
                        base / f"mesh-{build.name}",
                        telegram_io_env=PACE_OFF,
                        root=build.root,
                        proposing=proposing(build),
                    )
                )
                mesh.llm.default = answer
                runs.append(Running(build, mesh))
            cpu = await cpu_per_turn(runs, KINDS, turns, size)
            for kind in KINDS:
                a, b = (statistics.median(cpu[n, kind]) for n in names)
                rows.append((f"mesh CPU, {kind}", "ms/turn", a, b))
            times: dict[str, list[float]] = {n: [] for n in names}
            for _ in range(bursts):
                for run in runs:
                    times[run.build.name].append(await burst(run.mesh))
            a, b = (statistics.median(times[n]) for n in names)
            rows.append((f"{CHATS} chats × {MESSAGES}", "s to last", a, b))
    print_figures(rows, names)
    for name in names:  # few samples: the spread says how far the median can be trusted
        print(f"{CHATS} chats × {MESSAGES}, {name}: " + ", ".join(f"{t:.2f}" for t in times[name]))


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.lean",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--ref",
        default=BEFORE_LEAN,
        help=f"the reference build: a git revision or a checkout (default {BEFORE_LEAN})",
    )
    parser.add_argument("--turns", type=int, default=200, help="turns per figure and kind")
    parser.add_argument("--block", type=int, default=20, help="turns per CPU reading")
    parser.add_argument("--bursts", type=int, default=3, help="20×10 bursts per build")
    args = parser.parse_args()
    with reference_tree(args.ref) as ref:
        anyio.run(run, ref, args.turns, args.block, args.bursts)


if __name__ == "__main__":
    main()
