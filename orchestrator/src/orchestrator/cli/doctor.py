"""``clawmesh doctor [--json] [--project NAME]``: what breaks a deployment on this machine.

    Docker and Compose versions, the architecture, the kernel's page size, the memory
    cgroup, free disk and memory against the stack's limits (compose.yaml); and when the
    stack runs, each container's health and restarts, memory against its limit and
    hardening against compose.yaml's template.

Each finding is ok, warn or fail, with a one-line fix; exit 1 when any fails. Run it on
the host, in the clawmesh directory (``uv run clawmesh doctor``): it reads the machine and
the Docker engine, which a container does not see. The project is ``--project``, else
``COMPOSE_PROJECT_NAME`` (``.env``, as compose reads it), else compose.yaml's ``name``.
The checks live in cli/checks/, one concept a module; each takes what it reads as input.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

from cyclopts import Parameter
from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from meshkit.command import guarded, settings_of
from orchestrator.cli.checks import engine, host
from orchestrator.cli.checks.engine import Docker, EngineError
from orchestrator.cli.checks.findings import Finding, counts
from orchestrator.cli.checks.running import check_stack
from orchestrator.cli.checks.stack_spec import load_spec


class DoctorSettings(BaseSettings):
    """Where the clawmesh directory is and which compose project runs."""

    model_config = SettingsConfigDict(extra="ignore", env_ignore_empty=True)

    root: Path = Field(default=Path(), validation_alias=AliasChoices("CLAWMESH_ROOT"))
    compose_project_name: str | None = Field(
        default=None, validation_alias=AliasChoices("COMPOSE_PROJECT_NAME")
    )


@dataclass(frozen=True)
class Machine:
    """What doctor reads of the machine: a tree holding ``sys/`` and ``proc/``, the page
    size, the kernel's machine name, the ``docker`` command (None: there is none) and whether
    this runs inside a container."""

    root: Path = Path("/")
    page_size: int = field(default_factory=lambda: os.sysconf("SC_PAGE_SIZE"))
    machine: str = field(default_factory=platform.machine)
    docker: str | None = field(default_factory=lambda: shutil.which("docker"))
    # Docker writes /.dockerenv into every container it starts.
    in_container: bool = field(default_factory=Path("/.dockerenv").exists)


def diagnose(machine: Machine, root: Path, project: str | None) -> list[Finding]:
    """Every finding, in the order a reader fixes them: the engine, the host, the stack."""
    spec, spec_finding = load_spec(root)
    project = project or spec.name
    docker = Docker(machine.docker) if machine.docker else None
    info, problem = _engine_info(docker)
    answering = docker if info is not None else None
    findings = [
        engine.docker_finding(
            machine.docker,
            info.version if info else None,
            problem,
            in_container=machine.in_container,
        ),
        engine.compose_finding(engine.find_compose(machine.docker)),
        host.architecture(machine.machine, _engine_arch(answering)),
        host.page_size(machine.page_size),
        host.memory_cgroup(machine.root, info.memory_limit if info else None),
        spec_finding,
    ]
    disk = _existing(info.root_dir if info and info.root_dir else machine.root)
    findings.append(host.free_disk(disk, shutil.disk_usage(disk).free))
    stack = check_stack(answering, spec, project) if answering is not None else None
    meminfo = host.read_text(machine.root / "proc" / "meminfo")
    used = stack.memory_used if stack else 0
    findings.append(host.free_memory(meminfo, spec.memory_needed, used))
    return findings + (stack.findings if stack else [])


def doctor(
    *,
    as_json: Annotated[bool, Parameter(name="--json", negative=())] = False,
    project: str | None = None,
) -> None:
    """The description is clawmesh's (cli/main.py).

    Parameters
    ----------
    as_json
        One JSON object: the findings (check, status, detail, fix) and their counts.
    project
        The compose project to check (default: COMPOSE_PROJECT_NAME, else compose.yaml's name).
    """
    findings = guarded(lambda: _diagnose_here(project), as_json=as_json)
    if as_json:
        shown = {"findings": [f.as_json() for f in findings], "counts": counts(findings)}
        print(json.dumps(shown, indent=1))
    else:
        print(render(findings))
    if any(f.status == "fail" for f in findings):
        raise SystemExit(1)


def _diagnose_here(project: str | None) -> list[Finding]:
    settings = settings_of(DoctorSettings)
    return diagnose(Machine(), settings.root, project or settings.compose_project_name)


def render(findings: list[Finding]) -> str:
    """A line per finding, its fix on the next; the counts last."""
    lines: list[str] = []
    for finding in findings:
        lines.append(f"{finding.status:<5} {finding.check}: {finding.detail}")
        if finding.fix:
            lines.append(f"      fix: {finding.fix}")
    tally = counts(findings)
    lines.append(f"doctor: {', '.join(f'{n} {status}' for status, n in tally.items())}")
    return "\n".join(lines)


@dataclass(frozen=True)
class EngineInfo:
    """What doctor takes of ``docker info``."""

    version: str
    memory_limit: bool | None
    root_dir: Path | None


def _engine_info(docker: Docker | None) -> tuple[EngineInfo | None, str | None]:
    """``docker info``, or None and why the engine does not answer."""
    if docker is None:
        return None, "no docker command"
    try:
        info = docker.json("info", "--format", "{{json .}}")
    except (EngineError, ValueError) as error:
        return None, str(error)
    if not isinstance(info, dict):
        return None, "docker info printed no object"
    errors = info.get("ServerErrors")
    if errors or not info.get("ServerVersion"):
        return None, "; ".join(map(str, errors or ["no server version"]))[:300]
    memory_limit = info.get("MemoryLimit")
    root_dir = info.get("DockerRootDir")
    return EngineInfo(
        version=str(info["ServerVersion"]),
        memory_limit=memory_limit if isinstance(memory_limit, bool) else None,
        root_dir=Path(root_dir) if isinstance(root_dir, str) and root_dir else None,
    ), None


def _engine_arch(docker: Docker | None) -> str | None:
    """Docker's own architecture (Go's name: amd64, arm64, arm)."""
    if docker is None:
        return None
    try:
        return docker.run("version", "--format", "{{.Server.Arch}}").strip() or None
    except EngineError:
        return None


def _existing(path: Path) -> Path:
    """``path`` or the nearest directory above it whose free space can be read (Docker's
    root directory is often root's alone)."""
    for candidate in (path, *path.parents):
        try:
            shutil.disk_usage(candidate)
        except OSError:
            continue
        return candidate
    return Path("/")
