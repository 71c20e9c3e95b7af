"""Capabilities: published MCP servers, each one entry of ``capabilities.yaml`` (beside the
registry) with its own lock (``capabilities/<name>.lock``). What ``clawmesh capability``
does, apart from its command line (``cli/capability.py``).

The file is edited as text, so every comment and the layout stay: an entry is added at the
end of ``servers:``, and removed with the lines under its name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from fastmcp import Client
from pydantic import ValidationError

from mcp_gateway.upstream import CHANGE, Classified, classify
from meshkit.command import CliError
from meshkit.yaml_config import first_mistake
from orchestrator.config.registry import (
    CAPABILITIES_FILE,
    CAPABILITY_NAME,
    PACKAGE,
    ServerEntry,
    load_capabilities,
    load_registry,
)
from orchestrator.mesh.environments import NoEnvironment, environment, lock, lock_path
from orchestrator.mesh.transports import upstream_of

START_S = 60.0
HEADER = """\
# Capabilities: MCP servers somebody else published, one entry each (clawmesh capability add
# writes them; docs/configuration.md says what an entry may hold). Each runs from an
# environment of its own, made from its own lock (capabilities/<name>.lock, hashes checked):
# make run and make chat start it here, behind a gateway (make up does not build its container
# yet). A tool that does not declare readOnlyHint: true is a change: the model proposes it,
# and it is made once after your tap.
servers:
"""


@dataclass(frozen=True)
class Added:
    name: str
    package: str
    file: Path
    lock: Path
    tools: list[Classified]


def capabilities_file(registry: Path) -> Path:
    return registry.parent / CAPABILITIES_FILE


def add(
    registry: Path,
    name: str,
    package: str,
    *,
    command: list[str] | None = None,
    args: list[str] | None = None,
    egress: bool = False,
    data: bool = False,
    memory: str | None = None,
    debian: list[str] | None = None,
    port: int | None = None,
    description: str = "",
    find_links: Path | None = None,
) -> Added:
    """Lock ``package`` (pinned to what it resolves to, when no version is given), make its
    environment, start it and list its tools, then write its entry: a server that does not
    start is not added."""
    if not CAPABILITY_NAME.match(name):
        raise CliError(
            f"{name!r} cannot name a capability",
            "use 1-30 lower-case letters, digits or '-', starting with a letter",
            code=2,
        )
    if name in load_registry(registry):
        raise CliError(f"{name} is in the registry already", "choose another name", code=2)
    spec = package.strip()
    file = capabilities_file(registry)
    taken = {e.port: n for n, e in load_capabilities(file).items() if e.port is not None}
    if port is not None and port in taken:
        raise CliError(
            f"{taken[port]} publishes port {port} already", "give another --port", code=2
        )

    def entry(spec: str) -> ServerEntry:
        try:
            return entry_of(spec, command, args, egress, data, memory, debian, port, description)
        except ValidationError as error:
            said = first_mistake(ServerEntry, error)
            raise CliError(said, "fix the option it names", code=2) from None

    # The options, checked before anything is downloaded (a version stands in until the lock
    # says which one a bare name resolves to).
    entry(spec if PACKAGE.match(spec) else f"{_bare(spec)}==0")
    locked = lock_path(registry, name)
    try:
        lock(spec, locked, find_links=find_links)
    except NoEnvironment as error:
        locked.unlink(missing_ok=True)
        raise CliError(str(error), "check the package's name and version on PyPI") from None
    if not PACKAGE.match(spec):
        spec = pinned(spec, locked)
    try:
        made = entry(spec)
    except CliError:
        locked.unlink(missing_ok=True)
        raise
    made._lock = locked
    try:
        tools = anyio.run(listing, made)
    except CliError:
        locked.unlink(missing_ok=True)
        raise
    write_entry(file, name, made)
    load_capabilities(file)  # what was written reads back, or the error names it
    return Added(name, spec, file, locked, tools)


def entry_of(  # noqa: PLR0917 (what an entry holds)
    spec: str,
    command: list[str] | None,
    args: list[str] | None,
    egress: bool,
    data: bool,
    memory: str | None,
    debian: list[str] | None,
    port: int | None,
    description: str,
) -> ServerEntry:
    """The entry ``capability add`` writes; a ValidationError names what is wrong."""
    return ServerEntry(
        package=spec,
        command=command or None,
        args=args or [],
        egress=egress,
        data=data,
        memory=memory,
        debian=debian or [],
        port=port,
        description=description,
    )


def pinned(spec: str, locked: Path) -> str:
    """``spec`` (a name, maybe with extras) with the version its lock resolved."""
    bare = _bare(spec)
    wanted = _normal(bare)
    for line in locked.read_text(encoding="utf-8").splitlines():
        found = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s\\;]+)", line)
        if found and _normal(found.group(1)) == wanted:
            extras = re.match(r"\[[^\]]*\]", spec[len(bare) :])
            return f"{bare}{extras.group(0) if extras else ''}=={found.group(2)}"
    raise CliError(f"the lock of {spec} does not pin {bare}", "give a version: NAME==VERSION")


def _bare(spec: str) -> str:
    """The package's name in ``spec`` (no extras, no version)."""
    return re.split(r"[\[<>=!~ ;]", spec, maxsplit=1)[0]


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


async def listing(entry: ServerEntry) -> list[Classified]:
    """Start the server as the gateway does and classify its tools."""
    try:
        environment(entry.lock_file or Path())
    except NoEnvironment as error:
        raise CliError(str(error), "check the lock, or add the capability again") from None
    try:
        with anyio.fail_after(START_S):
            async with Client(upstream_of(entry)) as client:
                return classify(await client.list_tools())
    except Exception as error:
        reason = " ".join(str(error).split())[:200] or type(error).__name__
        raise CliError(
            f"{entry.package} did not start and list its tools ({reason})",
            "check its command (--command; its README says how it is started) and arguments",
        ) from None


def write_entry(file: Path, name: str, entry: ServerEntry) -> None:
    text = file.read_text(encoding="utf-8") if file.is_file() else HEADER
    text = re.sub(r"(?m)^servers:[ \t]*\{\}[ \t]*$", "servers:", text)
    if not re.search(r"(?m)^servers:[ \t]*$", text):
        text = text.rstrip("\n") + "\nservers:\n"
    lines = [f"  {name}:", f"    package: {_scalar(entry.package or '')}"]
    if entry.command:
        lines.append(f"    command: [{', '.join(_scalar(w) for w in entry.command)}]")
    if entry.args:
        lines.append(f"    args: [{', '.join(_scalar(w) for w in entry.args)}]")
    if entry.egress:
        lines.append("    egress: true")
    if entry.data:
        lines.append("    data: true")
    if entry.memory:
        lines.append(f"    memory: {entry.memory}")
    if entry.debian:
        lines.append(f"    debian: [{', '.join(entry.debian)}]")
    if entry.port is not None:
        lines.append(f"    port: {entry.port}")
    if entry.description:
        lines.append(f"    description: {_scalar(entry.description)}")
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(text.rstrip("\n") + "\n" + "\n".join(lines) + "\n", encoding="utf-8")


def remove(registry: Path, name: str) -> Path:
    """Take ``name``'s entry out (its lines, comments elsewhere kept) and its lock."""
    file = capabilities_file(registry)
    if name not in load_capabilities(file):
        raise CliError(f"there is no capability {name}", "see clawmesh capability list", code=2)
    kept: list[str] = []
    inside = False
    for line in file.read_text(encoding="utf-8").splitlines():
        if re.fullmatch(rf"  {re.escape(name)}:\s*(#.*)?", line):
            inside = True
            continue
        if inside and (line.startswith("    ") or not line.strip()):
            continue
        inside = False
        kept.append(line)
    text = "\n".join(kept) + "\n"
    if not re.search(r"(?m)^  \S", text.split("\nservers:", 1)[-1]):
        text = re.sub(r"(?m)^servers:[ \t]*$", "servers: {}", text)
    file.write_text(text, encoding="utf-8")
    lock_path(registry, name).unlink(missing_ok=True)
    load_capabilities(file)
    return file


def _scalar(value: str) -> str:
    """A YAML scalar that reads back as ``value``."""
    plain = re.fullmatch(r"[A-Za-z0-9/._=+@-][A-Za-z0-9/._=+@ -]*", value)
    return value if plain and not value.endswith(" ") else _quoted(value)


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def rows(tools: list[Classified], policy: Any = None) -> list[dict[str, Any]]:
    """Each tool: its class, kind, why hidden, and (``policy(kind, destructive)``) the policy."""
    found = []
    for tool in tools:
        row: dict[str, Any] = {"tool": tool.tool.name, "class": tool.tool_class}
        if tool.tool_class == CHANGE:
            row["kind"] = tool.kind
            row["destructive"] = tool.destructive
            if policy is not None:
                row["policy"] = policy(tool.kind, tool.destructive)
        if tool.why:
            row["why"] = tool.why
        found.append(row)
    return found
