"""``clawmesh capability add|list|remove`` as an operator types them, in a copy of the shipped
project: the tests' plain SDK server (tests/fakes/plain_notes_server) from a wheel built here,
its dependencies from the package index."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fakes.checkout import shipped

ROOT = Path(__file__).resolve().parents[2]
NOTES_SERVER = ROOT / "tests" / "fakes" / "plain_notes_server"
CLAWMESH = Path(sys.executable).with_name("clawmesh")


def uv() -> str:
    return shutil.which("uv") or str(ROOT / ".tools" / "bin" / "uv")


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheels")
    subprocess.run(
        [uv(), "build", "--quiet", "--wheel", "--out-dir", str(out), str(NOTES_SERVER)],
        check=True,
        capture_output=True,
        env={**os.environ, "SOURCE_DATE_EPOCH": "315532800"},
        timeout=300,
    )
    return out


def clawmesh(project: Path, *words: str) -> subprocess.CompletedProcess[str]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("CLAWMESH_", "MESH_"))},
        "CLAWMESH_UV": uv(),
        "CLAWMESH_REGISTRY": "config/mcp_servers.local.yaml",
        "CLAWMESH_AGENTS": "config/agents.yaml",
    }
    return subprocess.run(
        [str(CLAWMESH), "capability", *words],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_a_capability_is_added_listed_and_removed_with_the_files_comments_kept(
    tmp_path: Path, wheels: Path
) -> None:
    project = shipped(tmp_path / "project")
    capabilities = project / "config" / "capabilities.yaml"
    shipped_text = capabilities.read_text()
    added = clawmesh(
        project, "add", "notes", "--package", "clawmesh-plain-notes==1.0.0",
        "--find-links", str(wheels), "--command", "plain-notes", "--arg", "notes.json",
        "--port", "8121",
    )  # fmt: skip
    if added.returncode != 0 and "could not lock" in added.stderr:
        pytest.skip(f"the package index cannot be reached here: {added.stderr.strip()[:200]}")
    assert added.returncode == 0, added.stderr
    assert "add_note                     change ⚠️" in added.stdout
    text = capabilities.read_text()
    assert text.startswith(shipped_text.split("servers:")[0])  # the comments, as they were
    assert "  notes:\n    package: clawmesh-plain-notes==1.0.0\n" in text
    assert "    port: 8121\n" in text
    lock = project / "config" / "capabilities" / "notes.lock"
    assert "--hash=sha256:" in lock.read_text()

    listed = clawmesh(project, "list", "--json")
    assert listed.returncode == 0, listed.stderr
    [notes] = json.loads(listed.stdout)
    assert notes["port"] == 8121
    classes = {row["tool"]: (row["class"], row.get("destructive")) for row in notes["tools"]}
    assert classes == {
        "add_note": ("change", True),
        "count_notes": ("change", True),
        "clear_notes": ("change", True),
    }
    assert notes["tools"][0]["policy"] == {"clawdia": "ask (always: it may destroy data)"}

    again = clawmesh(project, "add", "notes", "--package", "clawmesh-plain-notes==1.0.0")
    assert again.returncode == 2
    assert again.stderr.strip() == ("Error: notes is in the registry already - choose another name")

    # A port is one capability's, and never one of the mesh's own servers': one line each,
    # before anything is locked or written.
    for port, said in (
        ("8121", "Error: notes publishes port 8121 already - give another --port"),
        ("8105", "Error: port 8105 is one of clawmesh's own servers'"),
    ):
        taken = clawmesh(project, "add", "other", "--package", "clawmesh-plain-notes==1.0.0",
                         "--port", port)  # fmt: skip
        assert taken.returncode == 2
        assert taken.stderr.startswith(said), taken.stderr
        assert len(taken.stderr.strip().splitlines()) == 1
        assert not (project / "config" / "capabilities" / "other.lock").exists()

    removed = clawmesh(project, "remove", "notes")
    assert removed.returncode == 0, removed.stderr
    assert capabilities.read_text() == shipped_text
    assert not lock.exists()


def test_a_name_that_cannot_be_a_capability_is_one_line_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    project = shipped(tmp_path / "project")
    before = (project / "config" / "capabilities.yaml").read_text()
    done = clawmesh(project, "add", "Not_A_Name", "--package", "x==1")
    assert done.returncode == 2
    assert done.stderr.startswith("Error: 'Not_A_Name' cannot name a capability - ")
    assert (project / "config" / "capabilities.yaml").read_text() == before
    assert not (project / "config" / "capabilities").exists()
