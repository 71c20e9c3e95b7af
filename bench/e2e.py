"""Through the real processes: from a Telegram update becoming available to the reply.

uv run python -m bench.e2e [--iterations 100] [--warmup 10] [--rounds 5]

telegram-io, memory and weather run as HTTP servers in their own processes, the
orchestrator as ``python -m orchestrator``; fake Telegram, a zero-latency fake OpenAI
and fake Open-Meteo are served in this process (tests/fakes/mesh.py). One sample:

    the fake Telegram gets a user message (the update is available to getUpdates)
    → telegram-io's long poll → inbox → the orchestrator's next_updates → the turn
      (memory, the model, the weather tool over HTTP) → send_message → sendMessage
    = the time of that sendMessage at the fake minus the time of the injection

The tap path: the model proposes adding an item to the shopping list (a reply with
buttons, untimed), then

    the fake Telegram gets a tap on "➕ Add" → telegram-io → the orchestrator's
      next_updates → answerCallbackQuery → pending-actions approve → shopping's
      confirm_add_to_list → pending-actions complete → get_batch → editMessageText
    = the time of that editMessageText at the fake minus the time of the tap

Per-chat pacing (about one message a second, a deliberate delay) is off here
(TELEGRAM_PACE_S=0) so the figures are the mesh's own time. Scenarios interleave in
rounds; figures are medians and 99th percentiles. Each sample starts 50 ms after the
previous reply (--gap-ms), as a user's next message would: what follows a reply (the ack,
storing the turn, recording a tap's outcome) does not run into the next sample. With
--gap-ms 0 the figures include that overlap. Then the resident memory (VmRSS)
of every process, after the run.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import anyio

from bench._fakes import Body, Step, call, calls, text
from bench.turn import TEXT_ANSWER, TEXT_PROMPT, TOOL_ANSWER, TOOL_PROMPT, WEATHER_TOOL
from fakes.mesh import TOKENS, USER, Mesh, running_embedded, running_mesh

TOKEN = TOKENS["clawdia"]
GOAL_P50_MS = {"text only": None, "one tool call": 30.0, "tap → edit": 20.0}
TAP_PROMPT = "put this on the list:"
TAP_ANSWER = "Shall I add it?"
GOAL_EMBEDDED_RSS_MB = 130.0


def answer(body: Body) -> Step:
    last = body["input"][-1]
    if last.get("type") == "function_call_output":
        output = str(last["output"])
        if output.startswith('{"error"'):
            return text(f"tool failed: {output}")
        return text(TAP_ANSWER if '"kind":"add_to_list"' in output else TOOL_ANSWER)
    if last.get("content") == TOOL_PROMPT:
        return calls(call(WEATHER_TOOL, location="Paris"))
    if str(last.get("content")).startswith(TAP_PROMPT):
        item = str(last["content"]).removeprefix(TAP_PROMPT).strip()
        return calls(call("shopping__propose_add_to_list", name=item))
    return text(TEXT_ANSWER)


async def one(mesh: Mesh, prompt: str, expected: str) -> float:
    """Milliseconds from the injection of ``prompt`` to the reply's sendMessage."""
    before = len(mesh.telegram.sent(TOKEN, USER))
    injected = time.time()
    mesh.telegram.user_message(TOKEN, USER, prompt)
    await mesh.telegram.wait_for(lambda: len(mesh.telegram.sent(TOKEN, USER)) > before, 30)
    reply = mesh.telegram.sent(TOKEN, USER)[before]
    if reply.text != expected:
        raise RuntimeError(f"unexpected reply {reply.text[:300]!r}; expected {expected!r}")
    return (reply.time - injected) * 1000


async def one_tap(mesh: Mesh, prompt: str, expected: str, gap_s: float) -> float:
    """Milliseconds from a tap on a proposal's confirm button to the edited message
    (the tap comes ``gap_s`` after the proposal, as the user reads it first)."""
    before = len(mesh.telegram.sent(TOKEN, USER))
    mesh.telegram.user_message(TOKEN, USER, prompt)
    await mesh.telegram.wait_for(lambda: len(mesh.telegram.sent(TOKEN, USER)) > before, 30)
    message = mesh.telegram.sent(TOKEN, USER)[before]
    if not message.text.startswith(expected):
        raise RuntimeError(f"unexpected reply {message.text[:300]!r}; expected {expected!r}")
    rows = (message.reply_markup or {})["inline_keyboard"]
    await anyio.sleep(gap_s)
    tapped = time.time()
    mesh.telegram.tap(TOKEN, USER, message.message_id, rows[0][0]["callback_data"])
    await mesh.telegram.wait_for(lambda: bool(message.edits), 30)
    if "✅" not in message.edits[0].text:
        raise RuntimeError(f"unexpected edit {message.edits[0].text[:300]!r}")
    return (message.edits[0].time - tapped) * 1000


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


SCENARIOS = {
    "text only": (TEXT_PROMPT, TEXT_ANSWER),
    "one tool call": (TOOL_PROMPT, TOOL_ANSWER),
    "tap → edit": (TAP_PROMPT, TAP_ANSWER),
}


async def measure(
    mesh: Mesh, iterations: int, warmup: int, rounds: int, gap_s: float
) -> dict[str, list[float]]:
    """Samples per scenario, interleaved in rounds, after ``warmup`` untimed ones each."""
    mesh.llm.default = answer
    serial = iter(range(1_000_000))

    async def sample(name: str, prompt: str, expected: str) -> float:
        if name == "tap → edit":
            return await one_tap(mesh, f"{prompt} item {next(serial)}", expected, gap_s)
        return await one(mesh, prompt, expected)

    samples: dict[str, list[float]] = {name: [] for name in SCENARIOS}
    for _ in range(warmup):
        for name, (prompt, expected) in SCENARIOS.items():
            await sample(name, prompt, expected)
    per_round = max(1, iterations // rounds)
    for _ in range(rounds):
        for name, (prompt, expected) in SCENARIOS.items():
            for _ in range(per_round):
                await anyio.sleep(gap_s)
                samples[name].append(await sample(name, prompt, expected))
    return samples


def print_latency(samples: dict[str, list[float]], goals: bool) -> None:
    print(f"{'scenario':<16} | {'p50 ms':>7} | {'p99 ms':>7} | goal")
    print(f"{'-' * 16}-+-{'-' * 7}-+-{'-' * 7}-+-{'-' * 22}")
    for name, values in samples.items():
        p50, p99 = statistics.median(values), percentile(values, 0.99)
        target = GOAL_P50_MS[name] if goals else None
        met = target is not None and p50 < target
        verdict = "" if target is None else f"p50 < {target:g} ms: {'met' if met else 'MISSED'}"
        print(f"{name:<16} | {p50:7.2f} | {p99:7.2f} | {verdict}")


async def run(
    iterations: int, warmup: int, rounds: int, gap_s: float, embedded_iterations: int
) -> None:
    pace = {"TELEGRAM_PACE_S": "0"}
    with tempfile.TemporaryDirectory(prefix="clawmesh-bench-") as tmp:
        async with running_mesh(Path(tmp), telegram_io_env=pace) as mesh:
            began = time.perf_counter()
            samples = await measure(mesh, iterations, warmup, rounds, gap_s)
            elapsed = time.perf_counter() - began
            rss = {name: rss_mb(service.pid) for name, service in mesh.services.items()}
    print(
        f"update available → reply at fake Telegram, real processes, zero-latency fake LLM: "
        f"{len(samples['text only'])} per scenario after {warmup} warm-up, {rounds} interleaved "
        f"rounds, {elapsed:.1f} s\n"
    )
    print_latency(samples, goals=True)
    print(f"\n{'process':<16} | {'RSS MB':>7}")
    print(f"{'-' * 16}-+-{'-' * 7}")
    for name, mb in rss.items():
        print(f"{name:<16} | {mb:7.1f}")
    print(f"{'all processes':<16} | {sum(rss.values()):7.1f}")

    with tempfile.TemporaryDirectory(prefix="clawmesh-bench-") as tmp:
        async with running_embedded(Path(tmp)) as embedded:
            # Paced as make run is (about a message a second per chat, after a burst of 3):
            # gap_s of 1 s keeps the figures the process's own.
            samples = await measure(embedded, embedded_iterations, 2, 1, 1.0)
            process = embedded.orchestrator
            embedded_rss = rss_mb(process.pid)
    print(
        f"\nembedded (make run: one process, every server in it, Telegram pacing on): "
        f"{len(samples['text only'])} per scenario\n"
    )
    print_latency(samples, goals=False)
    verdict = "met" if embedded_rss < GOAL_EMBEDDED_RSS_MB else "MISSED"
    print(f"\n{'process':<16} | {'RSS MB':>7} | goal")
    print(f"{'-' * 16}-+-{'-' * 7}-+-{'-' * 22}")
    print(f"{'embedded':<16} | {embedded_rss:7.1f} | < {GOAL_EMBEDDED_RSS_MB:g} MB: {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.e2e",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--iterations", type=int, default=100, help="timed samples per scenario")
    parser.add_argument("--warmup", type=int, default=10, help="untimed samples per scenario")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    parser.add_argument(
        "--gap-ms", type=float, default=50, help="pause before each sample (a user's think time)"
    )
    parser.add_argument(
        "--embedded-iterations", type=int, default=10, help="samples per scenario, embedded"
    )
    args = parser.parse_args()
    anyio.run(
        run, args.iterations, args.warmup, args.rounds, args.gap_ms / 1000, args.embedded_iterations
    )


if __name__ == "__main__":
    main()
