"""Which locked packages lack a wheel a given Linux machine can install (uv.lock's names).

The images install binary wheels only (containers/wheels.sh): a package the components
need that has neither a pure-Python wheel nor one for the machine (manylinux for glibc
2.36 or older, bookworm's, and CPython 3.11) would make the image fail to build there.
"""

from __future__ import annotations

import re
from typing import Any

from packaging.markers import Marker

GLIBC_MINOR = 36  # Debian bookworm, the official slim image and Raspberry Pi OS
PYTHON = (3, 11)
_MANYLINUX = re.compile(r"manylinux_2_(\d+)_(\w+)")
_LEGACY = {"manylinux1": 5, "manylinux2010": 12, "manylinux2014": 17}


def _platform_fits(tag: str, machine: str) -> bool:
    if tag == "any" or tag == f"linux_{machine}":
        return True
    found = _MANYLINUX.fullmatch(tag)
    if found:
        return found[2] == machine and int(found[1]) <= GLIBC_MINOR
    legacy, _, arch = tag.partition("_")
    return legacy in _LEGACY and arch == machine


def _python_fits(python: str, abi: str) -> bool:
    for tag in python.split("."):
        if tag in {"py3", f"py{PYTHON[0]}{PYTHON[1]}"}:
            return True
        found = re.fullmatch(r"cp3(\d+)", tag)
        if found and (int(found[1]) == PYTHON[1] or (abi == "abi3" and int(found[1]) <= PYTHON[1])):
            return True
    return False


def wheel_fits(filename: str, machine: str) -> bool:
    """Whether the wheel ``filename`` installs on CPython 3.11 on Linux ``machine``."""
    parts = filename.removesuffix(".whl").split("-")
    python, abi, platforms = parts[-3], parts[-2], parts[-1]
    abis = set(abi.split("."))
    if not abis & {"none", "abi3", f"cp{PYTHON[0]}{PYTHON[1]}"}:
        return False
    return _python_fits(python, abi) and any(
        _platform_fits(p, machine) for p in platforms.split(".")
    )


def _environment(machine: str) -> dict[str, str]:
    return {
        "python_version": f"{PYTHON[0]}.{PYTHON[1]}",
        "python_full_version": f"{PYTHON[0]}.{PYTHON[1]}.2",
        "sys_platform": "linux",
        "platform_system": "Linux",
        "platform_machine": machine,
        "os_name": "posix",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "extra": "",
    }


def runtime_packages(lock: dict[str, Any], machine: str) -> list[dict[str, Any]]:
    """The locked packages the workspace members need at run time on ``machine`` (no dev)."""
    by_name = {package["name"]: package for package in lock["package"]}
    env = _environment(machine)
    # (name, extra): a dependency on "pyjwt[crypto]" brings pyjwt's optional "crypto" ones.
    todo = [(p["name"], "") for p in lock["package"] if {"editable", "virtual"} & set(p["source"])]
    seen: set[tuple[str, str]] = set()
    while todo:
        name, extra = todo.pop()
        if (name, extra) in seen:
            continue
        seen.add((name, extra))
        package = by_name[name]
        needs = package.get("optional-dependencies", {}).get(extra, []) if extra else []
        for dependency in needs or package.get("dependencies", []):
            marker = dependency.get("marker")
            if marker is None or Marker(marker).evaluate(env):
                todo.append((dependency["name"], ""))
                todo += [(dependency["name"], e) for e in dependency.get("extra", [])]
    names = sorted({name for name, _ in seen})
    return [by_name[name] for name in names if "registry" in by_name[name]["source"]]


def missing_wheels(lock: dict[str, Any], machine: str) -> list[str]:
    """``name==version`` of every runtime package with no wheel for ``machine``."""
    return [
        f"{package['name']}=={package['version']}"
        for package in runtime_packages(lock, machine)
        if not any(
            wheel_fits(wheel["url"].rsplit("/", 1)[-1], machine)
            for wheel in package.get("wheels", [])
        )
    ]
