"""What the stack should look like, read from compose.yaml (and compose.clients.yaml): the
template's user, each service's memory limit and networks, and which services
may publish ports (those compose.clients.yaml gives ``ports:``).

compose.yaml is read as YAML (its ``<<: *service`` merges resolved by the loader), without
Compose: doctor needs no Compose to say what the stack needs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from orchestrator.cli.checks.findings import Finding, fail, ok, warn

COMPOSE_FILE = "compose.yaml"
CLIENTS_FILE = "compose.clients.yaml"
# What compose.yaml's x-service template sets (tests/containers/test_compose_hardening.py
# holds every service to it): the expectation where compose.yaml cannot be read.
TEMPLATE_USER = "10001:10001"
MESH_NETWORKS = frozenset({"mesh", "egress"})
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([bkmg]?)b?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


@dataclass(frozen=True)
class ServiceSpec:
    """One service as compose.yaml declares it."""

    memory: int = 0
    networks: frozenset[str] = frozenset({"mesh"})
    ports_allowed: bool = False


@dataclass(frozen=True)
class StackSpec:
    """The stack compose.yaml describes (``name``: its project name)."""

    name: str = "clawmesh"
    user: str = TEMPLATE_USER
    services: dict[str, ServiceSpec] = field(default_factory=dict)

    @property
    def memory_needed(self) -> int | None:
        """The services' memory limits added up (None without compose.yaml)."""
        return sum(s.memory for s in self.services.values()) if self.services else None


def parse_size(value: object) -> int:
    """A compose size (``192m``, ``1g``, bytes as a number) in bytes; 0 when not one."""
    if isinstance(value, int):
        return value
    found = _SIZE.match(str(value))
    return int(float(found[1]) * _UNITS[found[2].lower()]) if found else 0


def spec_from(compose: dict[str, Any], clients: dict[str, Any] | None = None) -> StackSpec:
    """The spec of compose.yaml's loaded mapping (and compose.clients.yaml's)."""
    with_ports = {
        name
        for name, service in ((clients or {}).get("services") or {}).items()
        if isinstance(service, dict) and service.get("ports")
    }
    # A published server also joins the overlay's networks (Docker publishes no port of a
    # container on internal networks only: compose.clients.example.yaml adds `clients`).
    joined = {
        name: frozenset(_names(service.get("networks")))
        for name, service in ((clients or {}).get("services") or {}).items()
        if name in with_ports
    }
    template = compose.get("x-service") or {}
    services = {
        name: ServiceSpec(
            memory=parse_size(service.get("mem_limit", 0)),
            networks=frozenset(service.get("networks") or ["default"])
            | joined.get(name, frozenset()),
            ports_allowed=name in with_ports,
        )
        for name, service in (compose.get("services") or {}).items()
        if isinstance(service, dict)
    }
    return StackSpec(
        name=str(compose.get("name") or "clawmesh"),
        user=str(template.get("user") or TEMPLATE_USER),
        services=services,
    )


def load_spec(root: Path) -> tuple[StackSpec, Finding]:
    """compose.yaml (and compose.clients.yaml) under ``root``, and the finding on reading it;
    the template's defaults when it is not there (doctor run elsewhere)."""
    check = "compose.yaml"
    path = root / COMPOSE_FILE
    try:
        compose = _load(path)
        clients = _load(root / CLIENTS_FILE) if (root / CLIENTS_FILE).is_file() else None
    except FileNotFoundError:
        return StackSpec(), warn(
            check,
            f"not found under {root.resolve()}: the stack's needs are unknown",
            "run doctor in the clawmesh directory, or set CLAWMESH_ROOT to it",
        )
    except (OSError, ValueError) as error:
        return StackSpec(), fail(check, f"{path}: {error}", "fix the file it names")
    spec = spec_from(compose, clients)
    published = sorted(name for name, s in spec.services.items() if s.ports_allowed)
    ports = f"; ports published for {', '.join(published)}" if published else ""
    return spec, ok(check, f"{len(spec.services)} services{ports}")


def load_files(paths: list[Path]) -> StackSpec:
    """The spec of the files a project was started with (compose's
    ``com.docker.compose.project.config_files`` label: compose.yaml, then its overlays such
    as compose.calendar-google.yaml, which puts the calendar on egress); OSError or
    ValueError when one cannot be read."""
    loaded = [(path, _load(path)) for path in paths]
    clients = [mapping for path, mapping in loaded if path.name == CLIENTS_FILE]
    merged: dict[str, Any] = {}
    for path, mapping in loaded:
        if path.name != CLIENTS_FILE:
            merged = _overlay(merged, mapping)
    return spec_from(merged, _overlay({}, *clients) if clients else None)


def _overlay(base: dict[str, Any], *overlays: dict[str, Any]) -> dict[str, Any]:
    """Compose's merge, as far as doctor reads it: a service's keys replaced, its networks
    and ports added to."""
    merged = {**base, "services": dict(base.get("services") or {})}
    for overlay in overlays:
        merged |= {k: v for k, v in overlay.items() if k != "services"}
        for name, service in (overlay.get("services") or {}).items():
            before = dict(merged["services"].get(name) or {})
            after = {**before, **(service or {})}
            for key in ("networks", "ports"):
                if key in before and key in (service or {}):
                    after[key] = [*_names(before[key]), *_names(service[key])]
            merged["services"][name] = after
    return merged


def _names(value: object) -> list[Any]:
    return list(value) if isinstance(value, list | dict) else []


def _load(path: Path) -> dict[str, Any]:
    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else "somewhere"
        raise ValueError(f"not valid YAML ({where})") from None
    if not isinstance(loaded, dict):
        raise ValueError("not a mapping at the top level")
    return loaded
