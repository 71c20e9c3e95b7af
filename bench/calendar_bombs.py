"""What one hostile calendar input costs the calendar server, before and after (issue 35,
points 1 and 2): wall time, CPU time and peak RSS of the process that does the work, and
how long ``/health`` takes to answer meanwhile.

.venv/bin/python -m bench.calendar_bombs [--ref DIR|REVISION] [--timeout 60]

The bombs, each on a fresh server (``python -m mcp_calendar``, real HTTP) of each build:

  local HOURLY zone    an event in a custom VTIMEZONE whose parts repeat FREQ=HOURLY,
                       stored by the build before's CLI import (a database an older
                       version wrote); the figure is a one-day read over HTTP
  local MINUTELY zone  the same zone repeating FREQ=MINUTELY; the figure is the CLI import
                       itself (its own process)
  CalDAV INTERVAL=0    a series FREQ=DAILY;INTERVAL=0 on a real Radicale: a one-day read
  CalDAV SECONDLY      a series FREQ=SECONDLY on Radicale: a one-day read
  Google listing       20,100 one-minute events over two weeks on the fake Google: a
                       two-week read (the build before cut the list at 5,000, unsaid)

and two heavy reads of rules people use, for the bound and the event loop:

  CalDAV 20 hourly, 3 months   20 hourly series on Radicale read over three months (44,000
                               occurrences, past the bound: both builds refuse the read)
  local HOURLY since 1900      two hourly series begun in 1900: a one-day read of 2026

Before a read the server answers one read of another day (its imports and connections
warm), and its peak RSS is reset (``/proc/PID/clear_refs``), so the peak is the read's.
/health is asked every 100 ms during the work, one request at a time. Work past
``--timeout`` is killed and shown as "> N s, killed". The reference build (``--ref``: a
checkout, or a git revision; by default BEFORE_BOUNDS, main when issue 35 was taken up) runs
with this interpreter and its own sources first on PYTHONPATH, as bench.lean runs it.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from bench.reference import ROOT, reference_tree
from calendar_server.google_setup import OWNER, credentials, seed
from fakes.google_calendar import FakeGoogleCalendar
from fakes.mesh import source_path
from fakes.radicale import Radicale, radicale
from fakes.serving import free_port, serving_in_thread
from meshkit.credentials import token_digest

TOKEN = "bench-calendar-bombs-token"
TICK_S = os.sysconf("SC_CLK_TCK")
BEFORE_BOUNDS = "6b36077"
ZONE = "Europe/Berlin"
POLL_S = 0.1


@dataclass(frozen=True)
class Build:
    name: str
    root: Path

    def env(self) -> dict[str, str]:
        own = {} if self.root == ROOT else {"PYTHONPATH": source_path(self.root)}
        return {**os.environ, "FASTMCP_CHECK_FOR_UPDATES": "off", **own}


@dataclass
class Figures:
    result: str = ""
    wall_s: float = 0.0
    cpu_s: float = 0.0
    rss_mb: tuple[float, float] = (0.0, 0.0)  # before, peak
    health_ms: list[float] = field(default_factory=list)
    health_failing: int = 0
    killed: bool = False


# ---------------------------------------------------------------------------- inputs


def vtimezone(frequency: str) -> str:
    parts = "".join(
        f"BEGIN:{name}\r\nDTSTART:19700101T0{n}0000\r\nTZOFFSETFROM:+0{2 - n}00\r\n"
        f"TZOFFSETTO:+0{1 + n}00\r\nRRULE:FREQ={frequency}\r\nEND:{name}\r\n"
        for n, name in enumerate(("STANDARD", "DAYLIGHT"))
    )
    return f"BEGIN:VTIMEZONE\r\nTZID:Custom/{frequency}\r\n{parts}END:VTIMEZONE\r\n"


def calendar(uid: str, lines: str, zone: str = "") -> str:
    return (
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//bench//EN\r\n"
        f"{zone}BEGIN:VEVENT\r\nUID:{uid}\r\nDTSTAMP:20260220T101512Z\r\nSUMMARY:{uid}\r\n"
        f"{lines}END:VEVENT\r\nEND:VCALENDAR\r\n"
    )


def zoned_event(frequency: str) -> str:
    tzid = f"Custom/{frequency}"
    times = f"DTSTART;TZID={tzid}:20260317T100000\r\nDTEND;TZID={tzid}:20260317T110000\r\n"
    return calendar(f"zone-{frequency.lower()}", times, vtimezone(frequency))


def series(rule: str) -> str:
    return calendar(
        "bomb", f"DTSTART;TZID={ZONE}:20260317T080000\r\nDURATION:PT1S\r\nRRULE:{rule}\r\n"
    )


# ---------------------------------------------------------------------------- processes


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK_S


def status_mb(pid: int, key: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key):
            return int(line.split()[1]) / 1024
    return 0.0


class Poller:
    """/health asked every POLL_S, one request at a time, until stopped; each latency."""

    def __init__(self, url: str, timeout_s: float) -> None:
        self._url, self._timeout_s = url, timeout_s
        self._done = threading.Event()
        self.latencies_ms: list[float] = []
        self.failing = 0  # answers other than 200 (a check that did not answer in time)
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Poller:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._done.set()
        self._thread.join(timeout=self._timeout_s + 5)

    def _run(self) -> None:
        while not self._done.is_set():
            began = time.monotonic()
            with contextlib.suppress(httpx2.HTTPError):  # cut: the server was killed
                answer = httpx2.get(f"{self._url}/health", timeout=self._timeout_s)
                self.failing += answer.status_code != 200
            self.latencies_ms.append((time.monotonic() - began) * 1000)
            self._done.wait(POLL_S)


class Server:
    """``python -m mcp_calendar`` of a build over HTTP, killed at the end whatever its state."""

    def __init__(self, build: Build, data: Path, **env: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mcp_calendar"],
            env={
                **build.env(),
                "DATA_DIR": str(data),
                "MESH_TOKEN_SHA256": token_digest(TOKEN),
                "MCP_PORT": str(self.port),
                "CALENDAR_TIMEZONE": ZONE,
                **env,
            },
            cwd=build.root,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def ready(self, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("the calendar server exited at start")
            try:
                if httpx2.get(f"{self.url}/health", timeout=2).status_code in (200, 503):
                    return
            except httpx2.HTTPError:
                pass
            time.sleep(0.1)
        raise TimeoutError("the calendar server did not answer /health")

    def call(self, arguments: dict[str, str], timeout_s: float) -> str:
        """get_events over HTTP (JSON-RPC, stateless): its text, in a few words."""
        answer = httpx2.post(
            f"{self.url}/mcp",
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "get_events", "arguments": arguments},
            },
            headers={
                "Authorization": f"Bearer {TOKEN}",
                "Accept": "application/json, text/event-stream",
            },
            timeout=timeout_s,
        )
        result = answer.json()["result"]
        if result.get("isError"):
            said = result["content"][0]["text"]
            return "over 2 s: refused" if "at once" in said else f"refused: {said[:32]}…"
        found = result["structuredContent"]
        shown = len(found["events"])
        said = found.get("message") or ""
        count = said.split(" events in this range")[0] if "events in this range" in said else shown
        return f"{count} event{'' if count == 1 else 's'}"

    def measure(self, arguments: dict[str, str], timeout_s: float) -> Figures:
        pid = self.process.pid
        Path(f"/proc/{pid}/clear_refs").write_text("5")  # peak RSS from here on
        figures = Figures(rss_mb=(status_mb(pid, "VmRSS"), 0.0))
        before, began = cpu_s(pid), time.monotonic()
        with Poller(self.url, timeout_s) as poller:
            try:
                figures.result = self.call(arguments, timeout_s)
            except httpx2.TimeoutException:
                figures.result, figures.killed = "no answer", True
            figures.wall_s = time.monotonic() - began
            figures.cpu_s = cpu_s(pid) - before
            figures.rss_mb = (figures.rss_mb[0], status_mb(pid, "VmHWM"))
            if figures.killed:
                self.kill()
        figures.health_ms, figures.health_failing = poller.latencies_ms, poller.failing
        return figures

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait()


@contextmanager
def server(build: Build, data: Path, **env: str) -> Iterator[Server]:
    started = Server(build, data, **env)
    try:
        started.ready()
        yield started
    finally:
        started.kill()


def cli_import(build: Build, data: Path, path: Path, timeout_s: float) -> Figures:
    """``python -m mcp_calendar import`` as its own process: wall, CPU and peak RSS from its
    rusage (killed at the timeout)."""
    began = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "mcp_calendar", "import", str(path)],
        env={**build.env(), "DATA_DIR": str(data), "CALENDAR_TIMEZONE": ZONE},
        cwd=build.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    timer = threading.Timer(timeout_s, process.kill)
    timer.start()
    _, status, usage = os.wait4(process.pid, 0)
    timer.cancel()
    process.returncode = os.waitstatus_to_exitcode(status)
    output = process.stdout.read() if process.stdout else ""
    killed = process.returncode == -signal.SIGKILL
    said = "refused the zone" if "is refused" in output else "imported"
    return Figures(
        result="no answer" if killed else said,
        wall_s=time.monotonic() - began,
        cpu_s=usage.ru_utime + usage.ru_stime,
        rss_mb=(0.0, usage.ru_maxrss / 1024),
        killed=killed,
    )


# ---------------------------------------------------------------------------- bombs


@dataclass(frozen=True)
class Run:
    """One bomb on one build: ``before`` writes what a database of an older version holds."""

    build: Build
    before: Build
    tmp: Path
    timeout_s: float


Bomb = Callable[[Run], Figures]
DAY = {"start": "2026-03-17"}
WARM = {"start": "2026-01-05"}


def local_zone_read(frequency: str) -> Bomb:
    """The event stored as the build before imported it (what a database written by an
    older version holds), read by each build's server."""

    def run(run: Run) -> Figures:
        path = run.tmp / "zone.ics"
        path.write_text(zoned_event(frequency), newline="")
        cli_import(run.before, run.tmp / "data", path, run.timeout_s)
        with server(run.build, run.tmp / "data") as calendar_server:
            calendar_server.call(WARM, run.timeout_s)
            return calendar_server.measure(DAY, run.timeout_s)

    return run


def local_zone_import(frequency: str) -> Bomb:
    def run(run: Run) -> Figures:
        path = run.tmp / "zone.ics"
        path.write_text(zoned_event(frequency), newline="")
        return cli_import(run.build, run.tmp / "data", path, run.timeout_s)

    return run


def caldav_read(rule: str) -> Bomb:
    def run(run: Run) -> Figures:
        with radicale(run.tmp / "radicale") as dav:
            dav.make_calendar("work", "Work")
            dav.put("work", "bomb.ics", series(rule))
            env = caldav_env(dav, run.tmp)
            with server(run.build, run.tmp / "data", **env) as calendar_server:
                calendar_server.call(WARM, run.timeout_s)
                return calendar_server.measure(DAY, run.timeout_s)

    return run


def caldav_heavy(run: Run) -> Figures:
    """Twenty hourly series (rules people use) read over three months: 44,000 occurrences,
    past a read's bound, expanded on both builds until it stops them."""
    with radicale(run.tmp / "radicale") as dav:
        dav.make_calendar("work", "Work")
        for n in range(20):
            lines = f"DTSTART;TZID={ZONE}:20260101T00{n:02d}00\r\nDURATION:PT1M\r\n"
            dav.put("work", f"h{n}.ics", calendar(f"h{n}", f"{lines}RRULE:FREQ=HOURLY\r\n"))
        env = caldav_env(dav, run.tmp)
        with server(run.build, run.tmp / "data", **env) as calendar_server:
            calendar_server.call(WARM, run.timeout_s)
            months = {"start": "2026-03-01", "end": "2026-05-31"}
            return calendar_server.measure(months, run.timeout_s)


def local_since_1900(run: Run) -> Figures:
    """Two hourly series begun in 1900, imported with each build's CLI: a day of 2026."""
    path = run.tmp / "pills.ics"
    lines = [f"DTSTART;TZID={ZONE}:19000101T00{n:02d}00\r\nDURATION:PT5M\r\n" for n in (0, 1)]
    body = "".join(
        calendar(f"pill{n}", f"{line}RRULE:FREQ=HOURLY\r\n") for n, line in enumerate(lines)
    )
    path.write_text(body, newline="")
    cli_import(run.build, run.tmp / "data", path, run.timeout_s)
    with server(run.build, run.tmp / "data") as calendar_server:
        calendar_server.call(WARM, run.timeout_s)
        return calendar_server.measure(DAY, run.timeout_s)


def caldav_env(dav: Radicale, tmp: Path) -> dict[str, str]:
    password = tmp / "caldav_password"
    password.write_text(dav.password)
    return {
        "CALENDAR_BACKEND": "caldav",
        "CALENDAR_CALDAV_URL": dav.url,
        "CALENDAR_CALDAV_USER": dav.user,
        "CALENDAR_CALDAV_PASSWORD_FILE": str(password),
    }


def google_listing(run: Run) -> Figures:
    fake = FakeGoogleCalendar(OWNER)
    seed(fake)
    for n in range(20_100):
        at = f"2026-03-{1 + n // 1440:02d}T{n % 1440 // 60:02d}:{n % 60:02d}:00+01:00"
        when = {"dateTime": at, "timeZone": ZONE}
        fake.put(OWNER, {"id": f"slot{n:06d}", "summary": "Slot", "start": when, "end": when})
    with serving_in_thread(fake.app) as url:
        env = {
            "CALENDAR_BACKEND": "google",
            "CALENDAR_CREDENTIALS_DIR": str(credentials(fake, run.tmp / "creds", url)),
            "CALENDAR_GOOGLE_API_URL": f"{url}/calendar/v3/",
            "CALENDAR_GOOGLE_TOKEN_URL": f"{url}/token",
        }
        with server(run.build, run.tmp / "data", **env) as calendar_server:
            calendar_server.call(WARM, run.timeout_s)
            weeks = {"start": "2026-03-01", "end": "2026-03-15"}
            return calendar_server.measure(weeks, run.timeout_s)


BOMBS: dict[str, tuple[str, Bomb]] = {
    "local HOURLY zone": ("read", local_zone_read("HOURLY")),
    "local MINUTELY zone": ("import", local_zone_import("MINUTELY")),
    "CalDAV INTERVAL=0": ("read", caldav_read("FREQ=DAILY;INTERVAL=0")),
    "CalDAV SECONDLY": ("read", caldav_read("FREQ=SECONDLY")),
    "Google listing": ("read", google_listing),
    "CalDAV 20 hourly, 3 months": ("read", caldav_heavy),
    "local HOURLY since 1900": ("read", local_since_1900),
}


# ---------------------------------------------------------------------------- table


def cells(figures: Figures, timeout_s: float) -> list[str]:
    wall = f"> {timeout_s:.0f} s, killed" if figures.killed else f"{figures.wall_s:.2f}"
    rss = f"{figures.rss_mb[1]:.0f}"
    if figures.rss_mb[0]:
        rss = f"{figures.rss_mb[0]:.0f} → {figures.rss_mb[1]:.0f}"
    health = "-"
    if figures.health_ms:
        worst = max(figures.health_ms)
        shown = f"> {worst / 1000:.0f} s" if figures.killed and worst > 1000 else f"{worst:.0f}"
        health = f"{statistics.median(figures.health_ms):.0f} / {shown}"
        health += f" ({figures.health_failing} of {len(figures.health_ms)} not 200)"
    return [figures.result, wall, f"{figures.cpu_s:.2f}", rss, health]


def print_table(rows: list[list[str]]) -> None:
    head = [
        "bomb",
        "work",
        "build",
        "answer",
        "wall s",
        "CPU s",
        "RSS MB (→ peak)",
        "/health ms median / max",
    ]
    widths = [max(len(row[i]) for row in [head, *rows]) for i in range(len(head))]
    for row in [head, ["-" * w for w in widths], *rows]:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.calendar_bombs",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--ref",
        default=BEFORE_BOUNDS,
        help=f"the build before: a git revision or a checkout (default {BEFORE_BOUNDS})",
    )
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds before a kill")
    parser.add_argument("--only", choices=list(BOMBS), help="one bomb")
    args = parser.parse_args()
    rows = []
    with reference_tree(args.ref) as ref:
        builds = [Build("before", ref), Build("after", ROOT)]
        for name, (work, bomb) in BOMBS.items():
            if args.only not in (None, name):
                continue
            for build in builds:
                with tempfile.TemporaryDirectory(prefix="calendar-bombs-") as tmp:
                    figures = bomb(Run(build, builds[0], Path(tmp), args.timeout))
                rows.append([name, work, build.name, *cells(figures, args.timeout)])
                print(f"{name}, {build.name}: done", file=sys.stderr)
    print_table(rows)


if __name__ == "__main__":
    main()
