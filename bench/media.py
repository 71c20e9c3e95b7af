"""Streamed replies, voice notes and photos against a plain text turn, in one run (issue 38).

uv run python -m bench.media [--turns 15] [--block 5]

``make run``'s shape: one orchestrator process with every server in it, against the fakes
served here (tests/fakes/mesh.py). The model answers at a realistic pace: 0.4 s to its
first word, then 40 words a second (a long answer of 120 words takes 3.4 s); a short answer
comes whole after 0.4 s. Two agents: Clawdia streams (the default), Bob does not
(``stream: false``). Kinds, block by block in turn:

    text        Clawdia, a message and a short answer (done within the first second:
                nothing is streamed)
    streamed    Clawdia, a message and the long answer, shown as it is written (drafts)
    unstreamed  Bob, the same long answer, sent whole ("typing…" until then)
    voice       Clawdia, a 3 s Ogg Opus voice note: downloaded, transcribed, "🎤 …" shown,
                then a short answer to its words
    photo       Clawdia, a 1280x960 JPEG with a caption: downloaded, given to the model as
                image input, a short answer

1. Time from the message to the first visible words (the first draft with text) and to the
   whole reply (its sendMessage), medians: streamed against unstreamed.
2. Process CPU (utime + stime, /proc/<pid>/stat) of the orchestrator per turn, read per
   block of ``--block`` turns (the kernel counts in 10 ms ticks): the median over blocks.
3. Internal MCP calls of one turn of each kind, counted in process (``fakes.lean``: the
   role servers' tool calls as they receive them), the streamed one at the default pace.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from bench._fakes import Body, Step, text
from bench.turn import TEXT_ANSWER, TEXT_PROMPT
from fakes.audio import ogg_opus
from fakes.counted import CALLS
from fakes.images import jpeg
from fakes.lean import POLLS, handled, lean_app
from fakes.lean import TOKEN as LEAN_TOKEN
from fakes.lean import USER as LEAN_USER
from fakes.mesh import TOKENS, USER, Mesh, running_embedded
from fakes.responses_api import Slow, Streamed
from orchestrator.channels.telegram_stream import STREAMED

LONG_PROMPT = "Tell me about Paris in spring."
LONG_ANSWER = " ".join(f"Paris{n % 7 or ''} blooms in spring, word {n}." for n in range(30))
HEARD = "What's the weather like?"
CAPTION = "What is in this photo?"
FIRST_WORD_S = 0.4
EVERY_S = 1 / 40  # 40 words a second
TICK_S = os.sysconf("SC_CLK_TCK")
KINDS = ("text", "streamed", "unstreamed", "voice", "photo")
VOICE = ogg_opus(3.0)
PHOTO = jpeg(1280, 960)


def model(body: Body) -> Step:
    """The fake model at a realistic pace: streamed when asked, whole after as long."""
    said = body["input"][-1].get("content") if "input" in body else body["messages"][-1]
    said = said if isinstance(said, str) else CAPTION  # a photo's content is a list
    answer = LONG_ANSWER if said == LONG_PROMPT else TEXT_ANSWER
    words = len(answer.split())
    if body.get("stream"):
        return Slow(FIRST_WORD_S, Streamed(text(answer), every_s=EVERY_S))
    return Slow(FIRST_WORD_S + words * EVERY_S, text(answer))


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK_S


class Run:
    """One kind of turn after another in the embedded mesh, timed at the fake Telegram."""

    def __init__(self, mesh: Mesh) -> None:
        self.mesh = mesh
        self.first_words: list[float] = []
        self.whole: dict[str, list[float]] = {kind: [] for kind in KINDS}

    async def turn(self, kind: str) -> None:
        telegram = self.mesh.telegram
        agent = "bob" if kind == "unstreamed" else "clawdia"
        token = TOKENS[agent]
        before = len(telegram.sent(token, USER))
        drafts = len(telegram.drafts(token, USER))
        injected = time.time()
        expected = 2 if kind == "voice" else 1  # "🎤 …", then the answer
        if kind == "voice":
            telegram.user_media(token, USER, "voice", content=VOICE, duration=3)
        elif kind == "photo":
            telegram.user_media(token, USER, "photo", content=PHOTO, caption=CAPTION)
        else:
            telegram.user_message(token, USER, LONG_PROMPT if kind != "text" else TEXT_PROMPT)
        await telegram.wait_for(lambda: len(telegram.sent(token, USER)) >= before + expected, 60)
        reply = telegram.sent(token, USER)[before + expected - 1]
        wanted = LONG_ANSWER if kind in ("streamed", "unstreamed") else TEXT_ANSWER
        if reply.text != wanted:
            raise RuntimeError(f"{kind}: unexpected reply {reply.text[:200]!r}")
        self.whole[kind].append(reply.time - injected)
        shown = [d for d in telegram.drafts(token, USER)[drafts:] if d.text]
        if kind == "streamed" and shown:
            self.first_words.append(shown[0].time - injected)


async def timed(turns: int, block: int) -> tuple[Run, dict[str, list[float]]]:
    with tempfile.TemporaryDirectory(prefix="bench-media-") as tmp:
        async with running_embedded(
            Path(tmp), agents=("clawdia", "bob"), env={"TELEGRAM_PACE_S": "0"},
            entries={"bob": "stream: false"},
        ) as mesh:  # fmt: skip
            mesh.llm.default = model
            mesh.llm.default_transcript = HEARD
            pid = mesh.orchestrator.pid
            run = Run(mesh)
            for kind in KINDS:  # warm up: each path once
                await run.turn(kind)
            run.first_words.clear()
            run.whole = {kind: [] for kind in KINDS}
            cpu: dict[str, list[float]] = {kind: [] for kind in KINDS}
            for _ in range(max(1, turns // block)):
                for kind in KINDS:
                    before = cpu_s(pid)
                    for _ in range(block):
                        await run.turn(kind)
                    cpu[kind].append((cpu_s(pid) - before) / block * 1000)
            return run, cpu


async def counted() -> dict[str, list[str]]:
    """The internal calls of one turn of each kind, in process (fakes.lean)."""
    made: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-media-calls-") as tmp:
        patch = pytest.MonkeyPatch()
        try:
            async with lean_app(
                Path(tmp), patch, pace=STREAMED, streams=True, llm_timeout_s=90
            ) as lean:
                lean.llm.default = model
                lean.llm.default_transcript = HEARD
                sends: dict[str, Callable[[], int]] = {
                    "text": lambda: lean.telegram.user_message(LEAN_TOKEN, LEAN_USER, TEXT_PROMPT),
                    "streamed": lambda: lean.telegram.user_message(
                        LEAN_TOKEN, LEAN_USER, LONG_PROMPT
                    ),
                    "voice": lambda: lean.telegram.user_media(
                        LEAN_TOKEN, LEAN_USER, "voice", content=VOICE, duration=3
                    ),
                    "photo": lambda: lean.telegram.user_media(
                        LEAN_TOKEN, LEAN_USER, "photo", content=PHOTO, caption=CAPTION
                    ),
                }
                for kind, send in sends.items():
                    CALLS.clear()
                    update = f"{LEAN_TOKEN.partition(':')[0]}:{send()}"
                    await handled(update)
                    made[kind] = CALLS.names(without=(*POLLS, "send_chat_action"))
        finally:
            patch.undo()
    return made


def report(run: Run, cpu: dict[str, list[float]], calls: dict[str, list[str]]) -> None:
    first = statistics.median(run.first_words) if run.first_words else float("nan")
    streamed = statistics.median(run.whole["streamed"])
    unstreamed = statistics.median(run.whole["unstreamed"])
    words, samples = len(LONG_ANSWER.split()), len(run.whole["streamed"])
    print(f"\nA {words}-word answer at 40 words a second (first word after {FIRST_WORD_S} s), "
          f"medians of {samples}:")  # fmt: skip
    print(f"  streamed    first visible words {first:5.2f} s   whole reply {streamed:5.2f} s")
    print(
        f"  unstreamed  first visible words {unstreamed:5.2f} s   whole reply {unstreamed:5.2f} s"
    )
    text_cpu = statistics.median(cpu["text"])
    print("\nOrchestrator CPU per turn (median over blocks) and internal calls of one turn:")
    for kind in KINDS:
        mine = statistics.median(cpu[kind])
        made = calls.get(kind)
        listed = f"{len(made)} calls: {', '.join(made)}" if made is not None else "(as streamed)"
        print(f"  {kind:<11} {mine:6.1f} ms  ({mine / text_cpu:4.2f}× text)   {listed}")
    for kind in ("voice", "photo", "text"):
        print(f"  reply time, {kind:<6} {statistics.median(run.whole[kind]):5.2f} s")


async def main_async(turns: int, block: int) -> None:
    run, cpu = await timed(turns, block)
    calls = await counted()
    report(run, cpu, calls)


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.media",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--turns", type=int, default=15, help="turns of each kind, timed")
    parser.add_argument("--block", type=int, default=5, help="turns per CPU reading")
    args = parser.parse_args()
    anyio.run(main_async, args.turns, args.block)


if __name__ == "__main__":
    main()
