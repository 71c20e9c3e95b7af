"""The console channel, in-process and as `python -m orchestrator chat` in a real process."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from fakes.checkout import shipped
from fakes.responses_api import call, calls, text
from fakes.world import API_KEY, ROOT, World, answer_from_output, clawdia, recording_console
from orchestrator.channels.console import GOODBYE, Console

pytestmark = pytest.mark.anyio


def reading_a_pipe(pid: int) -> bool:
    """Whether a thread of ``pid`` sleeps in the kernel's pipe read (Linux /proc)."""
    return any(
        (task / "wchan").read_text(errors="replace").endswith("pipe_read")
        for task in Path(f"/proc/{pid}/task").iterdir()
    )


async def blocked_reading_a_pipe(pid: int) -> None:
    while not reading_a_pipe(pid):  # noqa: ASYNC110 (the kernel offers no event)
        await anyio.sleep(0.01)


async def lines(*texts: str) -> AsyncIterator[str]:
    for line in texts:
        yield line + "\n"


async def test_the_console_shows_replies_tool_progress_and_commands(world: World) -> None:
    world.llm.script(
        calls(call("weather__get_current_weather", location="Paris")),
        answer_from_output(lambda out: f"It is {out['temperature']} in {out['place']['name']}."),
    )
    written: list[str] = []
    async with clawdia(world) as app:
        console = Console(app.dispatcher, "clawdia", write=written.append, color=False)
        await console.run(lines("weather in Paris?", "", "/status", "/help"))
    output = "\n".join(written)
    assert written[0].startswith("Clawdia here (model gpt-5-mini).")
    assert "  … Current weather (location=Paris)" in written
    assert "It is " in output
    assert "in Paris, Île-de-France, France." in output
    assert "✅ weather (in-process): up, 3 tools" in output
    assert "I'm Clawdia." in output


async def test_python_m_orchestrator_chat_holds_a_conversation(
    world: World, tmp_path: Path
) -> None:
    world.llm.script(
        text("Hi! I'm Clawdia."),
        calls(call("weather__get_forecast", location="Zürich", days=2)),
        answer_from_output(lambda out: f"Tomorrow in Zürich: {out['days'][1]['conditions']}."),
    )
    env = {
        **os.environ,
        "CLAWMESH_REGISTRY": str(world.settings.registry),
        "CLAWMESH_AGENTS": str(world.settings.agents),
        "OPENAI_API_KEY": API_KEY,
        "OPENAI_BASE_URL": str(world.settings.openai_base_url),
        "DATA_DIR": str(tmp_path / "chat-data"),
        "PYTHONPATH": str(ROOT / "tests"),  # the toys server of the test registry
    }
    with anyio.fail_after(60):
        result = await anyio.run_process(
            [sys.executable, "-m", "orchestrator", "chat", "--agent", "clawdia"],
            input=b"hello\nweather in Zurich tomorrow?\n",
            env=env,
            cwd=tmp_path,  # no .env of the checkout
            check=False,
        )
    stdout, stderr = result.stdout.decode(), result.stderr.decode()
    assert result.returncode == 0, stderr
    assert "Hi! I'm Clawdia." in stdout
    assert "Tomorrow in Zürich: " in stdout
    assert API_KEY not in stdout + stderr
    assert (tmp_path / "chat-data" / "memory.sqlite3").is_file()
    assert len(world.llm.requests) == 3
    # The logs went to a file, named at the start, not between the chat's lines.
    log = tmp_path / "chat-data" / "logs" / "chat.log"
    assert f"(logs: {log})" in stdout
    assert "turn agent=clawdia" in log.read_text()
    assert "turn agent=clawdia" not in stdout + stderr
    assert stdout.rstrip().endswith(GOODBYE)  # end of input: a goodbye line


async def test_ctrl_c_leaves_the_chat_at_once_while_it_waits_for_input(
    world: World, tmp_path: Path
) -> None:
    env = {
        **os.environ,
        "CLAWMESH_REGISTRY": "config/mcp_servers.local.yaml",  # what `make chat` runs
        "OPENAI_API_KEY": API_KEY,
        "OPENAI_BASE_URL": str(world.settings.openai_base_url),
        "DATA_DIR": str(tmp_path / "chat-data"),
    }
    command = [sys.executable, "-m", "orchestrator", "chat"]
    project = shipped(tmp_path / "project")  # what make chat reads, no .env
    async with await anyio.open_process(command, env=env, cwd=project) as process:
        assert process.stdin is not None
        assert process.stdout is not None
        await process.stdin.send(b"/help\n")
        seen = b""
        with anyio.fail_after(60):
            while b"Commands: " not in seen:
                seen += await process.stdout.receive()
            await blocked_reading_a_pipe(process.pid)
        process.send_signal(signal.SIGINT)  # stdin stays open
        with anyio.fail_after(10):
            code = await process.wait()
        rest = b""
        async for chunk in process.stdout:
            rest += chunk
    assert code == 0
    assert GOODBYE in rest.decode()


async def test_the_console_offers_a_proposal_as_numbered_choices(world: World) -> None:
    world.llm.script(
        calls(call("shopping__propose_add_to_list", name="milk", quantity=2)),
        text("Shall I add milk?"),
        text("One what?"),
    )
    written: list[str] = []
    async with clawdia(world) as app:
        console = Console(app.dispatcher, "clawdia", write=written.append, color=False)
        await console.run(lines("add two milk", "1", "1"))
        listing = await app.registry.call(
            app.registry.find("shopping", "get_list") or pytest.fail("no get_list"),
            {"agent": "clawdia"},
        )
    output = "\n".join(written)
    assert "Shall I add milk?\n\n• Shopping proposes: Add 2 milk to groceries" in output
    assert output.count("Shall I add milk?") == 1  # the tap shows what changed, not it all
    assert "  [1] ➕ Add\n  [2] Skip" in output
    assert "  (Confirmed: on it.)" in output
    assert "✅ Shopping: Add 2 milk to groceries — Added 2 milk to groceries" in output
    # The second "1" came after the buttons were gone: an ordinary message, not a tap.
    assert "One what?" in output
    assert len(world.llm.requests) == 3
    items = (listing.structured or {})["lists"][0]["items"]
    assert [(i["name"], i["quantity"]) for i in items] == [("milk", 2)]


async def test_thinking_stands_on_the_line_until_each_tool_line_and_the_answer(
    world: World,
) -> None:
    world.llm.script(
        calls(call("weather__get_current_weather", location="Paris")),
        answer_from_output(lambda out: f"It is {out['temperature']}."),
    )
    shown: list[tuple[str, str]] = []
    async with clawdia(world) as app:
        console = recording_console(app, shown)
        await console.run(lines("weather in Paris?"))
    turn = shown[1:-2]  # after the greeting, before the goodbye
    assert [kind for kind, _ in turn] == ["status", "status", "line", "status", "status", "line"]
    assert [text for kind, text in turn if kind == "status"] == ["thinking…", "", "thinking…", ""]
    assert turn[2][1].startswith("  … Current weather")
    assert turn[5][1].startswith("It is ")


async def test_make_chats_first_start_can_reorder_the_oat_milk(
    world: World, tmp_path: Path
) -> None:
    world.llm.script(
        calls(call("shopping__propose_reorder", item="the oat milk")),
        text("Shall I reorder the oat milk?"),
    )
    env = {
        **os.environ,
        "CLAWMESH_REGISTRY": "config/mcp_servers.local.yaml",  # what `make chat` runs
        "SHOPPING_EXAMPLE_AGENT": "clawdia",  # as `make chat` sets it
        "OPENAI_API_KEY": API_KEY,
        "OPENAI_BASE_URL": str(world.settings.openai_base_url),
        "DATA_DIR": str(tmp_path / "fresh"),
    }
    with anyio.fail_after(60):
        result = await anyio.run_process(
            [sys.executable, "-m", "orchestrator", "chat"],
            input=b"reorder the oat milk\n",
            env=env,
            cwd=shipped(tmp_path / "project"),  # what make chat reads, no .env
            check=False,
        )
    stdout = result.stdout.decode()
    assert result.returncode == 0, result.stderr.decode()
    assert "Reorder 2 × Oat Milk Barista Edition at Trader Joe's" in stdout
    assert "[1] 🛒 Add to cart" in stdout


async def test_make_chat_runs_the_venvs_interpreter_with_no_uv_parent(
    world: World, tmp_path: Path
) -> None:
    env = {
        **os.environ,
        "OPENAI_API_KEY": API_KEY,
        "OPENAI_BASE_URL": str(world.settings.openai_base_url),
        "DATA_DIR": str(tmp_path / "chat-data"),
    }
    async with await anyio.open_process(["make", "-s", "chat"], env=env, cwd=ROOT) as make:
        assert make.stdout is not None
        seen = b""
        with anyio.fail_after(60):
            while b"Ctrl-D" not in seen:
                seen += await make.stdout.receive()
        programs = children_of(make.pid)
        assert make.stdin is not None
        await make.stdin.aclose()  # Ctrl-D
        with anyio.fail_after(30):
            await make.wait()
    # make's only child is the venv's Python itself: the recipe's shell exec'd it, no uv run.
    assert programs == [str((ROOT / ".venv" / "bin" / "python").resolve())]


def children_of(pid: int) -> list[str]:
    """The programs ``pid``'s children run (Linux /proc)."""
    return [
        str(Path(f"/proc/{child}/exe").resolve())
        for task in Path(f"/proc/{pid}/task").iterdir()
        for child in (task / "children").read_text().split()
    ]
