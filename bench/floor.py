"""A text turn's floor: what a turn cannot avoid, with the same libraries, beside the turn
(issue 39, point 1: the embedded turn, and the turn over the mesh of processes).

uv run python -m bench.floor [--turns 60] [--block 20]

The fakes are served here (tests/fakes/mesh.py). Each pass runs a turn and its floor, each
with a bot of its own, the blocks alternating:

    embedded turn  ``make run``'s shape: the orchestrator with every server in it
    mesh turn      the servers and the orchestrator as processes (``make up``'s shape),
                   its CPU summed over them
    floor  ``python -m bench.floor --floor``: only what a text turn cannot avoid, inline:
           one getUpdates answer parsed into PTB's Update objects (the long poll), the inbox
           row written (SQLite: WAL, synchronous NORMAL, as meshkit.sqlite sets them), one
           model request and response through the openai client (the product's own
           ResponsesLLM, raw JSON), the conversation's two items and the reply's outbox key
           written in one transaction each, the update acked, one sendMessage through PTB's
           Bot (its own request object on httpx2, as telegram-io's). Beside the mesh turn
           the floor also makes the hops the design needs (next_updates, turn_context,
           append_items, send_message: four HTTP round trips of a tools/call's JSON) to a
           bare Starlette echo under meshkit.serve's uvicorn settings (bench._reference),
           its CPU added

Process CPU (utime + stime, /proc/<pid>/stat) per turn, read per block of ``--block``
turns (the kernel counts in 10 ms ticks); a figure is the median over blocks. Both reply
to each message before the next is sent: neither runs into the other's turns.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from subprocess import DEVNULL

import anyio
import httpx2
from telegram import Bot

from bench._fakes import text
from bench.turn import TEXT_ANSWER, TEXT_PROMPT
from fakes.mesh import TOKENS, USER, Mesh, running_embedded, running_mesh
from fakes.serving import free_port
from mcp_telegram_io.request import Httpx2Request, SharedClient
from orchestrator.llm.openai_api import build_llm

MODES = ("embedded", "mesh")
FLOOR_TOKEN = "7000000099:AAFakeTokenForTheFloor0123456789abcd"
TICK_S = os.sysconf("SC_CLK_TCK")
SCHEMA = """
CREATE TABLE IF NOT EXISTS updates (bot TEXT, update_id INTEGER, body TEXT, acked_at REAL,
    PRIMARY KEY (bot, update_id));
CREATE TABLE IF NOT EXISTS items (chat TEXT, turn_id TEXT, seq INTEGER, item TEXT);
CREATE TABLE IF NOT EXISTS sends (key TEXT PRIMARY KEY, message_id INTEGER, at REAL);
"""


def cpu_s(pids: list[int]) -> float:
    """utime + stime of the processes, in seconds."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / TICK_S


def database(path: Path) -> sqlite3.Connection:
    """A database as meshkit.sqlite opens one: autocommit, WAL, synchronous NORMAL."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = NORMAL")
    db.executescript(SCHEMA)
    return db


HOPS = ("next_updates", "turn_context", "append_items", "send_message")


async def floor(telegram_url: str, llm_url: str, data: Path, hop_url: str) -> None:
    """Answer every message to the floor's bot with the least a text turn must do (and with
    ``hop_url``, the design's HTTP hops to it)."""
    hops = httpx2.AsyncClient(timeout=10) if hop_url else None
    client = SharedClient(connections=4)
    bot = Bot(
        FLOOR_TOKEN,
        base_url=f"{telegram_url}/bot",
        request=Httpx2Request(client, read_timeout=15, write_timeout=15),
        get_updates_request=Httpx2Request(client, read_timeout=40),
    )
    llm = build_llm("responses", api_key="sk-floor", base_url=llm_url, model="bench-model",
                    reasoning_effort=None, timeout_s=30)  # fmt: skip
    inbox, memory = database(data / "inbox.sqlite3"), database(data / "memory.sqlite3")
    offset = 0
    async with bot:
        print("ready", flush=True)
        while True:
            for update in await bot.get_updates(offset=offset, timeout=30):
                offset = update.update_id + 1
                body = json.dumps(update.to_dict())
                inbox.execute(
                    "INSERT OR IGNORE INTO updates (bot, update_id, body) VALUES (?, ?, ?)",
                    ("floor", update.update_id, body),
                )
                if hops is not None:
                    for number, name in enumerate(HOPS):
                        params = {"name": name, "arguments": {"update": body}}
                        call = {"jsonrpc": "2.0", "id": number, "method": "tools/call",
                                "params": params}  # fmt: skip
                        (await hops.post(hop_url, json=call)).raise_for_status()
                said = (update.message.text if update.message else "") or ""
                user = {"type": "message", "role": "user", "content": said}
                reply = await llm.respond(instructions="You are the floor.", items=[user], tools=[])
                turn = f"floor:{update.update_id}"
                items = [user, *reply.items]
                memory.execute("BEGIN IMMEDIATE")
                memory.executemany(
                    "INSERT INTO items (chat, turn_id, seq, item) VALUES (?, ?, ?, ?)",
                    [(str(USER), turn, n, json.dumps(item)) for n, item in enumerate(items)],
                )
                memory.execute("COMMIT")
                sent = await bot.send_message(USER, reply.text)
                inbox.execute("BEGIN IMMEDIATE")
                inbox.execute(
                    "INSERT OR IGNORE INTO sends (key, message_id, at) VALUES (?, ?, ?)",
                    (f"reply:{turn}", sent.message_id, time.time()),
                )
                inbox.execute(
                    "UPDATE updates SET acked_at = ? WHERE bot = ? AND update_id = ?",
                    (time.time(), "floor", update.update_id),
                )
                inbox.execute("COMMIT")


async def one(mesh: Mesh, token: str) -> None:
    """A message to ``token``'s bot, until its reply."""
    telegram = mesh.telegram
    before = len(telegram.sent(token, USER))
    telegram.user_message(token, USER, TEXT_PROMPT)
    await telegram.wait_for(lambda: len(telegram.sent(token, USER)) > before, 30)
    reply = telegram.sent(token, USER)[before]
    if reply.text != TEXT_ANSWER:
        raise RuntimeError(f"unexpected reply {reply.text[:200]!r}")


async def compare(mode: str, turns: int, block: int) -> dict[str, list[float]]:
    """ms of CPU per turn, one value per block: the ``mode`` turn's and its floor's."""
    with tempfile.TemporaryDirectory(prefix="bench-floor-") as tmp:
        running = (
            running_embedded(Path(tmp), env={"TELEGRAM_PACE_S": "0"})
            if mode == "embedded"
            else running_mesh(Path(tmp), telegram_io_env={"TELEGRAM_PACE_S": "0"})
        )
        async with running as mesh, AsyncExitStack() as stack:
            mesh.llm.default = text(TEXT_ANSWER)
            mesh.telegram.add_bot(FLOOR_TOKEN, name="Floor")
            telegram_url = next(
                s.env["TELEGRAM_API_BASE"] for s in mesh.services.values()
                if "TELEGRAM_API_BASE" in s.env
            )  # fmt: skip
            llm_url = mesh.orchestrator.env["OPENAI_BASE_URL"]
            floor_data = Path(tmp) / "floor"
            floor_data.mkdir()
            hop_url, extra = "", []
            if mode == "mesh":
                port = free_port()
                echo = await stack.enter_async_context(
                    await anyio.open_process(
                        [sys.executable, "-m", "bench._reference", "floor", str(port)],
                        stdout=DEVNULL, stderr=DEVNULL,
                    )
                )  # fmt: skip
                hop_url, extra = f"http://127.0.0.1:{port}/mcp", [echo.pid]
                await up(hop_url)
            command = [sys.executable, "-m", "bench.floor", "--floor", telegram_url, llm_url,
                       str(floor_data), hop_url]  # fmt: skip
            floor_env = {**os.environ, "PTB_TIMEDELTA": "true"}
            log = stack.enter_context((Path(tmp) / "floor.log").open("wb"))
            process = await stack.enter_async_context(
                await anyio.open_process(command, env=floor_env, stderr=log)
            )
            assert process.stdout is not None
            ready = await process.stdout.receive()
            if b"ready" not in ready:
                raise RuntimeError(f"the floor did not start: {ready!r}")
            print(f"{mode}: the floor's log is {log.name}", file=sys.stderr)
            mesh.telegram.user_message(FLOOR_TOKEN, USER, "/start")  # its chat exists
            await mesh.telegram.wait_for(lambda: bool(mesh.telegram.sent(FLOOR_TOKEN)), 30)
            pids = {
                "turn": [service.pid for service in mesh.services.values()],
                "floor": [process.pid, *extra],
            }
            tokens = {"turn": TOKENS["clawdia"], "floor": FLOOR_TOKEN}
            for kind in pids:  # warm up: code loaded, caches filled
                for _ in range(5):
                    await one(mesh, tokens[kind])
            found: dict[str, list[float]] = {kind: [] for kind in pids}
            for _ in range(max(1, turns // block)):
                for kind, ids in pids.items():
                    before = cpu_s(ids)
                    for _ in range(block):
                        await one(mesh, tokens[kind])
                    found[kind].append(1000 * (cpu_s(ids) - before) / block)
            process.terminate()
            for pid in extra:
                os.kill(pid, signal.SIGTERM)
            return found


async def up(url: str) -> None:
    """Until the echo at ``url`` answers."""
    async with httpx2.AsyncClient(timeout=1) as client:
        with anyio.fail_after(30):
            while True:
                try:
                    await client.post(url, json={})
                    return
                except httpx2.TransportError:
                    await anyio.sleep(0.05)


def report(found: dict[str, dict[str, list[float]]]) -> None:
    print("\nA text turn's CPU per turn, median over blocks (ms):")
    print(f"  {'':<10} {'floor':>7} {'turn':>7} {'turn / floor':>13}")
    for mode, figures in found.items():
        turn, least = statistics.median(figures["turn"]), statistics.median(figures["floor"])
        print(f"  {mode:<10} {least:7.1f} {turn:7.1f} {turn / least:12.2f}×")
    print("  (mesh: summed over its processes; its floor with the four HTTP hops added)")


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.floor",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--turns", type=int, default=60, help="turns of each, timed")
    parser.add_argument("--block", type=int, default=20, help="turns per CPU reading")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--floor", nargs=4, metavar=("TELEGRAM", "LLM", "DATA", "HOPS"),
                        help=argparse.SUPPRESS)  # fmt: skip
    args = parser.parse_args()
    if args.floor:
        telegram_url, llm_url, data, hop_url = args.floor
        anyio.run(floor, telegram_url, llm_url, Path(data), hop_url)
        return
    report({mode: anyio.run(compare, mode, args.turns, args.block) for mode in args.modes})


if __name__ == "__main__":
    main()
