"""The running stack's checks, per container: health and restarts, memory against its limit,
and hardening against compose.yaml's template (read-only root, no capabilities,
no-new-privileges, its user, limits, init, a healthcheck, its networks, no published port
unless compose.clients.yaml asks for one).

Each check is a function of what ``docker inspect`` and ``docker stats --no-stream`` print
(JSON), so a container's findings are tested on what the real engine says of it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from orchestrator.cli.checks.findings import Finding, fail, ok, warn
from orchestrator.cli.checks.stack_spec import MESH_NETWORKS, ServiceSpec, StackSpec

PROJECT_LABEL = "com.docker.compose.project"
SERVICE_LABEL = "com.docker.compose.service"
CONFIG_FILES_LABEL = "com.docker.compose.project.config_files"
MEMORY_WARN = 0.80
MEMORY_FAIL = 0.95
_AMOUNT = re.compile(r"^\s*([\d.]+)\s*([KMGT]?i?B)\s*$", re.IGNORECASE)
_FACTORS = {
    "b": 1,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "tb": 1000**4,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "tib": 1024**4,
}


@dataclass(frozen=True)
class Container:
    """One container as doctor sees it: ``docker inspect``'s object and, when it runs, its
    line of ``docker stats --no-stream``."""

    inspected: Mapping[str, Any]
    stats: Mapping[str, Any] | None = None

    @property
    def labels(self) -> Mapping[str, str]:
        return self.inspected.get("Config", {}).get("Labels") or {}

    @property
    def name(self) -> str:
        return str(self.inspected.get("Name", "")).lstrip("/")

    @property
    def service(self) -> str:
        """Its compose service (its name when it has none)."""
        return self.labels.get(SERVICE_LABEL) or self.name

    @property
    def memory_used(self) -> int:
        if self.stats is None:
            return 0
        return parse_amount(str(self.stats.get("MemUsage", "")).split("/")[0])


def parse_amount(text: str) -> int:
    """``"12.5MiB"`` (docker stats) in bytes; 0 when not one."""
    found = _AMOUNT.match(text)
    return int(float(found[1]) * _FACTORS[found[2].lower()]) if found else 0


def container_findings(container: Container, spec: StackSpec, project: str) -> list[Finding]:
    """Every finding on one container of ``project``."""
    service = spec.services.get(container.service)
    findings = [health(container)]
    if container.stats is not None:
        findings.append(memory(container))
    findings.extend(hardening(container, service, spec.user, project))
    return findings


def health(container: Container) -> Finding:
    """Running, healthy, not restarted, never killed for memory."""
    name, state = container.service, container.inspected.get("State", {})
    check = f"{name}: health"
    logs = f"docker compose logs {name} says why"
    restarts = int(container.inspected.get("RestartCount") or 0)
    if state.get("OOMKilled"):
        return fail(
            check,
            "killed for lack of memory",
            f"raise mem_limit and memswap_limit of {name} in compose.yaml, then "
            f"docker compose up -d {name}",
        )
    if state.get("Status") != "running":
        return fail(
            check,
            f"{state.get('Status', 'unknown')} (exit {state.get('ExitCode')})",
            f"{logs}; docker compose up -d {name} starts it",
        )
    probe = state.get("Health") or {}
    status = probe.get("Status")
    if status == "unhealthy":
        last = (probe.get("Log") or [{}])[-1].get("Output", "").strip().splitlines()
        said = f": {last[-1][:200]}" if last else ""
        return fail(check, f"unhealthy{said}", logs)
    if status == "starting":
        return warn(check, "starting", "wait a minute: docker compose ps shows it healthy")
    shown = status or "running, no healthcheck"
    if restarts:
        times = "once" if restarts == 1 else f"{restarts} times"
        return warn(check, f"{shown}, restarted {times}", logs)
    return ok(check, f"{shown}, 0 restarts")


def memory(container: Container) -> Finding:
    """What it uses against its limit (``docker inspect``'s, ``docker stats``' use)."""
    name = container.service
    check = f"{name}: memory"
    used = container.memory_used
    limit = int(container.inspected.get("HostConfig", {}).get("Memory") or 0)
    if limit <= 0:
        return warn(check, f"{_mib(used)} used, no limit", f"give {name} mem_limit in compose.yaml")
    detail = f"{_mib(used)} of {_mib(limit)} ({used / limit:.0%})"
    fix = (
        f"raise mem_limit and memswap_limit of {name} in compose.yaml, then "
        f"docker compose up -d {name}"
    )
    if used >= limit * MEMORY_FAIL:
        return fail(check, f"{detail}: near its limit, it will be killed", fix)
    if used >= limit * MEMORY_WARN:
        return warn(check, detail, fix)
    return ok(check, detail)


def hardening(
    container: Container, service: ServiceSpec | None, user: str, project: str
) -> list[Finding]:
    """One finding for each way it departs from the template (each with its fix), or one
    ok finding."""
    name = container.service
    check = f"{name}: hardening"
    config = container.inspected.get("Config", {})
    host = container.inspected.get("HostConfig", {})
    departures: list[tuple[str, str]] = []

    def template(setting: str) -> str:
        return (
            f"give {name} the template's {setting} in compose.yaml (`<<: *service`), "
            f"then docker compose up -d {name}"
        )

    if not host.get("ReadonlyRootfs"):
        departures.append(("its root filesystem is writable", template("read_only: true")))
    if "ALL" not in [c.upper() for c in host.get("CapDrop") or []] or host.get("CapAdd"):
        departures.append(("it keeps Linux capabilities", template("cap_drop: [ALL], no cap_add")))
    if not any(o.startswith("no-new-privileges") for o in host.get("SecurityOpt") or []):
        departures.append(
            ("it may gain privileges", template('security_opt: ["no-new-privileges:true"]'))
        )
    if host.get("Privileged"):
        departures.append(("it is privileged", f"remove privileged: true from {name}"))
    running_as = str(config.get("User") or "root")
    if running_as.partition(":")[0] != user.partition(":")[0]:
        departures.append((f"it runs as {running_as}, not {user}", template(f'user: "{user}"')))
    departures.extend(_limits(host, service, template))
    test = (config.get("Healthcheck") or {}).get("Test") or ["NONE"]
    if test[0] == "NONE":
        departures.append(("it has no healthcheck", template("healthcheck")))
    departures.extend(_networks(container, service, project))
    published = _published(container.inspected)
    if published and not (service and service.ports_allowed):
        departures.append(
            (
                f"it publishes {', '.join(published)}",
                f"remove ports: from {name}; publish only through compose.clients.yaml, "
                "on 127.0.0.1",
            )
        )
    if not departures:
        networks = ", ".join(sorted(_joined(container, project)))
        return [
            ok(
                check,
                f"as the template: read-only, no capabilities, user {user}, "
                f"networks {networks}, "
                + ("ports as compose.clients.yaml asks" if published else "no published port"),
            )
        ]
    return [fail(check, what, fix) for what, fix in departures]


def _limits(
    host: Mapping[str, Any], service: ServiceSpec | None, template: Callable[[str], str]
) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    limit = int(host.get("Memory") or 0)
    if limit <= 0:
        found.append(("it has no memory limit", template("mem_limit")))
    elif service is not None and service.memory and limit != service.memory:
        found.append(
            (
                f"its memory limit is {_mib(limit)}, compose.yaml says {_mib(service.memory)}",
                "docker compose up -d recreates it with compose.yaml's limits",
            )
        )
    if int(host.get("PidsLimit") or 0) <= 0:
        found.append(("it has no pids limit", template("pids_limit")))
    if not host.get("Init"):
        found.append(("it runs without init (SIGTERM may not stop it)", template("init: true")))
    return found


def _networks(
    container: Container, service: ServiceSpec | None, project: str
) -> list[tuple[str, str]]:
    attached = set(container.inspected.get("NetworkSettings", {}).get("Networks") or {})
    joined = _joined(container, project)
    expected = service.networks if service is not None else None
    if expected is not None:
        fits = joined == expected
    else:  # a service compose.yaml does not declare: the mesh, at most egress besides
        fits = "mesh" in joined and joined <= MESH_NETWORKS
    if fits:
        return []
    wanted = ", ".join(sorted(expected if expected is not None else {"mesh"}))
    return [
        (
            f"its networks are {', '.join(sorted(attached)) or 'none'}, not {wanted}",
            f"declare {container.service}'s networks in compose.yaml (mesh, and egress only "
            f"to reach the internet), then docker compose up -d {container.service}",
        )
    ]


def _joined(container: Container, project: str) -> set[str]:
    """Its networks by their names in compose.yaml (``<project>_mesh`` → ``mesh``)."""
    attached = container.inspected.get("NetworkSettings", {}).get("Networks") or {}
    return {name.removeprefix(f"{project}_") for name in attached}


def _published(inspected: Mapping[str, Any]) -> list[str]:
    # The ports as bound (an ephemeral host port has its number there), else as asked.
    bindings = (inspected.get("NetworkSettings") or {}).get("Ports") or (
        inspected.get("HostConfig", {}).get("PortBindings") or {}
    )
    return sorted(
        f"{b.get('HostIp') or '*'}:{b.get('HostPort') or '?'}->{port}"
        for port, bound in bindings.items()
        for b in bound or []
    )


def _mib(size: int) -> str:
    return f"{size / 1024**2:.0f} MiB"
