"""The build a bench compares against, as a source tree: a checkout, or a git revision.

``--ref`` names either a directory holding a checkout of clawmesh or a git revision of this
repository (``main``, a tag, a commit): a revision is exported (``git archive``) into a
temporary directory for the run and removed after it. The default, ``BEFORE_LEAN``, is
main as it stood when issue 23 ("A lean turn") was taken up, the build its goals are
measured against.
"""

from __future__ import annotations

import io
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BEFORE_LEAN = "9933693"


@contextmanager
def reference_tree(ref: str) -> Iterator[Path]:
    """The source tree of ``ref`` (a directory as it is; a revision exported for the run)."""
    given = Path(ref)
    if given.is_dir():
        yield given.resolve()
        return
    done = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", ref],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        message = done.stderr.decode(errors="replace").strip().splitlines()
        raise SystemExit(
            f"--ref {ref}: neither a directory nor a revision of this repository"
            f" ({message[-1] if message else 'git archive failed'})"
        )
    with tempfile.TemporaryDirectory(prefix="clawmesh-ref-") as tmp:
        with tarfile.open(fileobj=io.BytesIO(done.stdout)) as archive:
            archive.extractall(tmp, filter="data")
        yield Path(tmp)
