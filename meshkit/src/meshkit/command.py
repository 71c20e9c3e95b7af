"""How an operator's command fails and ends: one form for every mistake of every
``clawmesh`` sub-command (the orchestrator's, and the servers' own commands, which
``clawmesh`` loads lazily and their containers run as ``python -m mcp_<name> <command>``).

    Error: <what went wrong> - <how to fix it>        (stderr, exit 1 or the code given)
    {"error": "<what went wrong>", "suggestion": "<how to fix it>"}   (with --json, stdout)

A command raises :class:`CliError`; :func:`guarded` turns it (and a ``ConfigError`` of the
configuration it reads) into that form; :func:`run` does the same for a command line that is
not understood, and ends quietly when the reader of stdout went away (``| head``). Never a
traceback. Only packages with commands import this module: they depend on cyclopts.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, TextIO, TypeVar

from cyclopts import App, CycloptsError, Parameter
from pydantic import ValidationError
from pydantic_settings import BaseSettings

from meshkit.settings import describe_error, load_dotenv
from meshkit.yaml_config import ConfigError

T = TypeVar("T")
S = TypeVar("S", bound=BaseSettings)
BAD_FILE_EXIT = 2  # a file read whole but refused: nothing of it was imported
BROKEN_PIPE_EXIT = 141  # what a shell reports for a command a closed pipe ended (128 + SIGPIPE)

Json = Annotated[bool, Parameter(name="--json", negative=(), help="JSON on stdout")]


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


def settings_of(kind: type[S]) -> S:
    """``kind`` read from ``.env`` and the environment; a CliError naming the first mistake."""
    load_dotenv()
    try:
        return kind()
    except ValidationError as error:
        first = describe_error(kind, error).splitlines()[0]
        raise CliError(
            first, "fix the variable it names (in .env or the environment)", code=2
        ) from None


def read_file(file: Path, parse: Callable[[TextIO], T], *, newline: str | None = None) -> T:
    """``parse`` of ``file`` read as UTF-8 text (a BOM skipped). A file that cannot be read or
    is not UTF-8 is a CliError; so is :class:`BadFile` raised by ``parse``, its message (a line per
    problem) printed first: nothing of the file was imported (exit 2)."""
    from meshkit.errors import BadFile  # noqa: PLC0415 (it loads fastmcp; other commands need not)

    try:
        with file.open(encoding="utf-8-sig", newline=newline) as lines:
            return parse(lines)
    except OSError as error:
        raise CliError(f"cannot read {file}: {error.strerror}", "check the path") from None
    except UnicodeDecodeError:
        raise CliError(f"{file} is not UTF-8 text", "save it as UTF-8") from None
    except BadFile as problems:
        print(problems, file=sys.stderr)
        raise CliError(
            f"nothing was imported from {file}", "fix the lines above", code=BAD_FILE_EXIT
        ) from None


def run(app: App, argv: Sequence[str] | None = None, *, prog: str = "clawmesh") -> None:
    """``app`` on ``argv`` (default: the process's arguments): a command line it does not
    understand in the one form (exit 2); a closed stdout ends it quietly."""
    tokens = list(argv) if argv is not None else sys.argv[1:]
    try:
        app(tokens, exit_on_error=False, print_error=False)
        sys.stdout.flush()
    except CycloptsError as error:
        what = " ".join(str(error).split()) or "the command line is not understood"
        fix = f"see {prog} --help, or {prog} <command> --help"
        report(CliError(what, fix, code=2), as_json="--json" in tokens)
        raise SystemExit(2) from None
    except BrokenPipeError:
        # The reader (head, less) has what it wanted: no traceback, and none at exit when
        # Python flushes stdout again (the standard library's own advice: signal docs).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise SystemExit(BROKEN_PIPE_EXIT) from None
