"""Servers nobody here wrote, as capabilities of ``make run`` (one orchestrator process, the
fake Telegram and the fake model): mcp-server-git from PyPI (a package entry: its own lock
and environment, its write tools annotated, ``git_reset`` destructive) and the official
SDK's server with unannotated tools (``fakes/plain_notes_server``, a command entry).

Every change is a proposal: nothing happens before the tap, it is done once after it, a
second tap does nothing more, and the conversation learns how it went. Policies apply per
tool; a destructive tool is never offered "allow for 1 h".
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.responses import HTMLResponse
from starlette.routing import Route

from fakes.mesh import TOKENS, USER, Mesh, running_embedded
from fakes.responses_api import call, calls, text
from fakes.serving import serving
from fakes.telegram_api import Sent
from orchestrator.mesh.environments import NoEnvironment, environment, lock

pytestmark = pytest.mark.anyio

CLAWDIA = TOKENS["clawdia"]
GIT = "mcp-server-git==2026.10.19"
FETCH = "mcp-server-fetch==2026.10.24"
PAGE = (
    "<html><head><title>Market</title></head><body><h1>Opening hours</h1>"
    "<p>The market opens at 7:30 on Saturdays.</p></body></html>"
)
NOTES_SERVER = (
    Path(__file__).resolve().parents[1] / "fakes" / "plain_notes_server" / "plain_notes.py"
)


def locked(package: str, where: Path) -> Path:
    """``package``'s lock and environment, as clawmesh capability add makes them (once: the
    environment is kept in the cache by its lock's hash)."""
    made = where / "capability.lock"
    try:
        lock(package, made)
        environment(made)
    except NoEnvironment as error:
        pytest.skip(f"{package} cannot be installed from the package index here: {error}")
    return made


@pytest.fixture(scope="module")
def git_lock(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return locked(GIT, tmp_path_factory.mktemp("git"))


def repository(tmp: Path) -> Path:
    repo = tmp / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    for name, value in (("user.email", "me@example.org"), ("user.name", "Me")):
        subprocess.run(["git", "-C", str(repo), "config", name, value], check=True)
    git(repo, "commit", "-q", "--allow-empty", "-m", "init")
    (repo / "list.txt").write_text("oat milk\n")
    subprocess.run(["git", "-C", str(repo), "add", "list.txt"], check=True)
    return repo


def git(repo: Path, *words: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *words], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def with_git(tmp: Path, made: Path, repo: Path) -> str:
    """capabilities.yaml with git, its lock where the registry's capabilities are kept."""
    locks = tmp / "config" / "capabilities"
    locks.mkdir(parents=True, exist_ok=True)
    (locks / "git.lock").write_bytes(made.read_bytes())
    return (
        "servers:\n  git:\n"
        f"    package: {GIT}\n"
        f"    args: [--repository, {repo}]\n"
        "    description: The user's git repository\n"
    )


async def ask(mesh: Mesh, prompt: str) -> Sent:
    before = len(mesh.telegram.sent(CLAWDIA, USER))
    mesh.telegram.user_message(CLAWDIA, USER, prompt)
    await mesh.telegram.wait_for(lambda: len(mesh.telegram.sent(CLAWDIA, USER)) > before, 60)
    return mesh.telegram.sent(CLAWDIA, USER)[before]


def button(message: Sent, label: str) -> str:
    for row in (message.reply_markup or {}).get("inline_keyboard", []):
        for found in row:
            if label in found["text"]:
                return str(found["callback_data"])
    raise AssertionError(f"no button {label!r} on {message.reply_markup}")


def labels(message: Sent) -> list[str]:
    rows = (message.reply_markup or {}).get("inline_keyboard", [])
    return [found["text"] for row in rows for found in row]


def developer_notes(mesh: Mesh) -> list[str]:
    """What the conversation told the model of changes, in its latest request."""
    items = mesh.llm.requests[-1]["input"]
    return [
        str(item.get("content"))
        for item in items
        if item.get("role") == "developer" and isinstance(item.get("content"), str)
    ]


async def test_a_published_servers_change_is_done_once_after_the_tap_and_the_model_learns_it(
    tmp_path: Path, git_lock: Path
) -> None:
    repo = repository(tmp_path)
    capabilities = with_git(tmp_path, git_lock, repo)
    async with running_embedded(
        tmp_path, servers=("memory", "git"), capabilities=capabilities
    ) as mesh:
        mesh.llm.script(
            calls(call("git__git_commit", repo_path=str(repo), message="Add the list")),
            text("Shall I commit the list?"),
        )
        proposal = await ask(mesh, "commit my list")
        assert "Git proposes" in proposal.text
        assert 'git_commit: repo_path="' in proposal.text
        assert 'message="Add the list"' in proposal.text
        # The whole call, as it will be made, folded under the line (a tap unfolds it).
        quotes = [e for e in proposal.entities if "blockquote" in e["type"]]
        assert quotes, proposal.entities
        assert '"message": "Add the list"' in proposal.text
        assert git(repo, "rev-list", "--count", "HEAD") == "1"  # nothing before the tap

        confirm = button(proposal, "Confirm")
        mesh.telegram.tap(CLAWDIA, USER, proposal.message_id, confirm)
        await mesh.telegram.wait_for(lambda: len(proposal.edits) >= 1, 30)
        assert "✅" in proposal.edits[-1].text
        assert git(repo, "log", "-1", "--format=%s") == "Add the list"

        # A second tap of the same button (a client that still shows it) does nothing.
        mesh.telegram.tap(CLAWDIA, USER, proposal.message_id, confirm, forged=True)
        await mesh.telegram.wait_for(lambda: len(mesh.telegram.callback_answers(CLAWDIA)) >= 2, 30)
        assert git(repo, "rev-list", "--count", "HEAD") == "2"  # once: init and the commit

        mesh.llm.script(text("Done."))
        await ask(mesh, "did it work?")
        told = developer_notes(mesh)
        assert any("The user confirmed and it is done" in note for note in told), told


async def test_policies_apply_per_tool_and_a_destructive_tool_always_asks(
    tmp_path: Path, git_lock: Path
) -> None:
    repo = repository(tmp_path)
    (repo / "more.txt").write_text("bread\n")
    consent = {
        "clawdia": {
            "git.git_add": "auto",
            "git.git_checkout": "deny",
            "git.*": "{policy: ask, grant: 1h}",
        }
    }
    async with running_embedded(
        tmp_path,
        servers=("memory", "git"),
        capabilities=with_git(tmp_path, git_lock, repo),
        consent=consent,
    ) as mesh:
        mesh.llm.script(
            calls(call("git__git_add", repo_path=str(repo), files=["more.txt"])),
            text("Adding it."),
        )
        done = await ask(mesh, "stage more.txt")
        assert "more.txt" in git(repo, "diff", "--cached", "--name-only")  # auto: at once
        assert "✅" in done.text

        mesh.llm.script(
            calls(call("git__git_checkout", repo_path=str(repo), branch_name="main")),
            text("That is not allowed."),
        )
        await ask(mesh, "switch to main")
        outputs = [
            item["output"]
            for item in mesh.llm.requests[-1]["input"]
            if item.get("type") == "function_call_output"
        ]
        assert any("not allowed" in output for output in outputs)

        mesh.llm.script(
            calls(call("git__git_reset", repo_path=str(repo))),
            text("Shall I unstage everything?"),
        )
        reset = await ask(mesh, "unstage everything")
        assert "⚠️" in reset.text
        assert not any("1 h" in label for label in labels(reset)), labels(reset)
        assert "more.txt" in git(repo, "diff", "--cached", "--name-only")  # not yet


async def test_an_unannotated_tool_of_a_plain_sdk_server_is_a_change_behind_a_tap(
    tmp_path: Path,
) -> None:
    notes = tmp_path / "notes.json"
    entry = (
        f"  notes:\n    command: [{sys.executable}, {NOTES_SERVER}, {notes}]\n"
        "    description: The user's notes\n"
    )
    async with running_embedded(tmp_path, servers=("memory", "notes"), more_servers=entry) as mesh:
        mesh.llm.script(calls(call("notes__add_note", text="call mum")), text("Shall I?"))
        proposal = await ask(mesh, "note: call mum")
        assert not notes.exists()
        mesh.telegram.tap(CLAWDIA, USER, proposal.message_id, button(proposal, "Confirm"))
        await mesh.telegram.wait_for(lambda: len(proposal.edits) >= 1, 30)
        assert json.loads(notes.read_text()) == ["call mum"]
        assert "added note 1: call mum" in proposal.edits[-1].text


async def test_a_published_reader_fetches_a_page_and_its_answer_reaches_the_model(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    made = locked(FETCH, tmp_path_factory.mktemp("fetch"))
    locks = tmp_path / "config" / "capabilities"
    locks.mkdir(parents=True)
    (locks / "fetch.lock").write_bytes(made.read_bytes())
    capabilities = (
        "servers:\n  fetch:\n"
        f"    package: {FETCH}\n"
        "    args: [--allow-private-ips, --ignore-robots-txt]\n"
        "    egress: true\n"
    )
    page = Starlette(routes=[Route("/hours", lambda _: HTMLResponse(PAGE))])
    async with (
        serving(page) as site,
        running_embedded(tmp_path, servers=("memory", "fetch"), capabilities=capabilities) as mesh,
    ):
        # raw: the page as served (simplifying HTML, readabilipy would run npm where node is).
        page_call = call("fetch__fetch", url=f"{site}/hours", raw=True)
        mesh.llm.script(calls(page_call), text("Opens 7:30."))
        reply = await ask(mesh, "when does the market open?")
        assert reply.text == "Opens 7:30."
        outputs = [
            item["output"]
            for item in mesh.llm.requests[-1]["input"]
            if item.get("type") == "function_call_output"
        ]
        assert any("opens at 7:30 on Saturdays" in output for output in outputs), outputs
        assert not reply.reply_markup  # a read: no proposal, no button
