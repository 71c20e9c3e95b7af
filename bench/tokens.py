"""What a plain question's model request carries, in estimated input tokens (issue 25, part 4).

uv run python -m bench.tokens [--json]

The shipped agent (config/agents.yaml's clawdia, its persona) with every server of
config/mcp_servers.local.yaml in this process, against the fake OpenAI and fake Open-Meteo
(tests/fakes): a few remembered notes, one earlier exchange (a weather call), then a plain
question. The figures are read off the exact body the orchestrator sent for that question
(the fake's last request), split into the instructions (persona and the date line), the
remembered section, the window (earlier items and the question), each tool's function
entry and the envelope (model, keys, options).

Estimators (tests/fakes/request_size.py says why): characters / 4 of the body as the openai
client sends it (compact JSON: what a local server whose chat template pastes the tools'
JSON reads), and the same with the tools counted as OpenAI renders them for the model (its
cookbook's method: what a hosted model bills). tests/orchestrator/test_request_size.py holds
both: the second to the goal, the first to a ceiling.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import tempfile
from contextlib import AsyncExitStack
from pathlib import Path

import anyio

from bench._fakes import FakeOpenAI, FakeOpenMeteo, serving
from fakes.request_size import (
    BUDGET,
    Breakdown,
    breakdown,
    environment,
    plain_question,
    shipped_agent,
)


async def measure() -> Breakdown:
    llm = FakeOpenAI()
    async with AsyncExitStack() as stack:
        llm_url = await stack.enter_async_context(llm.serve())
        open_meteo = await stack.enter_async_context(serving(FakeOpenMeteo().app))
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-tokens-")))
        os.environ.update(environment(tmp / "data", open_meteo))  # the in-process servers'
        app = await stack.enter_async_context(shipped_agent(llm_url, tmp / "data"))
        return breakdown(await plain_question(llm, app))


def print_breakdown(found: Breakdown) -> None:
    width = max(len(name) for name in found.tools)
    rows = [
        ("instructions (persona, date)", found.instructions),
        ("remembered section (5 notes)", found.remembered),
        ("window (1 exchange + question)", found.window),
        (f"tools ({len(found.tools)})", found.tools_total),
        ("envelope (model, keys, options)", found.envelope),
    ]
    width = max(width + 2, *(len(label) for label, _ in rows))
    print("a plain question's request, estimated input tokens (characters sent / 4)\n")
    for label, value in rows:
        print(f"{label:<{width}} {value:7.0f}")
    print(f"{'total':<{width}} {found.total:7d}")
    verdict = "met" if found.total_rendered <= BUDGET else "MISSED"
    print(
        f"{'total, tools as the model reads them':<{width}} {found.total_rendered:7d}"
        f"   (tools {found.tools_rendered:.0f}; goal ≤ {BUDGET}: {verdict})\n"
    )
    print("each tool (largest first)")
    for name, value in sorted(found.tools.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"  {name:<{width - 2}} {value:7.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.tokens",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--json", action="store_true", help="the figures as JSON")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    found = anyio.run(measure)
    if args.json:
        print(json.dumps({**found.__dict__, "total_rendered": found.total_rendered}, indent=2))
    else:
        print_breakdown(found)


if __name__ == "__main__":
    main()
