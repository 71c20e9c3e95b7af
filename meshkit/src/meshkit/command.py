"""How the ``clawmesh`` command fails: one form for every mistake.

    Error: <what went wrong> - <how to fix it>        (stderr, exit 1 or the code given)
    {"error": "<what went wrong>", "suggestion": "<how to fix it>"}   (with --json, stdout)

A command raises :class:`CliError`; :func:`guarded` turns it (and a ``ConfigError`` of the
configuration it reads) into that form. Never a traceback.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import TypeVar

from meshkit.yaml_config import ConfigError

T = TypeVar("T")


class CliError(Exception):
    """A mistake the operator can fix: what went wrong, and how to fix it."""

    def __init__(self, what: str, fix: str, *, code: int = 1) -> None:
        super().__init__(what)
        self.what = what
        self.fix = fix
        self.code = code


def report(error: CliError, *, as_json: bool) -> None:
    """Print ``error`` in the command's one form (JSON on stdout with ``--json``)."""
    if as_json:
        print(json.dumps({"error": error.what, "suggestion": error.fix}))
    else:
        print(f"Error: {error.what} - {error.fix}", file=sys.stderr)


def guarded(run: Callable[[], T], *, as_json: bool) -> T:
    """``run()``, its mistakes reported in the one form and the process ended with their code."""
    try:
        return run()
    except CliError as error:
        report(error, as_json=as_json)
        raise SystemExit(error.code) from None
    except ConfigError as error:
        report(CliError(str(error), "fix the file or variable it names", code=2), as_json=as_json)
        raise SystemExit(2) from None
