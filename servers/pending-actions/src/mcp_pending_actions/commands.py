"""``clawmesh audit``: the consent ledger for an operator, and its check (audit.py reads it).
In a container: ``docker compose exec pending-actions python -m mcp_pending_actions audit``.

    clawmesh audit                      every entry, oldest first, one line each
    clawmesh audit --since 2h           the last two hours (or 2026-11-01, 2026-11-01T09:30 UTC)
    clawmesh audit --agent clawdia --user 4242 --json
    clawmesh audit --verify [--expect 8:<hash>]
                                        the hash chain: exit 0 and its head when whole (and
                                        still holding the head kept elsewhere), exit 1 naming
                                        the first entry changed or removed

Reads the database read-only, beside a running server (WAL): no server needs to stop.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from contextlib import closing
from typing import Annotated

from cyclopts import App, Parameter

from mcp_pending_actions import audit as ledger_audit
from mcp_pending_actions import chain
from mcp_pending_actions.settings import PendingSettings
from meshkit.command import CliError, Json, guarded, run, settings_of

app = App(name="audit", help="The consent ledger, and the check of its hash chain.")


@app.default
def audit(
    *,
    since: Annotated[str | None, Parameter(help="2h, 7d, 2026-11-01 or 2026-11-01T09:30")] = None,
    agent: str | None = None,
    user: str | None = None,
    verify: Annotated[bool, Parameter(negative=(), help="check the hash chain")] = False,
    expect: Annotated[
        str | None, Parameter(help="with --verify: COUNT:HASH, a head kept elsewhere")
    ] = None,
    as_json: Json = False,
) -> None:
    """The ledger's entries, one line each (or JSON), or --verify its hash chain."""

    def run() -> None:
        if expect is not None and not verify:
            raise CliError("--expect goes with --verify", "add --verify", code=2)
        kept = _head(expect) if expect is not None else None
        moment = _since(since) if since is not None else None
        settings = settings_of(PendingSettings)
        path = settings.db_path
        if not path.is_file():
            raise CliError(
                f"{path}: no pending-actions database there",
                "set DATA_DIR to the server's (in compose: docker compose exec pending-actions "
                "python -m mcp_pending_actions audit)",
                code=2,
            )
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            if verify:
                try:
                    print(ledger_audit.verified(db, kept))
                except ledger_audit.BrokenChain as error:
                    raise CliError(
                        str(error), "restore the database from a backup and find who changed it"
                    ) from None
                return
            broken = ledger_audit.show(db, agent, user, moment, as_json=as_json)
        if broken and as_json:  # each is named on stderr; stdout is the entries' JSON
            raise SystemExit(1)
        if broken:
            raise CliError(
                f"ledger broken: {broken} entries not readable (above)",
                "clawmesh audit --verify names the first one changed",
            )

    guarded(run, as_json=as_json)


def _head(text: str) -> chain.Head:
    try:
        return chain.parse_head(text)
    except ValueError as error:
        raise CliError(
            f"--expect: {error}", "give COUNT:HASH as --verify printed it", code=2
        ) from None


def _since(text: str) -> float:
    try:
        return ledger_audit.parse_since(text, time.time())
    except ValueError as error:
        raise CliError(f"--since: {error}", "see clawmesh audit --help", code=2) from None


def main(argv: Sequence[str]) -> None:
    """``python -m mcp_pending_actions audit ...``, in the server's container."""
    run(app, argv[1:], prog="python -m mcp_pending_actions audit")
