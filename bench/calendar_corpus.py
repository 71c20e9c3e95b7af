"""The calendar corpus's figures (issue 27, point 8): every test calendar of the icalendar and
recurring-ical-events sdists imported, read, exported, re-imported and compared with ical
(tests/calendar_server/corpus.py does the work; the test holds the expected differences).

uv run python -m bench.calendar_corpus [--fetch] [--list] [--table] [--slowest 5]

Prints files, events, imported, skipped by reason, tracebacks and disagreements by kind;
--list adds every skip, traceback and disagreement, one a line (file, event, kind, detail);
--table what the test's tables (test_calendar_corpus.py) miss, as rows to classify, and the
rows that no longer differ (after a fix: to remove).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from calendar_server import corpus


async def run(show: bool, slowest: int, table: bool = False) -> None:
    began = time.perf_counter()
    files = corpus.calendars()
    missing = corpus.missing_sdists()
    if missing:
        print(f"not fetched (the wheels' calendars instead): {', '.join(missing)}")
    outcomes = []
    with tempfile.TemporaryDirectory(dir=corpus.scratch_parent()) as scratch:
        for number, corpus_file in enumerate(files):
            outcomes.append(await corpus.check(corpus_file, Path(scratch) / str(number)))
    for line in corpus.figures(outcomes):
        print(line)
    print(f"seconds: {time.perf_counter() - began:.1f}")
    phases: dict[str, float] = {}
    for outcome in outcomes:
        for step, seconds in outcome.phases.items():
            phases[step] = phases.get(step, 0.0) + seconds
    shown = sorted(phases.items(), key=lambda item: -item[1])
    print("CPU seconds by step: " + ", ".join(f"{k} {v:.1f}" for k, v in shown))
    for outcome in sorted(outcomes, key=lambda o: -o.seconds)[:slowest]:
        print(f"  {outcome.seconds:6.2f} s  {outcome.file}")
    if table:
        _table(outcomes)
    if show:
        for outcome in outcomes:
            for where, reason in outcome.skipped:
                print(f"skipped\t{outcome.file}\t{where}\t{reason}")
            for line in outcome.tracebacks:
                print(f"traceback\t{outcome.file}\t{line}")
            if outcome.reference_failed:
                print(f"no reference\t{outcome.file}\t{outcome.reference_failed}")
            for d in outcome.disagreements:
                print(f"disagreement\t{d.file}\t{d.event}\t{d.kind}\t{d.detail}")


def _table(outcomes: list[corpus.Outcome]) -> None:
    from calendar_server import test_calendar_corpus as tables  # noqa: PLC0415 (--table only)

    rows = tables.EXPECTED + tables.ON_BASE
    found = [d for o in outcomes for d in o.disagreements]
    for d in found:
        if not any(row.matches(d) for row in rows):
            print(f"new row\t{d.file} | {d.event} | {d.kind} | ?  ({d.detail[:120]})")
    for row in rows:
        if not any(row.matches(d) for d in found):
            print(f"gone row\t{row.file} | {row.event} | {row.kind} ({row.reason[:60]})")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.calendar_corpus")
    parser.add_argument("--fetch", action="store_true", help="fetch the sdists first")
    parser.add_argument("--list", action="store_true", help="every skip and disagreement")
    parser.add_argument("--table", action="store_true", help="rows the test's tables miss")
    parser.add_argument("--slowest", type=int, default=5, help="the slowest files shown")
    args = parser.parse_args()
    if args.fetch:
        for line in corpus.fetch():
            print(line)
    anyio.run(run, args.list, args.slowest, args.table)


if __name__ == "__main__":
    main()
