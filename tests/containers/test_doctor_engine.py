"""``clawmesh doctor`` against the real engine: a container hardened as compose.yaml's
template passes, one started plainly (``docker run`` of the base image) fails with a fix for
each departure, and the command's output (lines, JSON) says so. Containers of projects of
this test's own (labels ``cli-doctor-<run>-*``), removed after; skipped without an engine."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from containers.stack import BASE_TAG, ROOT, RUN, engine_problem
from orchestrator.cli.checks.engine import Docker
from orchestrator.cli.checks.findings import STATUSES, Finding
from orchestrator.cli.checks.running import check_stack, read_containers, stack_findings
from orchestrator.cli.checks.stack_spec import load_spec

HARDENED = f"cli-doctor-{RUN}-hardened"
PLAIN = f"cli-doctor-{RUN}-plain"
EXITED = f"cli-doctor-{RUN}-exited"
# GOOGLE: started with compose.calendar-google.yaml, as compose labels it.
GOOGLE = f"cli-doctor-{RUN}-google"
NOTHING = f"cli-doctor-{RUN}-nothing"  # a project with no container
NETWORK = f"{HARDENED}_mesh"
OPEN_NETWORK = f"{PLAIN}_mesh"  # a mesh network with a route out
HEALTHY_WITHIN_S = 60


def docker(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        ["docker", *args], capture_output=True, text=True, check=False, timeout=120
    )
    if check:
        assert done.returncode == 0, f"docker {' '.join(args)}: {done.stderr}"
    return done


def labels(project: str, service: str) -> list[str]:
    return [
        *("--label", f"com.docker.compose.project={project}"),
        *("--label", f"com.docker.compose.service={service}"),
    ]


HARDENING = [
    "--user", "10001:10001", "--read-only", "--tmpfs", "/tmp:size=16m,mode=1777",
    "--cap-drop", "ALL", "--security-opt", "no-new-privileges:true",
    "--memory", "192m", "--memory-swap", "192m", "--cpus", "1.0", "--pids-limit", "64", "--init",
    "--health-cmd", "true", "--health-interval", "1s", "--health-start-period", "0s",
]  # fmt: skip


def remove_all() -> None:
    docker("rm", "--force", "--volumes", HARDENED, PLAIN, EXITED, GOOGLE, check=False)
    docker(
        "network", "rm", NETWORK, OPEN_NETWORK, f"{GOOGLE}_mesh", f"{GOOGLE}_egress", check=False
    )


def wait_healthy(name: str) -> None:
    deadline = time.monotonic() + HEALTHY_WITHIN_S
    while time.monotonic() < deadline:
        status = docker("inspect", "--format", "{{.State.Health.Status}}", name).stdout.strip()
        if status == "healthy":
            return
        time.sleep(0.2)  # polled against a deadline, not a guess at timing
    pytest.fail(f"{name} not healthy within {HEALTHY_WITHIN_S} s")


@pytest.fixture(scope="module")
def engine() -> Iterator[Docker]:
    problem = engine_problem()
    if problem:
        pytest.skip(f"doctor's container checks need a Docker engine: {problem}")
    if docker("image", "inspect", BASE_TAG, check=False).returncode != 0:
        pytest.skip(f"no {BASE_TAG} image here: make base-image builds it")
    remove_all()
    try:
        docker("network", "create", "--internal", NETWORK)
        docker("network", "create", OPEN_NETWORK)
        # As compose.yaml's template makes a service: calendar, on the mesh alone.
        docker(
            "run", "--detach", "--name", HARDENED, *labels(HARDENED, "calendar"),
            *HARDENING, "--network", NETWORK, BASE_TAG, "sleep", "infinity",
        )  # fmt: skip
        # The Google calendar: compose.yaml and its overlay (egress besides the mesh).
        files = f"{ROOT / 'compose.yaml'},{ROOT / 'compose.calendar-google.yaml'}"
        docker("network", "create", "--internal", f"{GOOGLE}_mesh")
        docker("network", "create", f"{GOOGLE}_egress")
        docker(
            "run", "--detach", "--name", GOOGLE, *labels(GOOGLE, "calendar"),
            "--label", f"com.docker.compose.project.config_files={files}",
            *HARDENING, "--network", f"{GOOGLE}_mesh", BASE_TAG, "sleep", "infinity",
        )  # fmt: skip
        docker("network", "connect", f"{GOOGLE}_egress", GOOGLE)
        # As anyone would start it: root, writable, every default, a port published.
        docker(
            "run", "--detach", "--name", PLAIN, *labels(PLAIN, "weather"),
            "--publish", "127.0.0.1::8101", BASE_TAG, "sleep", "infinity",
        )  # fmt: skip
        docker("run", "--name", EXITED, *labels(EXITED, "memory"), BASE_TAG, "false", check=False)
        wait_healthy(HARDENED)
        wait_healthy(GOOGLE)
        yield Docker("docker")
    finally:
        remove_all()


def findings_of(engine: Docker, project: str, root: Path = ROOT) -> list[Finding]:
    spec, _ = load_spec(root)
    return stack_findings(read_containers(engine, project), spec, project).findings


def test_a_container_hardened_as_the_template_passes(engine: Docker) -> None:
    findings = findings_of(engine, HARDENED)
    calendar = [f for f in findings if f.check.startswith("calendar: ")]
    assert [(f.check, f.status) for f in calendar] == [
        ("calendar: health", "ok"),
        ("calendar: memory", "ok"),
        ("calendar: hardening", "ok"),
    ]
    assert calendar[0].detail == "healthy, 0 restarts"
    assert " MiB of 192 MiB (" in calendar[1].detail
    assert calendar[2].detail == (
        "as the template: read-only, no capabilities, user 10001:10001, networks mesh, "
        "no published port"
    )
    network = check_stack(engine, load_spec(ROOT)[0], HARDENED).findings[0]
    assert (network.check, network.status) == ("mesh network", "ok")
    assert network.detail == f"{NETWORK} is internal: no route out"
    # compose.yaml's other services have no container in this project: each one said.
    missing = {f.check.removesuffix(": health") for f in findings if f.detail == "no container"}
    assert missing == set(load_spec(ROOT)[0].services) - {"calendar"}


def test_the_files_the_stack_was_started_with_decide_its_networks(engine: Docker) -> None:
    # compose.yaml alone puts the calendar on the mesh only; its Google overlay adds egress.
    findings = check_stack(engine, load_spec(ROOT)[0], GOOGLE).findings
    hardening = [f for f in findings if f.check == "calendar: hardening"]
    assert [(f.status, f.detail) for f in hardening] == [
        (
            "ok",
            "as the template: read-only, no capabilities, user 10001:10001, "
            "networks egress, mesh, no published port",
        )
    ]
    alone = stack_findings(read_containers(engine, GOOGLE), load_spec(ROOT)[0], GOOGLE)
    [networks] = [f for f in alone.findings if f.check == "calendar: hardening"]
    assert (networks.status, networks.detail) == (
        "fail",
        f"its networks are {GOOGLE}_egress, {GOOGLE}_mesh, not mesh",
    )


def test_a_plain_container_fails_with_a_fix_for_each_departure(engine: Docker) -> None:
    findings = findings_of(engine, PLAIN)
    hardening = {f.detail: f for f in findings if f.check == "weather: hardening"}
    assert all(f.status == "fail" for f in hardening.values())
    published = next(d for d in hardening if d.startswith("it publishes 127.0.0.1:"))
    assert published.endswith("->8101/tcp")
    assert sorted(hardening) == sorted(
        [
            "it has no healthcheck",
            "it has no memory limit",
            "it has no pids limit",
            "it keeps Linux capabilities",
            "it may gain privileges",
            published,
            "it runs as root, not 10001:10001",
            "it runs without init (SIGTERM may not stop it)",
            "its root filesystem is writable",
            "its networks are bridge, not egress, mesh",
        ]
    )
    fixes = {detail: finding.fix for detail, finding in hardening.items()}
    assert fixes["its root filesystem is writable"] == (
        "give weather the template's read_only: true in compose.yaml (`<<: *service`), "
        "then docker compose up -d weather"
    )
    assert fixes[published].startswith("remove ports: from weather")
    assert all(fix and "\n" not in fix for fix in fixes.values())
    health = next(f for f in findings if f.check == "weather: health")
    assert (health.status, health.detail) == ("ok", "running, no healthcheck, 0 restarts")
    memory = next(f for f in findings if f.check == "weather: memory")
    assert (memory.status, memory.fix) == ("warn", "give weather mem_limit in compose.yaml")


def test_a_port_compose_clients_yaml_asks_for_is_no_departure(
    engine: Docker, tmp_path: Path
) -> None:
    (tmp_path / "compose.yaml").write_text((ROOT / "compose.yaml").read_text())
    (tmp_path / "compose.clients.yaml").write_text(
        'services: {weather: {ports: ["127.0.0.1:8101:8101"]}}\n'
    )
    details = [f.detail for f in findings_of(engine, PLAIN, tmp_path) if "hardening" in f.check]
    assert not [d for d in details if d.startswith("it publishes")]
    assert "its root filesystem is writable" in details


def test_a_container_that_exited_fails_with_its_exit_code(engine: Docker) -> None:
    health = next(f for f in findings_of(engine, EXITED) if f.check == "memory: health")
    assert (health.status, health.detail) == ("fail", "exited (exit 1)")
    assert health.fix == (
        "docker compose logs memory says why; docker compose up -d memory starts it"
    )


def clawmesh(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # cwd: a directory without .env (a developer's must not reach the test).
    env = {**os.environ, "CLAWMESH_ROOT": str(ROOT)}
    env.pop("COMPOSE_PROJECT_NAME", None)
    return subprocess.run(
        [str(ROOT / ".venv" / "bin" / "clawmesh"), "doctor", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        check=False,
        timeout=120,
    )


def test_the_command_prints_json_findings_and_exits_1_on_a_failure(
    engine: Docker, tmp_path: Path
) -> None:
    done = clawmesh(tmp_path, "--json", "--project", PLAIN)
    assert done.returncode == 1, done.stderr
    assert done.stderr == ""
    shown = json.loads(done.stdout)
    assert set(shown) == {"findings", "counts"}
    assert all(set(f) == {"check", "status", "detail", "fix"} for f in shown["findings"])
    assert all(f["status"] in STATUSES for f in shown["findings"])
    assert all(bool(f["fix"]) == (f["status"] != "ok") for f in shown["findings"])
    assert shown["counts"] == {
        status: sum(f["status"] == status for f in shown["findings"]) for status in STATUSES
    }
    checks = [f["check"] for f in shown["findings"]]
    assert checks[:8] == [
        "docker",
        "compose",
        "architecture",
        "page size",
        "memory cgroup",
        "compose.yaml",
        "free disk",
        "free memory",
    ]
    assert {"weather: health", "weather: memory", "weather: hardening"} <= set(checks)
    network = next(f for f in shown["findings"] if f["check"] == "mesh network")
    assert network == {
        "check": "mesh network",
        "status": "fail",
        "detail": f"{OPEN_NETWORK} reaches the internet",
        "fix": "set internal: true on the mesh network in compose.yaml, then docker compose "
        "down and make up",
    }


def test_the_command_prints_a_line_per_finding_and_its_fix(engine: Docker, tmp_path: Path) -> None:
    done = clawmesh(tmp_path, "--project", PLAIN)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    lines = done.stdout.splitlines()
    writable = lines.index("fail  weather: hardening: its root filesystem is writable")
    assert lines[writable + 1].startswith("      fix: give weather the template's read_only")
    assert lines[-1].startswith("doctor: ")
    assert lines[-1].endswith(" fail")


def test_a_project_without_containers_is_a_warning_not_a_failure(
    engine: Docker, tmp_path: Path
) -> None:
    done = clawmesh(tmp_path, "--json", "--project", NOTHING)
    shown = json.loads(done.stdout)
    stack = [f for f in shown["findings"] if f["check"] == "stack"]
    assert stack == [
        {
            "check": "stack",
            "status": "warn",
            "detail": f"no container of the project {NOTHING} here: nothing to check",
            "fix": "make up starts it (or --project names the project that runs)",
        }
    ]
    assert done.returncode == (1 if shown["counts"]["fail"] else 0)
