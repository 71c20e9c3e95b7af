"""The project's own configuration, whatever the checkout holds: a copy of ``config/`` and
``agents/`` as git holds them at HEAD, for the tests whose subject they are. The working tree
is a person's: ``clawmesh agent init bob`` there adds ``agents/bob`` and an entry to
``config/agents.yaml``, which a test of ``init`` must not find. Outside a git checkout (an
unpacked archive), the files themselves."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def shipped(dest: Path, *paths: str) -> Path:
    """``dest`` holding ``paths`` (default: config and agents) as shipped; returns ``dest``."""
    paths = paths or ("config", "agents")
    archived = subprocess.run(
        ["git", "archive", "--format=tar", "HEAD", "--", *paths],
        cwd=ROOT,
        capture_output=True,
        check=False,
        timeout=60,
    )
    if archived.returncode == 0:
        with tarfile.open(fileobj=io.BytesIO(archived.stdout)) as archive:
            archive.extractall(dest, filter="data")
        return dest
    for path in paths:
        shutil.copytree(ROOT / path, dest / path, dirs_exist_ok=True)
    return dest


def orchestrator(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m orchestrator [args]`` with ``env`` and no input, as a user starts it in a
    project folder: the shipped config/ and agents/, and no .env (the checkout's is a
    person's, who may have filled it in)."""
    with tempfile.TemporaryDirectory() as folder:
        return subprocess.run(
            [sys.executable, "-m", "orchestrator", *args],
            env=env,
            cwd=shipped(Path(folder)),
            input="",
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
