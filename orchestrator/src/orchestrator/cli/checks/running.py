"""The stack as it runs: the containers of a compose project (by their project label),
read with ``docker inspect`` and ``docker stats --no-stream``, and their findings."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from orchestrator.cli.checks.containers import (
    CONFIG_FILES_LABEL,
    PROJECT_LABEL,
    Container,
    container_findings,
)
from orchestrator.cli.checks.engine import Docker, EngineError
from orchestrator.cli.checks.findings import Finding, fail, ok, warn
from orchestrator.cli.checks.stack_spec import StackSpec, load_files


@dataclass(frozen=True)
class StackState:
    """What doctor found of the running stack: its findings and the memory it uses."""

    findings: list[Finding]
    memory_used: int


def read_containers(docker: Docker, project: str) -> list[Container]:
    """Every container of ``project`` (running or not), with stats for the running ones."""
    ids = docker.run(
        "ps", "--all", "--no-trunc", "--filter", f"label={PROJECT_LABEL}={project}",
        "--format", "{{.ID}}",
    ).split()  # fmt: skip
    if not ids:
        return []
    inspected = docker.json("inspect", *ids)
    running = [c["Id"] for c in inspected if c.get("State", {}).get("Status") == "running"]
    if not running:
        return [Container(c) for c in inspected]
    try:
        stats = docker.json_lines("stats", "--no-stream", "--format", "{{json .}}", *running)
    except (EngineError, ValueError):  # one stopped since: its memory is not read, no more
        stats = []
    by_name = {str(line.get("Name", "")).lstrip("/"): line for line in stats}
    return [Container(c, by_name.get(str(c.get("Name", "")).lstrip("/"))) for c in inspected]


def stack_findings(containers: list[Container], spec: StackSpec, project: str) -> StackState:
    """Every container's findings, by service; a service of compose.yaml without a
    container is one more."""
    if not containers:
        return StackState(
            [
                warn(
                    "stack",
                    f"no container of the project {project} here: nothing to check",
                    "make up starts it (or --project names the project that runs)",
                )
            ],
            0,
        )
    findings: list[Finding] = []
    for container in sorted(containers, key=lambda c: c.service):
        findings.extend(container_findings(container, spec, project))
    present = {c.service for c in containers}
    findings.extend(
        fail(f"{name}: health", "no container", f"docker compose up -d {name}")
        for name in sorted(set(spec.services) - present)
    )
    return StackState(findings, sum(c.memory_used for c in containers))


def mesh_network(internal: bool | None, name: str) -> list[Finding]:
    """The project's ``mesh`` network (``docker network inspect``'s Internal; None when
    there is none): internal, no route out of it."""
    check = "mesh network"
    if internal is None:
        return []
    if internal:
        return [ok(check, f"{name} is internal: no route out")]
    return [
        fail(
            check,
            f"{name} reaches the internet",
            "set internal: true on the mesh network in compose.yaml, then docker compose "
            "down and make up",
        )
    ]


def read_mesh_internal(docker: Docker, project: str) -> bool | None:
    try:
        shown = docker.run("network", "inspect", "--format", "{{.Internal}}", f"{project}_mesh")
    except EngineError:  # no such network
        return None
    return shown.strip() == "true"


def check_stack(docker: Docker, spec: StackSpec, project: str) -> StackState:
    try:
        containers = read_containers(docker, project)
    except (EngineError, ValueError) as error:
        return StackState(
            [fail("stack", f"cannot read the containers: {error}", "docker ps tells more")], 0
        )
    spec, said = _started_with(containers, spec)
    state = stack_findings(containers, spec, project)
    network = mesh_network(read_mesh_internal(docker, project), f"{project}_mesh")
    return StackState(said + network + state.findings, state.memory_used)


def _started_with(containers: list[Container], spec: StackSpec) -> tuple[StackSpec, list[Finding]]:
    """The spec of the files the project was started with (its containers' label), when
    they agree and can be read here; else ``spec`` (compose.yaml under CLAWMESH_ROOT)."""
    labels = {c.labels.get(CONFIG_FILES_LABEL) for c in containers} - {None, ""}
    if len(labels) != 1:
        return spec, []
    paths = [Path(p) for p in str(labels.pop()).split(",")]
    try:
        return load_files(paths), []
    except (OSError, ValueError) as error:
        return spec, [
            warn(
                "stack files",
                f"the files it was started with cannot be read here ({error}): checked "
                "against compose.yaml alone",
                "run doctor on the machine and in the directory make up ran in",
            )
        ]
