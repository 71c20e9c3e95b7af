"""Disks that refuse writes, for real-process tests: real refusals from the kernel.

A directory the process cannot write: for a normal user, mode 0555 (EACCES); root ignores
modes, so for root a read-only tmpfs mounted in a mount namespace of the child's own
(``unshare --mount``, EROFS), which is what a container with a read-only root filesystem
and no volume on DATA_DIR gives. A small full disk: a size-capped tmpfs in such a namespace
(``unshare --map-root-user --mount`` works unprivileged where user namespaces are allowed),
with a ballast file the test removes (through ``/proc/<pid>/root``) to free space.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

# sh -c SCRIPT sh DIR OPTIONS BALLAST_KB COMMAND...: mount, fill with ballast, exec COMMAND.
_MOUNT = (
    'dir=$1 options=$2 ballast=$3; shift 3; mount -t tmpfs -o "$options" tmpfs "$dir" || exit 97; '
    'if [ "$ballast" -gt 0 ]; then head -c "${ballast}k" /dev/zero > "$dir/ballast"; fi; '
    'exec "$@"'
)


def _namespaced(directory: Path, options: str, ballast_kb: int, command: list[str]) -> list[str]:
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("needs unshare (util-linux) to mount a tmpfs for the child process")
    flags = ["--mount"] if os.geteuid() == 0 else ["--map-root-user", "--mount"]
    probe = subprocess.run(
        [unshare, *flags, "sh", "-c", _MOUNT, "sh", str(directory), options, "0", "true"],
        capture_output=True,
        check=False,
    )
    if probe.returncode != 0:
        pytest.skip(
            "cannot mount a tmpfs in a private mount namespace here (user namespaces "
            f"disabled?): {probe.stderr.decode(errors='replace').strip()[:200]}"
        )
    return [unshare, *flags, "sh", "-c", _MOUNT, "sh", str(directory), options, str(ballast_kb)]


def unwritable(directory: Path, command: list[str]) -> list[str]:
    """``command`` run so that ``directory`` (existing, empty) refuses every write."""
    directory.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        directory.chmod(0o555)
        return command
    return [*_namespaced(directory, "ro,size=64k", 0, []), *command]


def small_disk(directory: Path, size_kb: int, ballast_kb: int, command: list[str]) -> list[str]:
    """``command`` run with ``directory`` a tmpfs of ``size_kb`` holding a ``ballast``
    file of ``ballast_kb`` (remove it with :func:`free` to make room)."""
    directory.mkdir(parents=True, exist_ok=True)
    return [*_namespaced(directory, f"size={size_kb}k", ballast_kb, []), *command]


def free(pid: int, directory: Path) -> None:
    """Remove the ballast from the disk of :func:`small_disk`, as the child sees it."""
    (Path(f"/proc/{pid}/root") / directory.relative_to("/") / "ballast").unlink()
