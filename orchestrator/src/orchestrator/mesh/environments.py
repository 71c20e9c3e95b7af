"""A capability's own environment: its published server and what it needs, from its own lock.

A capability's dependencies never enter the workspace's lock (``uv.lock``): each has a lock
of its own beside the registry, ``capabilities/<name>.lock`` (a requirements file with a
hash for every file of every dependency, for every platform, made by ``uv pip compile
--generate-hashes`` for Linux and the images' Python), and its environment is made from that
lock alone, hashes required: one changed byte on the index and nothing is installed.

An environment is kept under ``CLAWMESH_CAPABILITY_ENVS`` (default
``~/.cache/clawmesh/capabilities``), named by its lock's SHA-256: a changed lock makes a new
one, an unchanged one is reused by every checkout and every test. A marker written last
says an environment is whole, so a half-made one is never used.
uv is ``CLAWMESH_UV``, else ``uv`` on PATH, else ``.tools/bin/uv`` (``make install``'s).
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from meshkit.yaml_config import ConfigError

LOCKS = "capabilities"
# The oldest Python the images run: Debian bookworm's 3.11.2 (make base-image; the official
# image's 3.11 is newer). One resolution for Linux and that Python, without markers that a
# newer interpreter would read otherwise (pip evaluates them with its own): every 3.11 runs
# it, and each version's hashes cover its wheels for every architecture (amd64, arm64).
PYTHON_VERSION = "3.11.2"
PLATFORM = "linux"
MAKE_S = 600
COMPLETE = ".clawmesh-complete"


class EnvironmentSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CLAWMESH_", extra="ignore")

    uv: str | None = Field(default=None, description="CLAWMESH_UV: the uv program to use")
    capability_envs: Path = Field(
        default=Path("~/.cache/clawmesh/capabilities"),
        description="CLAWMESH_CAPABILITY_ENVS: where capability environments are kept",
    )


class NoEnvironment(ConfigError):
    """An environment that cannot be made; the message says why and what to do."""


def lock_path(registry: Path, name: str) -> Path:
    """Where capability ``name``'s lock is kept: beside the registry file."""
    return registry.parent / LOCKS / f"{name}.lock"


def uv_program(settings: EnvironmentSettings | None = None) -> str:
    settings = settings or EnvironmentSettings()
    found = settings.uv or shutil.which("uv")
    if found:
        return found
    local = Path(".tools/bin/uv")
    if local.is_file():
        return str(local.resolve())
    raise NoEnvironment(
        "uv is not installed: make install provides it (.tools/bin/uv), or set CLAWMESH_UV"
    )


def lock(
    package: str,
    out: Path,
    settings: EnvironmentSettings | None = None,
    *,
    find_links: Path | None = None,
) -> None:
    """Resolve ``package`` (pinned) into ``out``: every dependency pinned, with hashes.
    ``find_links``: a folder of wheels to look in too (a server of your own, not on an
    index); the lock names it (``--find-links``), so what installs from it looks there."""
    requirement = out.with_suffix(".in")
    out.parent.mkdir(parents=True, exist_ok=True)
    requirement.write_text(f"{package}\n", encoding="utf-8")
    try:
        _uv(
            settings,
            "pip", "compile", str(requirement), "--output-file", str(out),
            "--python-platform", PLATFORM, "--generate-hashes",
            "--python-version", PYTHON_VERSION, "--quiet",
            "--no-header", "--custom-compile-command", "clawmesh capability add",
            *(("--find-links", str(find_links.resolve()), "--emit-find-links")
              if find_links is not None else ()),
            what=f"lock {package}",
        )  # fmt: skip
    finally:
        requirement.unlink(missing_ok=True)


def environment(lock_file: Path, settings: EnvironmentSettings | None = None) -> Path:
    """The environment of ``lock_file`` (its ``bin/`` holds the server's command), made now
    when there is none yet."""
    settings = settings or EnvironmentSettings()
    try:
        locked = lock_file.read_bytes()
    except OSError as error:
        raise NoEnvironment(
            f"{lock_file}: cannot read the capability's lock ({error.strerror}); "
            "clawmesh capability add makes it"
        ) from None
    root = settings.capability_envs.expanduser()
    made = root / hashlib.sha256(locked).hexdigest()[:20]
    if (made / COMPLETE).is_file():
        return made
    root.mkdir(parents=True, exist_ok=True)
    # Made in place (its scripts name their interpreter by path), one maker at a time; the
    # marker, written last, says it is whole: a half-made one is made anew.
    with (root / f"{made.name}.lock").open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        if (made / COMPLETE).is_file():
            return made
        shutil.rmtree(made, ignore_errors=True)
        _uv(settings, "venv", "--quiet", "--python", sys.executable, str(made), what="make")
        _uv(
            settings,
            "pip", "sync", "--quiet", "--require-hashes", "--python",
            str(made / "bin" / "python"), str(lock_file),
            what=f"install {lock_file.name}",
        )  # fmt: skip
        (made / COMPLETE).write_text(lock_file.name + "\n", encoding="utf-8")
    return made


def _uv(settings: EnvironmentSettings | None, *words: str, what: str) -> None:
    program = uv_program(settings)
    try:
        done = subprocess.run(  # noqa: S603 (uv, with words of ours)
            [program, *words], capture_output=True, text=True, timeout=MAKE_S, check=False
        )
    except subprocess.TimeoutExpired:
        raise NoEnvironment(f"uv could not {what} within {MAKE_S} s; try again") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        last = last.strip().removeprefix("╰─▶").strip().removeprefix("cause:").strip()[:300]
        raise NoEnvironment(f"uv could not {what}: {last}")
