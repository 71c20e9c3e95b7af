"""The machine's own checks: architecture, page size, memory cgroup, free disk and memory.

Each is a function of what it reads (a ``/sys`` and ``/proc`` tree under ``root``, a page
size, byte counts), so a Raspberry Pi's failures are checked anywhere: a fake tree under a
test's tmp_path stands for a Pi without the memory cgroup.
"""

from __future__ import annotations

from pathlib import Path

from orchestrator.cli.checks.findings import Finding, fail, ok, warn

MIB = 1024 * 1024
GIB = 1024 * MIB
# The images and the build: one set of the eight images is about 1.1 GB with their shared
# layers and a build leaves about 1.5 GB of cache (docker system df after make up).
DISK_NEEDED = 3 * GIB
# Below this the databases and the logs may fill the disk at run time.
DISK_MINIMUM = 1 * GIB
SIXTY_FOUR_BIT = {"x86_64", "amd64", "aarch64", "arm64"}
ENGINE_ARCHES = {"amd64", "arm64"}
CMDLINE_FIX = (
    "add 'cgroup_enable=memory cgroup_memory=1' to the one line of /boot/firmware/cmdline.txt "
    "(Raspberry Pi OS) and reboot"
)


def architecture(machine: str, engine_arch: str | None) -> Finding:
    """The kernel's machine (``platform.machine()``) and Docker's (``docker version``): the
    images exist for amd64 and arm64 only; a 32-bit Docker on a 64-bit Pi kernel is the
    32-bit Raspberry Pi OS."""
    check = "architecture"
    fix = "install the 64-bit Raspberry Pi OS (the images are built for amd64 and arm64)"
    if machine not in SIXTY_FOUR_BIT:
        return fail(check, f"{machine}: a 32-bit system", fix)
    if engine_arch is not None and engine_arch not in ENGINE_ARCHES:
        return fail(check, f"kernel {machine}, but Docker runs {engine_arch} (32-bit)", fix)
    engine = f", Docker {engine_arch}" if engine_arch else ""
    return ok(check, f"{machine}{engine}")


def page_size(size: int) -> Finding:
    """The kernel's page size (``os.sysconf("SC_PAGE_SIZE")``): the Pi 5's default kernel
    uses 16K pages, which programs built with jemalloc or tcmalloc for 4K pages crash on
    (clawmesh's images use neither: a warning for what runs beside it)."""
    check = "page size"
    if size == 4096:
        return ok(check, "4K")
    return warn(
        check,
        f"{size // 1024}K pages: programs built with jemalloc or tcmalloc for 4K pages crash",
        "on a Pi 5: add 'kernel=kernel8.img' to /boot/firmware/config.txt and reboot "
        "(the 4K-page kernel)",
    )


def memory_cgroup(root: Path, engine_enforces: bool | None) -> Finding:
    """Whether memory limits hold: the kernel's memory controller (cgroup v2's
    ``/sys/fs/cgroup/cgroup.controllers``, else v1's ``/proc/cgroups``) and whether Docker
    enforces them (``docker info``'s MemoryLimit). Raspberry Pi OS ships with it off: Docker
    then accepts every ``mem_limit`` and silently ignores it."""
    check = "memory cgroup"
    kernel = _kernel_memory_controller(root)
    if kernel is False:
        return fail(check, "off: memory limits are silently ignored", CMDLINE_FIX)
    if engine_enforces is False:
        return fail(
            check,
            "Docker enforces no memory limit (docker info: No memory limit support)",
            f"{CMDLINE_FIX}; then sudo systemctl restart docker",
        )
    if kernel is None and engine_enforces is None:
        return warn(
            check,
            "unknown: neither /sys/fs/cgroup/cgroup.controllers nor /proc/cgroups is readable",
            "run doctor on the host (not in a container), where Docker runs",
        )
    return ok(check, "on: memory limits are enforced")


def _kernel_memory_controller(root: Path) -> bool | None:
    controllers = read_text(root / "sys" / "fs" / "cgroup" / "cgroup.controllers")
    if controllers is not None:
        return "memory" in controllers.split()
    cgroups = read_text(root / "proc" / "cgroups")
    if cgroups is None:
        return None
    for line in cgroups.splitlines():
        fields = line.split()
        if len(fields) == 4 and fields[0] == "memory":
            return fields[3] == "1"
    return False


def free_disk(path: Path, free_bytes: int) -> Finding:
    """Free space where Docker keeps its images and volumes (``docker info``'s
    DockerRootDir, or the nearest directory above it that can be read)."""
    check = "free disk"
    detail = f"{_gib(free_bytes)} free on {path}"
    fix = (
        "free space: docker system prune (unused images and build cache), "
        "or move Docker's data-root to a larger disk"
    )
    if free_bytes < DISK_MINIMUM:
        return fail(check, f"{detail}: the databases and logs may fill it", fix)
    if free_bytes < DISK_NEEDED:
        return warn(check, f"{detail}; a build of the images needs {_gib(DISK_NEEDED)}", fix)
    return ok(check, detail)


def free_memory(meminfo: str | None, needed: int | None, in_use_by_stack: int = 0) -> Finding:
    """The machine's memory (``/proc/meminfo``) against the stack's memory limits
    (compose.yaml: ``needed``); what the running stack already uses counts as available
    to it."""
    check = "free memory"
    values = _meminfo(meminfo or "")
    total, available = values.get("MemTotal"), values.get("MemAvailable")
    if total is None or available is None:
        return warn(check, "unknown: /proc/meminfo is not readable", "run doctor on the host")
    usable = available + in_use_by_stack
    detail = f"{usable // MIB} MiB available of {total // MIB} MiB"
    if needed is None:
        return ok(check, f"{detail} (compose.yaml not found: the stack's need unknown)")
    need = f"the stack's memory limits add to {needed // MIB} MiB"
    if total < needed:
        return fail(
            check,
            f"{detail}; {need}",
            "a machine with more memory (a Pi 5 with 2 GB or more), or lower mem_limit "
            "in compose.yaml",
        )
    if usable < needed:
        return warn(
            check,
            f"{detail}; {need}",
            "stop other programs (top shows them), or lower mem_limit in compose.yaml",
        )
    return ok(check, f"{detail}; {need}")


def _meminfo(text: str) -> dict[str, int]:
    values: dict[str, int] = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        fields = rest.split()
        if fields and fields[0].isdigit():
            values[name] = int(fields[0]) * (1024 if fields[1:] == ["kB"] else 1)
    return values


def _gib(size: int) -> str:
    return f"{size / GIB:.1f} GiB"


def read_text(path: Path) -> str | None:
    """The file's text; None when it cannot be read (absent here, not permitted)."""
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return None
