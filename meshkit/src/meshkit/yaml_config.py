"""YAML configuration files with ``${VAR}`` taken from the environment.

``${VAR}`` is replaced by the environment variable and an unset one is a configuration
error naming the file, the key and the variable; ``${VAR:-default}`` falls back to a
default (``${VAR:-}``: empty), and ``${VAR:?message}`` makes an unset or empty variable
an error that adds the message. Shared by the orchestrator (the
registry and the fleet) and telegram-io (the fleet's bot tokens).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from meshkit.settings import environment

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:-|:\?)([^}]*))?\}")

M = TypeVar("M", bound=BaseModel)


class ConfigError(Exception):
    """A configuration mistake: the message names the file, the key and the fix."""


def load_yaml(path: Path, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The file's top-level mapping, with variables substituted; ConfigError on mistakes."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(
            f"{path}: file not found; create it from the shipped example "
            "or set the path (CLAWMESH_REGISTRY / CLAWMESH_AGENTS)"
        ) from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as error:
        where = getattr(error, "problem_mark", None)
        line = f" line {where.line + 1}" if where is not None else ""
        raise ConfigError(f"{path}:{line}: not valid YAML; fix the syntax") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    env = environment() if environ is None else environ
    substituted: dict[str, Any] = _substitute(raw, env, path, "")
    return substituted


def _substitute(value: Any, env: Mapping[str, str], path: Path, key: str) -> Any:
    if isinstance(value, dict):
        return {k: _substitute(v, env, path, f"{key}.{k}".lstrip(".")) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, env, path, f"{key}[{i}]") for i, v in enumerate(value)]
    if not isinstance(value, str):
        return value

    def replace(match: re.Match[str]) -> str:
        name, op, arg = match[1], match[2], match[3]
        current = env.get(name)
        if current or (current is not None and op is None):  # set (plain: even empty)
            return current
        if op == ":-":
            return str(arg)
        hint = f" ({arg})" if arg else ""
        raise ConfigError(
            f"{path}: {key}: ${{{name}}} is not set; export {name}=...{hint}, or write "
            f"${{{name}:-}} in the file if it may be empty"
        )

    return _VAR.sub(replace, value)


def validated(model: type[M], body: Any, path: Path, key: str) -> M:
    """``body`` read as ``model``; its first mistake a ConfigError naming the file and key."""
    try:
        return model.model_validate(body)
    except ValidationError as error:
        raise ConfigError(f"{path}: {first_mistake(model, error, key)}") from None


def first_mistake(model: type[BaseModel], error: ValidationError, key: str = "") -> str:
    """``error``'s first mistake in one line, ``where: what`` (``key`` before its location;
    the mistake alone when it has neither, as a check of the whole model has)."""
    first = error.errors()[0]
    where = ".".join(str(p) for p in (key, *first["loc"]) if p != "")
    message = first["msg"].removeprefix("Value error, ")
    if first["type"] == "extra_forbidden":
        message = f"unknown key; the keys are {', '.join(model.model_fields)}"
    elif first["type"] == "missing":
        message = "required; add it"
    return f"{where}: {message}" if where else message
