"""What ``clawmesh doctor`` says: one finding per check, ok / warn / fail, with its fix.

A finding is data (the checks build them, the command prints them as lines or JSON); a
``fail`` is what breaks a deployment, a ``warn`` what may, and each of both says in one line
what to do about it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Literal

Status = Literal["ok", "warn", "fail"]
STATUSES: tuple[Status, ...] = ("ok", "warn", "fail")


@dataclass(frozen=True)
class Finding:
    """One check's outcome: what was checked, what was found and (unless ok) the fix."""

    check: str
    status: Status
    detail: str
    fix: str = ""

    def as_json(self) -> dict[str, str]:
        return asdict(self)


def ok(check: str, detail: str) -> Finding:
    return Finding(check, "ok", detail)


def warn(check: str, detail: str, fix: str) -> Finding:
    return Finding(check, "warn", detail, fix)


def fail(check: str, detail: str, fix: str) -> Finding:
    return Finding(check, "fail", detail, fix)


def counts(findings: Iterable[Finding]) -> dict[str, int]:
    """How many findings of each status, every status named (0 included)."""
    counted = Counter(finding.status for finding in findings)
    return {status: counted[status] for status in STATUSES}
