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
           Bot (its own request object on httpx2, as telegram-io's). A tap on a proposal's
           button: the action approved, the item written and the action done (SQLite), the
           tap answered and its message edited through PTB. Beside the mesh the floor also
           makes the hops the design needs (a turn: next_updates, turn_context,
           append_items, send_message; a tap: next_updates, approve, the confirm, complete,
           edit_message; each an HTTP round trip of a tools/call's JSON) to a bare
           Starlette echo under meshkit.serve's uvicorn settings (bench._reference), its
           CPU added. A tap's CPU is read around the tap alone (its proposal is not counted)

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
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from subprocess import DEVNULL

import anyio
import httpx2
from telegram import Bot, InlineKeyboardButton, InlineKeyboardMarkup, Update

from bench.e2e import TAP_ANSWER, TAP_PROMPT, answer
from bench.turn import TEXT_ANSWER, TEXT_PROMPT
from fakes.mesh import TOKENS, USER, Mesh, running_embedded, running_mesh
from fakes.serving import free_port
from mcp_telegram_io.request import Httpx2Request, SharedClient
from orchestrator.llm.base import LLM
from orchestrator.llm.openai_api import build_llm

MODES = ("embedded", "mesh")
FLOOR_TOKEN = "7000000099:AAFakeTokenForTheFloor0123456789abcd"
TICK_S = os.sysconf("SC_CLK_TCK")
SCHEMA = """
CREATE TABLE IF NOT EXISTS updates (bot TEXT, update_id INTEGER, body TEXT, acked_at REAL,
    PRIMARY KEY (bot, update_id));
CREATE TABLE IF NOT EXISTS items (chat TEXT, turn_id TEXT, seq INTEGER, item TEXT);
CREATE TABLE IF NOT EXISTS sends (key TEXT PRIMARY KEY, message_id INTEGER, at REAL);
CREATE TABLE IF NOT EXISTS actions (id TEXT PRIMARY KEY, payload TEXT, state TEXT, at REAL);
CREATE TABLE IF NOT EXISTS list (name TEXT PRIMARY KEY, at REAL);
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
TAP_HOPS = ("next_updates", "approve", "confirm_add_to_list", "complete", "edit_message")


async def floor(telegram_url: str, llm_url: str, data: Path, hop_url: str) -> None:
    """Answer every message to the floor's bot with the least a text turn must do (and with
    ``hop_url``, the design's HTTP hops to it); a message starting with ``TAP_PROMPT`` gets
    the answer with an "Add" button (its action kept), and a tap on it the least a tap must
    do: the action approved, the item written, the action done, the tap answered and its
    message edited."""
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
    stores = Stores(*(database(data / f"{n}.sqlite3") for n in ("inbox", "memory", "actions")))
    offset = 0
    async with bot:
        print("ready", flush=True)
        while True:
            for update in await bot.get_updates(offset=offset, timeout=30):
                offset = update.update_id + 1
                body = json.dumps(update.to_dict())
                stores.inbox.execute(
                    "INSERT OR IGNORE INTO updates (bot, update_id, body) VALUES (?, ?, ?)",
                    ("floor", update.update_id, body),
                )
                if hops is not None:
                    await hop(hops, hop_url, body, TAP_HOPS if update.callback_query else HOPS)
                if update.callback_query is not None:
                    await tapped(bot, stores, update)
                else:
                    await answered(bot, llm, stores, update)
                stores.inbox.execute(
                    "UPDATE updates SET acked_at = ? WHERE bot = ? AND update_id = ?",
                    (time.time(), "floor", update.update_id),
                )


@dataclass(frozen=True)
class Stores:
    inbox: sqlite3.Connection
    memory: sqlite3.Connection
    actions: sqlite3.Connection


async def hop(hops: httpx2.AsyncClient, url: str, body: str, names: tuple[str, ...]) -> None:
    """The design's HTTP round trips of a turn or a tap, each a tools/call's JSON."""
    for number, name in enumerate(names):
        params = {"name": name, "arguments": {"update": body}}
        call = {"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": params}
        (await hops.post(url, json=call)).raise_for_status()


async def answered(bot: Bot, llm: LLM, stores: Stores, update: Update) -> None:
    said = (update.message.text if update.message else "") or ""
    user = {"type": "message", "role": "user", "content": said}
    reply = await llm.respond(instructions="You are the floor.", items=[user], tools=[])
    turn = f"floor:{update.update_id}"
    with transaction(stores.memory) as db:
        db.executemany(
            "INSERT INTO items (chat, turn_id, seq, item) VALUES (?, ?, ?, ?)",
            [(str(USER), turn, n, json.dumps(item)) for n, item in enumerate([user, *reply.items])],
        )
    markup = None
    if said.startswith(TAP_PROMPT):
        with transaction(stores.actions) as db:
            db.execute("INSERT INTO actions VALUES (?, ?, 'pending', ?)",
                       (turn, json.dumps({"name": said}), time.time()))  # fmt: skip
        markup = InlineKeyboardMarkup([[InlineKeyboardButton("➕ Add", callback_data=turn)]])
    # A proposal's tool call is not the floor's: its answer is the text around it.
    sent = await bot.send_message(USER, reply.text or TAP_ANSWER, reply_markup=markup)
    with transaction(stores.inbox) as db:
        db.execute("INSERT OR IGNORE INTO sends (key, message_id, at) VALUES (?, ?, ?)",
                   (f"reply:{turn}", sent.message_id, time.time()))  # fmt: skip


async def tapped(bot: Bot, stores: Stores, update: Update) -> None:
    query = update.callback_query
    assert query is not None
    assert query.message is not None
    action = query.data
    with transaction(stores.actions) as db:
        db.execute("UPDATE actions SET state = 'approved' WHERE id = ?", (action,))
        (payload,) = db.execute("SELECT payload FROM actions WHERE id = ?", (action,)).fetchone()
    with transaction(stores.actions) as db:  # the change, once: in the server's own store
        name = json.loads(payload)["name"]
        db.execute("INSERT OR IGNORE INTO list VALUES (?, ?)", (name, time.time()))
        db.execute("UPDATE actions SET state = 'done' WHERE id = ?", (action,))
    await bot.answer_callback_query(query.id, text="Added.")
    message = query.message.message_id
    await bot.edit_message_text(f"✅ Added. ({action})", chat_id=USER, message_id=message)


@contextmanager
def transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


async def one(mesh: Mesh, token: str) -> None:
    """A message to ``token``'s bot, until its reply."""
    telegram = mesh.telegram
    before = len(telegram.sent(token, USER))
    telegram.user_message(token, USER, TEXT_PROMPT)
    await telegram.wait_for(lambda: len(telegram.sent(token, USER)) > before, 30)
    reply = telegram.sent(token, USER)[before]
    if reply.text != TEXT_ANSWER:
        raise RuntimeError(f"unexpected reply {reply.text[:200]!r}")


async def one_tap(mesh: Mesh, token: str, pids: list[int], serial: int) -> float:
    """A proposal (untimed), then a tap on its first button until its message is edited:
    the tap's CPU, in seconds (summed over ``pids``)."""
    telegram = mesh.telegram
    before = len(telegram.sent(token, USER))
    telegram.user_message(token, USER, f"{TAP_PROMPT} item {serial}")
    await telegram.wait_for(lambda: len(telegram.sent(token, USER)) > before, 30)
    reply = telegram.sent(token, USER)[before]
    rows = (reply.reply_markup or {}).get("inline_keyboard") or [[{}]]
    await mesh.all_acked()  # what follows the proposal's reply is not the tap's
    spent = cpu_s(pids)
    telegram.tap(token, USER, reply.message_id, rows[0][0]["callback_data"])
    await telegram.wait_for(lambda: bool(reply.edits), 30)
    spent = cpu_s(pids) - spent
    if "✅" not in reply.edits[0].text:
        raise RuntimeError(f"tap: unexpected edit {reply.edits[0].text[:200]!r}")
    return spent


async def compare(mode: str, turns: int, block: int) -> dict[str, list[float]]:
    """ms of CPU per turn, one value per block: the ``mode`` turn's and its floor's."""
    with tempfile.TemporaryDirectory(prefix="bench-floor-") as tmp:
        running = (
            running_embedded(Path(tmp), env={"TELEGRAM_PACE_S": "0"})
            if mode == "embedded"
            else running_mesh(Path(tmp), telegram_io_env={"TELEGRAM_PACE_S": "0"})
        )
        async with running as mesh, AsyncExitStack() as stack:
            mesh.llm.default = answer
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
            found: dict[str, list[float]] = {}
            serial = iter(range(1_000_000))
            for _ in range(max(1, turns // block)):
                for kind, ids in pids.items():
                    before = cpu_s(ids)
                    for _ in range(block):
                        await one(mesh, tokens[kind])
                    found.setdefault(kind, []).append(1000 * (cpu_s(ids) - before) / block)
                for kind, ids in pids.items():
                    spent = [await one_tap(mesh, tokens[kind], ids, next(serial))
                             for _ in range(block)]  # fmt: skip
                    found.setdefault(f"tap {kind}", []).append(1000 * sum(spent) / block)
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
    print("\nCPU per text turn and per tap, median over blocks (ms):")
    print(f"  {'':<20} {'floor':>7} {'product':>8} {'product / floor':>16}")
    for mode, figures in found.items():
        for what, prefix in (("text turn", ""), ("tap", "tap ")):
            mine = statistics.median(figures[f"{prefix}turn"])
            least = statistics.median(figures[f"{prefix}floor"])
            print(f"  {mode + ', ' + what:<20} {least:7.1f} {mine:8.1f} {mine / least:15.2f}×")
    print("  (mesh: summed over its processes; its floor with the design's HTTP hops added)")


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
