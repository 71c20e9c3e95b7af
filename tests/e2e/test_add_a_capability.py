"""The README's "Add a capability" recipe, followed as written in a copy of the repository.

The blocks of that section are written into a temporary copy (``# file:`` makes a file,
``# append to:`` extends one), the lock is made with uv as ``make lock`` makes it (it asks
the package index, which the project's machines and CI reach), the environment offline from
the cache ``make install`` filled; the new server is linted and type-checked with the
project's own configuration, and ``python -m orchestrator chat`` in that environment offers
its tool to the model, which calls it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import anyio
import pytest

from fakes.responses_api import FakeOpenAI, call, calls, text
from fakes.world import API_KEY

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"```[a-z]*\n# (file|append to): (\S+)\n(.*?)```", re.S)


def recipe() -> list[tuple[str, str, str]]:
    """(how, path, text) of each block of the README's "Add a capability" section."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Add a capability\n", 1)[1].split("\n## ", 1)[0]
    return [(how, path, body) for how, path, body in BLOCK.findall(section)]


def package_index() -> str:
    """The index ``uv lock`` asks: uv's own variables when set, else the one the lock names."""
    for variable in ("UV_DEFAULT_INDEX", "UV_INDEX_URL"):
        if os.environ.get(variable):
            return os.environ[variable]

    found = re.search(r'registry = "([^"]+)"', (ROOT / "uv.lock").read_text(encoding="utf-8"))
    return found.group(1) if found else "https://pypi.org/simple"


def index_problem(url: str, timeout_s: float = 5.0) -> str | None:
    """Why the package index does not serve the project's packages (a few words), or None
    when it lists one of them (pytest) within ``timeout_s``."""
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/pytest/", timeout=timeout_s) as answer:
            answer.read(1)
    except urllib.error.HTTPError as error:
        return f"HTTP {error.code}"
    except (OSError, ValueError) as error:
        return f"{type(error).__name__}: {error}"[:200]
    return None


def uv() -> str:
    found = shutil.which("uv") or str(ROOT / ".tools" / "bin" / "uv")
    assert Path(found).exists(), "make install provides uv"
    return found


def copy_of_the_repository(target: Path) -> None:
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file() and not name.startswith("data/"):
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    if (ROOT / ".mypy_cache").is_dir():  # only for speed: mypy checks the new files anyway
        shutil.copytree(ROOT / ".mypy_cache", target / ".mypy_cache")


def run(command: list[str], cwd: Path, **env: str) -> str:
    done = subprocess.run(
        command,
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"{command}: {done.stdout}{done.stderr}"
    return done.stdout


def test_the_recipe_has_a_file_for_each_part_of_a_server() -> None:
    made = {path for how, path, _ in recipe() if how == "file"}
    package = "servers/echo/src/mcp_echo"
    assert {
        "servers/echo/pyproject.toml",
        f"{package}/__init__.py",
        f"{package}/settings.py",
        f"{package}/server.py",
        f"{package}/__main__.py",
    } == made
    assert [path for how, path, _ in recipe() if how == "append to"] == [
        "config/mcp_servers.local.yaml"
    ]


async def test_a_server_made_from_the_recipe_is_offered_to_the_model(tmp_path: Path) -> None:
    index = package_index()
    problem = await anyio.to_thread.run_sync(index_problem, index)
    if problem:
        pytest.skip(f"`uv lock` needs the package index {index}, which does not answer: {problem}")
    copy = tmp_path / "clawmesh"
    copy_of_the_repository(copy)
    pyproject_before = (copy / "pyproject.toml").read_text()
    for how, path, block in recipe():
        target = copy / path
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("a" if how == "append to" else "w", encoding="utf-8") as out:
            out.write(block)
    # `make lock install`. Locking asks the index for the versions it may choose from (a cache
    # filled by `uv sync --locked` holds the locked wheels, not those listings); the install is
    # offline: uv's cache already holds every locked package.
    run([uv(), "lock"], copy)
    run([uv(), "sync", "--locked", "--all-packages", "--offline"], copy)
    assert (copy / "pyproject.toml").read_text() == pyproject_before
    python = str(copy / ".venv" / "bin" / "python")
    run([python, "-m", "ruff", "check", "servers/echo"], copy)
    run([python, "-m", "ruff", "format", "--check", "servers/echo"], copy)
    roots = ":".join(str(p) for p in [copy / "meshkit/src", copy / "orchestrator/src"])
    roots += ":" + ":".join(str(p) for p in sorted(copy.glob("servers/*/src")))
    run([python, "-m", "mypy", "servers/echo/src"], copy, MYPYPATH=roots)

    llm = FakeOpenAI()
    llm.script(
        calls(call("echo__echo", text="ping")),
        lambda body: text(f"It said {body['input'][-1]['output']}."),
    )
    async with llm.serve() as llm_url:
        with anyio.fail_after(120):
            chat = await anyio.run_process(
                [python, "-m", "orchestrator", "chat"],
                input=b"say ping back\n",
                cwd=copy,
                env={
                    **os.environ,
                    "CLAWMESH_REGISTRY": "config/mcp_servers.local.yaml",
                    "OPENAI_API_KEY": API_KEY,
                    "OPENAI_BASE_URL": llm_url,
                    "DATA_DIR": str(tmp_path / "data"),
                },
                check=False,
            )
    assert chat.returncode == 0, chat.stderr.decode()
    offered = {tool["name"] for tool in llm.requests[0]["tools"]}
    assert "echo__echo" in offered
    assert "It said ping." in chat.stdout.decode()
