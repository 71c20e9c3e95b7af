"""The calendar corpus (issue 27, point 8): every test calendar of the icalendar and
recurring-ical-events source distributions, through the local calendar, checked against an
independent iCalendar implementation (the ``ical`` package, test-only).

Where the files come from: the sdists uv.lock pins, fetched by its URL and sha256 into
``$XDG_CACHE_HOME/clawmesh/calendar-corpus`` (``make calendar-corpus``, which ``make pytest``
runs; ``python -m calendar_server.corpus`` with ``tests`` on the path). The sdists hold two
calendars the wheels leave out (icalendar's ``docs/tutorials/example.ics``,
recurring-ical-events' ``benchmark/issue42.ics``, 4778 events); their ``.ics`` members are read
from the archives, whose hash is checked on every read. Without the archives (offline) the
installed wheels' calendars are used and ``sdists()`` says which archive is missing.

For each file (``check``): import (``ics_files.import_file`` into a fresh ``DATA_DIR``), reads
(``LocalBackend.occurrences``) over several windows (the year of the first and of the last
start, the DST changes of Europe/Berlin and America/New_York that follow the first start, and
2026), export and re-import (the same occurrences again), and the occurrences ical finds in
the same windows, and the zone each timed occurrence names (its DTSTART's TZID, or the IANA
zone of a Windows name). What differs is a ``Disagreement`` (file, event, kind, detail): the test
holds the table of those expected, each with its RFC 5545 reason. Events the file gives no
UID are matched by title and start (the import derives a stable UID, ical a random one).

The import API is changing (issue 27 point 1: ``Imported.skipped``/``warnings``, a file refused
whole only when it is no iCalendar at all): ``_import`` reads either, the current
``ImportProblems`` (every event refused with the file) as skipped events.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import sys
import tarfile
import time
import tomllib
import traceback
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta, tzinfo
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import icalendar
import recurring_ical_events  # type: ignore[import-untyped]
from ical.calendar_stream import CalendarStream
from ical.compat import enable_compat_mode
from icalendar.timezone.windows_to_olson import WINDOWS_TO_OLSON

from mcp_calendar import ics_files, ics_reader
from mcp_calendar.backend import Occurrence
from mcp_calendar.errors import InvalidRequest
from mcp_calendar.local import LocalBackend
from mcp_calendar.settings import CalendarSettings
from mcp_calendar.store import CalendarStore

ROOT = Path(__file__).resolve().parents[2]
LIBRARIES = ("icalendar", "recurring-ical-events")
TIMEZONE = "Europe/Berlin"  # CALENDAR_TIMEZONE: floating times are read there
DST_ZONES = ("Europe/Berlin", "America/New_York")
NOW_YEAR = 2026
CALENDAR = "corpus"


@dataclass(frozen=True)
class Sdist:
    name: str
    url: str
    sha256: str

    @property
    def file(self) -> str:
        return self.url.rsplit("/", 1)[1]


@dataclass(frozen=True)
class CorpusFile:
    name: str  # icalendar/tests/calendars/x.ics, recurring-ical-events/benchmark/issue42.ics
    text: bytes


@dataclass(frozen=True)
class Disagreement:
    file: str
    event: str  # a UID, "event N" or "*" (the whole file)
    kind: str
    detail: str

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.file, self.event, self.kind)


@dataclass
class Outcome:
    file: str
    events: int = 0  # VEVENTs in the file
    uids: int = 0  # distinct UIDs among them: the events the calendar would hold
    imported: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (where, reason)
    warnings: list[str] = field(default_factory=list)
    tracebacks: list[str] = field(default_factory=list)
    reference_failed: str | None = None  # ical refused the file whole
    unreferenced: set[str] = field(default_factory=set)  # UIDs ical cannot read alone either
    file_uids: set[str] = field(default_factory=set)  # the UIDs the file writes
    skipped_keys: set[str] = field(default_factory=set)  # skipped events as _compare names them
    disagreements: list[Disagreement] = field(default_factory=list)
    seconds: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)  # CPU seconds by step


# --- the files ---


def sdists(lock: Path = ROOT / "uv.lock") -> list[Sdist]:
    """The libraries' sdists as uv.lock pins them."""
    packages = tomllib.loads(lock.read_text())["package"]
    found = []
    for package in packages:
        if package["name"] in LIBRARIES:
            sdist = package["sdist"]
            algorithm, digest = sdist["hash"].split(":", 1)
            assert algorithm == "sha256"
            found.append(Sdist(package["name"], sdist["url"], digest))
    assert len(found) == len(LIBRARIES), f"uv.lock pins {found}"
    return found


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "clawmesh" / "calendar-corpus"


def fetch(directory: Path | None = None) -> list[str]:
    """Download the sdists missing from the cache, each checked against uv.lock's sha256;
    one line per archive. A hash that differs is an error (ValueError), a download that
    fails is said and left to the fallback (the wheels' calendars)."""
    directory = directory or cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    lines = []
    for sdist in sdists():
        target = directory / sdist.file
        if target.exists() and _digest(target.read_bytes()) == sdist.sha256:
            lines.append(f"{sdist.file}: cached")
            continue
        try:
            with urllib.request.urlopen(sdist.url, timeout=60) as response:
                data = response.read()
        except OSError as error:
            lines.append(f"{sdist.file}: cannot fetch ({error}); the tests use the wheels' files")
            continue
        if _digest(data) != sdist.sha256:
            raise ValueError(f"{sdist.file}: sha256 differs from uv.lock's: not kept")
        partial = target.with_suffix(".partial")
        partial.write_bytes(data)
        partial.replace(target)
        lines.append(f"{sdist.file}: fetched, sha256 matches uv.lock")
    return lines


def missing_sdists(directory: Path | None = None) -> list[str]:
    directory = directory or cache_dir()
    return [s.file for s in sdists() if not (directory / s.file).exists()]


def calendars(directory: Path | None = None) -> list[CorpusFile]:
    """Every .ics of the sdists (or, for an sdist not fetched, of its installed wheel)."""
    directory = directory or cache_dir()
    found: list[CorpusFile] = []
    for sdist in sdists():
        archive = directory / sdist.file
        if archive.exists():
            found.extend(_from_archive(archive, sdist))
        else:
            found.extend(_from_wheel(sdist.name))
    return sorted(found, key=lambda f: f.name)


def _from_archive(archive: Path, sdist: Sdist) -> Iterator[CorpusFile]:
    data = archive.read_bytes()
    if _digest(data) != sdist.sha256:
        raise ValueError(f"{archive}: sha256 differs from uv.lock's; delete it and fetch again")
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for member in tar.getmembers():
            if member.isfile() and member.name.endswith(".ics"):
                extracted = tar.extractfile(member)
                assert extracted is not None
                yield CorpusFile(_name(sdist.name, member.name), extracted.read())


def _from_wheel(name: str) -> Iterator[CorpusFile]:
    package = Path(icalendar.__file__ if name == "icalendar" else recurring_ical_events.__file__)
    site = package.parent.parent
    for path in sorted(package.parent.rglob("*.ics")):
        yield CorpusFile(str(path.relative_to(site)), path.read_bytes())


def _name(sdist: str, member: str) -> str:
    """A file as the wheel names it ("icalendar/tests/calendars/x.ics"), or, outside the
    package, with the sdist's name ("recurring-ical-events/benchmark/issue42.ics")."""
    inside = member.split("/", 1)[1].removeprefix("src/")
    package = sdist.replace("-", "_")
    return inside if inside.startswith(f"{package}/") else f"{sdist}/{inside}"


def scratch_parent() -> str | None:
    """Where the corpus's databases go: a tmpfs when there is one (each file opens five
    SQLite databases; on a disk their creation costs ~60 ms each in fsyncs, in memory ~8)."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- one file ---


async def check(corpus_file: CorpusFile, data_dir: Path) -> Outcome:
    """Import, read, export, re-import and compare one file (see the module docstring)."""
    began = time.perf_counter()
    outcome = Outcome(corpus_file.name)
    starts = _survey(corpus_file.text, outcome)
    windows = _windows(starts)
    first = _settings(data_dir / "import")
    imported = await _step(outcome, "import", _import(first, corpus_file.text, outcome))
    for where, reason in outcome.skipped:
        kind = "refused" if where == "*" else "skipped"
        outcome.disagreements.append(Disagreement(outcome.file, where, kind, reason))
    if imported is not None:
        ours = await _step(outcome, "read", _reads(first, windows))
        exported = await _step(outcome, "export", ics_files.export_calendar(first, CALENDAR))
        if ours is not None and exported is not None:
            again = _settings(data_dir / "reimport")
            back = Outcome(corpus_file.name)
            if await _step(outcome, "re-import", _import(again, exported, back)) is not None:
                for where, reason in back.skipped:
                    outcome.disagreements.append(
                        Disagreement(outcome.file, where, "round trip", f"skipped: {reason}")
                    )
                reread = await _step(outcome, "re-read", _reads(again, windows))
                if reread is not None:
                    _compare_round_trip(outcome, ours, reread)
        if ours is not None:
            _compare_zones(outcome, ours, _zones(corpus_file.text))
        if ours is not None and ("*", "file refused whole") not in outcome.skipped:
            began_reference = time.process_time()
            reference = _reference(corpus_file.text, windows, outcome)
            _spent(outcome, "ical", began_reference)
            if reference is not None:
                _compare(outcome, ours, reference)
    outcome.seconds = time.perf_counter() - began
    return outcome


async def _step(outcome: Outcome, what: str, work: Any) -> Any:
    began = time.process_time()
    try:
        return await work
    except InvalidRequest as error:  # a read the calendar declines, said in one line
        outcome.disagreements.append(Disagreement(outcome.file, "*", f"{what} refused", str(error)))
    except Exception as error:
        where = traceback.extract_tb(error.__traceback__)[-1]
        outcome.tracebacks.append(
            f"{what}: {type(error).__name__}: {error} ({Path(where.filename).name}:{where.lineno})"
        )
        outcome.disagreements.append(
            Disagreement(outcome.file, "*", "traceback", f"{what}: {type(error).__name__}")
        )
    finally:
        _spent(outcome, what, began)
    return None


def _spent(outcome: Outcome, what: str, began: float) -> None:
    outcome.phases[what] = outcome.phases.get(what, 0.0) + time.process_time() - began


def _settings(data_dir: Path) -> CalendarSettings:
    return CalendarSettings(
        backend="local", timezone=TIMEZONE, default_calendar=CALENDAR, data_dir=data_dir
    )


_VEVENT = re.compile(rb"^BEGIN:VEVENT\r?$", re.M | re.I)
_UID = re.compile(rb"^BEGIN:VEVENT\r?$(.*?)^END:VEVENT", re.M | re.I | re.S)
_FOLD = re.compile(rb"\r?\n[ \t]")
_START = re.compile(rb"^DTSTART[;:][^\r\n]*?(\d{8})", re.M | re.I)


def _survey(text: bytes, outcome: Outcome) -> list[datetime]:
    """The file's VEVENTs, UIDs and start days, from its text (parsing a large file costs
    seconds: the windows need days only)."""
    uids = set()
    for number, body in enumerate(_UID.findall(_FOLD.sub(b"", text))):
        found = re.search(rb"^UID:([^\r\n]*)", body, re.M | re.I)
        uids.add(found.group(1) if found else str(number).encode())
        if found:
            outcome.file_uids.add(found.group(1).decode(errors="replace").strip())
    outcome.events = len(_VEVENT.findall(text))
    outcome.uids = len(uids)
    zone = ZoneInfo(TIMEZONE)
    starts = []
    for day in _START.findall(text):
        try:
            found_day = datetime.strptime(day.decode(), "%Y%m%d").replace(tzinfo=zone)
        except ValueError:
            continue
        if 1900 <= found_day.year <= 2190:
            starts.append(found_day)
    return starts


def _windows(starts: list[datetime]) -> list[tuple[datetime, datetime]]:
    zone = ZoneInfo(TIMEZONE)
    now = datetime(NOW_YEAR, 1, 1, tzinfo=zone)
    windows = [(now, now.replace(year=NOW_YEAR + 1))]
    if starts:
        first, last = min(starts), max(starts)
        for moment in (first, last):
            day = datetime.combine(moment.astimezone(zone).date(), datetime.min.time(), zone)
            windows.append((day, day + timedelta(days=366)))
        for name in DST_ZONES:
            change = _next_change(first, ZoneInfo(name))
            if change is not None:
                day = datetime.combine(change.date(), datetime.min.time(), zone)
                windows.append((day - timedelta(days=3), day + timedelta(days=4)))
    return sorted(set(windows))


def _next_change(after: datetime, zone: tzinfo) -> datetime | None:
    """The first day (at noon UTC) after ``after`` whose UTC offset differs from the day
    before, within 20 years."""
    day = after.astimezone(UTC).replace(hour=12, minute=0, second=0, microsecond=0)
    offset = day.astimezone(zone).utcoffset()
    for _ in range(20 * 366):
        day += timedelta(days=1)
        current = day.astimezone(zone).utcoffset()
        if current != offset:
            return day
    return None


async def _import(settings: CalendarSettings, text: bytes, outcome: Outcome) -> bool:
    """``ics_files.import_file``, whichever API it has (see the module docstring)."""
    try:
        done = await ics_files.import_file(settings, text, CALENDAR, writable=True, at=time.time())
    except getattr(ics_reader, "ImportProblems", ()) as problems:
        for line in problems.lines:
            if re.fullmatch(r"and \d+ more", line):
                continue  # the rest are not named (MAX_PROBLEMS)
            where, reason = _problem_line(line)
            outcome.skipped.append((where, reason))
        outcome.skipped.append(("*", "file refused whole"))
        return True
    for skipped in getattr(done, "skipped", []):
        outcome.skipped.append((_where(skipped.where), skipped.reason))
        outcome.skipped_keys.add(_skipped_as(skipped.where))
    outcome.warnings.extend(getattr(done, "warnings", []))
    outcome.imported = done.changed + done.unchanged
    return True


_PROBLEM = re.compile(r"^(event \d+ \(“.*?”\)|UID .*?|a TZID|not an iCalendar file): (.*)$", re.S)


def _problem_line(line: str) -> tuple[str, str]:
    found = _PROBLEM.match(line)
    if found is None:
        return ("*", line)
    return (_where(found.group(1)), found.group(2))


def _where(where: str) -> str:
    """ "event 3 (“Title”)" as "event 3": the table names events by position or UID."""
    return re.sub(r" \(“.*?”\)$", "", where, flags=re.S)


async def _reads(
    settings: CalendarSettings, windows: list[tuple[datetime, datetime]]
) -> dict[tuple[datetime, datetime], list[Occurrence]]:
    store = CalendarStore(settings.db_path, max_bytes=settings.max_db_bytes)
    try:
        backend = LocalBackend(store)
        return {window: await backend.occurrences(*window) for window in windows}
    finally:
        await store.aclose()


# --- the independent implementation ---


@dataclass(frozen=True)
class Found:
    uid: str
    title: str
    start: str
    end: str


def _reference(
    text: bytes, windows: list[tuple[datetime, datetime]], outcome: Outcome
) -> dict[tuple[datetime, datetime], list[Found]] | None:
    """What ical finds in the windows: the file whole, or when ical refuses it (it is
    stricter than RFC 5545 needs, e.g. a VALARM without DESCRIPTION), event by event (the
    VEVENTs of one UID with every VTIMEZONE, alarms left out); the UIDs it cannot read go
    to ``outcome.unreferenced``."""
    content = _calendar_text(text)
    try:
        return _ical(content, windows)
    except Exception as error:
        outcome.reference_failed = f"{type(error).__name__}: {str(error).splitlines()[0][:120]}"
    found: dict[tuple[datetime, datetime], list[Found]] = {window: [] for window in windows}
    parts = _per_uid(content)
    for uid, part in parts.items():
        try:
            each = _ical(part, windows)
        except Exception:
            outcome.unreferenced.add(uid)
            continue
        for window in windows:
            found[window].extend(each[window])
    return found if len(outcome.unreferenced) < len(parts) else None


def _calendar_text(text: bytes) -> str:
    content = text.decode("utf-8-sig", errors="replace")
    if not re.search(r"^BEGIN:VCALENDAR", content, re.M | re.I):
        # A bare VEVENT (icalendar's tests/events/): the import reads it, ical reads no
        # VCALENDAR in it; wrapped, ical still checks its occurrences.
        content = f"{_HEAD}{content.rstrip()}\r\nEND:VCALENDAR\r\n"
    return content


_HEAD = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//corpus//EN\r\n"
_BLOCK = r"^BEGIN:{0}\r?$.*?^END:{0}\r?$"
_FLAGS = re.M | re.S | re.I


def _per_uid(content: str) -> dict[str, str]:
    zones = "\r\n".join(re.findall(_BLOCK.format("VTIMEZONE"), content, _FLAGS))
    events: dict[str, list[str]] = {}
    for number, block in enumerate(re.findall(_BLOCK.format("VEVENT"), content, _FLAGS)):
        uid = re.search(r"^UID:([^\r\n]*)", block, re.M | re.I)
        plain = re.sub(_BLOCK.format("VALARM") + r"\n?", "", block, flags=_FLAGS)
        events.setdefault(uid.group(1) if uid else f"{NO_UID} {number + 1}", []).append(plain)
    return {
        uid: f"{_HEAD}{zones}\r\n" + "\r\n".join(blocks) + "\r\nEND:VCALENDAR\r\n"
        for uid, blocks in events.items()
    }


def _ical(content: str, windows: list[tuple[datetime, datetime]]) -> dict[Any, list[Found]]:
    zone = ZoneInfo(TIMEZONE)
    with enable_compat_mode(content) as compatible:
        stream = CalendarStream.from_ics(compatible)
        timelines = [calendar.timeline_tz(zone) for calendar in stream.calendars]
        return {
            window: [
                Found(
                    str(event.uid or ""),
                    str(event.summary or ""),
                    _key(event.start, zone),
                    _key(event.end, zone),
                )
                for timeline in timelines
                for event in timeline.overlapping(*window)
            ]
            for window in windows
        }


def _key(moment: date | datetime, zone: tzinfo) -> str:
    if isinstance(moment, datetime):
        aware = moment if moment.tzinfo else moment.replace(tzinfo=zone)
        return aware.astimezone(UTC).isoformat()
    return moment.isoformat()


def _ours(occurrences: list[Occurrence]) -> list[Found]:
    zone = ZoneInfo(TIMEZONE)
    return [Found(o.uid, o.title, _key(o.start, zone), _key(o.end, zone)) for o in occurrences]


NO_UID = "no UID"
DERIVED = "@import.clawmesh"  # the import's UID for an event without one (ics_reader._derived_uid)


def _by_file(found: Found, file_uids: set[str], *, ours: bool) -> Found:
    """An event the file gives no UID, named by what the file says (its title; the start is
    in the key): the import derives a stable UID for it, ical a random one."""
    if found.uid in file_uids or (ours and not found.uid.endswith(DERIVED)):
        return found
    return replace(found, uid=f"{NO_UID} “{found.title}”")


def _compare(
    outcome: Outcome,
    ours: dict[tuple[datetime, datetime], list[Occurrence]],
    reference: dict[tuple[datetime, datetime], list[Found]],
) -> None:
    """Occurrences keyed by (title, start): one ical has alone is "missing", one we have
    alone "extra", the same with another end "end"; counted once per event and kind. An
    event without UID in the file is named "no UID “title”" on both sides (``_by_file``)."""
    if ("*", "file refused whole") in outcome.skipped:
        return  # the whole file was refused: its skips are the disagreement
    skipped = outcome.skipped_keys
    uids = outcome.file_uids
    uidless_unreferenced = any(u.startswith(NO_UID) for u in outcome.unreferenced)
    seen: dict[tuple[str, str], list[str]] = {}
    for window, found in reference.items():
        mine = Counter(_by_file(f, uids, ours=True) for f in _ours(ours[window]))
        theirs = Counter(_by_file(f, uids, ours=False) for f in found)
        by_start_mine = {(f.title, f.start): f for f in mine}
        by_start_theirs = {(f.title, f.start): f for f in theirs}
        for f in theirs - mine:
            if f.uid in skipped:
                continue
            other = by_start_mine.get((f.title, f.start))
            if other is not None and other.end != f.end:
                seen.setdefault((other.uid, "end"), []).append(f"{f.start}: {other.end}≠{f.end}")
            elif other is None:
                seen.setdefault((f.uid, "missing"), []).append(f.start)
            else:
                seen.setdefault((f.uid, "fewer"), []).append(f.start)
        for f in mine - theirs:
            if f.uid in outcome.unreferenced or (uidless_unreferenced and f.uid.startswith(NO_UID)):
                continue
            other = by_start_theirs.get((f.title, f.start))
            if other is None:
                seen.setdefault((f.uid, "extra"), []).append(f.start)
            elif other.end == f.end:
                seen.setdefault((f.uid, "more"), []).append(f.start)
    for (uid, kind), details in sorted(seen.items()):
        unique = sorted(set(details))
        shown = ", ".join(unique[:3]) + (f" and {len(unique) - 3} more" if len(unique) > 3 else "")
        outcome.disagreements.append(Disagreement(outcome.file, uid, kind, shown))


def _skipped_as(where: str) -> str:
    """A skipped event as the comparison names it: its UID, or for "event 3 (“Title”)"
    (no UID in the file) the title."""
    found = re.fullmatch(r"event \d+ \((“.*”)\)", where, re.S)
    return f"{NO_UID} {found.group(1)}" if found else where.removeprefix("UID ")


def _zones(text: bytes) -> dict[str, str]:
    """Each UID's DTSTART TZID, as the file writes it."""
    found: dict[str, str] = {}
    for block in re.findall(rb"^BEGIN:VEVENT.*?^END:VEVENT", text, re.M | re.S | re.I):
        uid = re.search(rb"^UID:([^\r\n]*)", block, re.M | re.I)
        tzid = re.search(rb"^DTSTART;[^:\r\n]*TZID=\"?([^\";:\r\n]*)", block, re.M | re.I)
        if uid and tzid:
            found.setdefault(uid.group(1).decode(errors="replace"), tzid.group(1).decode())
    return found


def _real_zones(tzid: str) -> set[str]:
    """The names an occurrence may give as its zone (issue 27 point 2): the TZID, the IANA
    zone of a Windows name, the Olson zone of a ``posix/`` name, or the IANA name inside a
    globally unique TZID (/mozilla.org/20070129_1/America/New_York)."""
    names = {tzid, WINDOWS_TO_OLSON.get(tzid, tzid), tzid.removeprefix("posix/")}
    parts = tzid.strip("/").split("/")
    names.update("/".join(parts[i:]) for i in range(len(parts)) if tzid.startswith("/"))
    return names


def _compare_zones(
    outcome: Outcome,
    ours: dict[tuple[datetime, datetime], list[Occurrence]],
    tzids: dict[str, str],
) -> None:
    """Each timed occurrence names its event's zone (one disagreement an event)."""
    wrong: dict[str, str] = {}
    for occurrences in ours.values():
        for o in occurrences:
            tzid = tzids.get(o.uid)
            if tzid and isinstance(o.start, datetime) and o.zone not in _real_zones(tzid):
                wrong.setdefault(o.uid, f"TZID={tzid}, zone={o.zone}")
    for uid, detail in sorted(wrong.items()):
        outcome.disagreements.append(Disagreement(outcome.file, uid, "zone", detail))


def _compare_round_trip(
    outcome: Outcome,
    before: dict[tuple[datetime, datetime], list[Occurrence]],
    after: dict[tuple[datetime, datetime], list[Occurrence]],
) -> None:
    """What a re-import of the export reads: every field of every occurrence as before
    (the version aside)."""
    differing: dict[str, list[str]] = {}
    for window, first in before.items():
        again = Counter(_comparable(o) for o in after[window])
        was = Counter(_comparable(o) for o in first)
        for o in (was - again) + (again - was):
            differing.setdefault(o[0], []).append(f"{o[3]}")
    for uid, details in sorted(differing.items()):
        outcome.disagreements.append(
            Disagreement(outcome.file, uid, "round trip", ", ".join(sorted(set(details))[:3]))
        )


def _comparable(o: Occurrence) -> tuple[Any, ...]:
    return (
        o.uid,
        o.calendar,
        o.title,
        o.start,
        o.end,
        o.recurrence_id,
        o.zone,
        o.rule,
        o.location,
        o.description,
        o.busy,
    )


# --- the tables of expected differences ---

PREFIXES = {"I/": "icalendar/tests/", "R/": "recurring_ical_events/test/calendars/"}


@dataclass(frozen=True)
class Row:
    file: str
    event: str  # ending in "…": a UID's beginning
    kind: str
    reason: str

    def matches(self, disagreement: Disagreement) -> bool:
        if (self.file, self.kind) != (disagreement.file, disagreement.kind):
            return False
        if self.event.endswith("…"):
            return disagreement.event.startswith(self.event[:-1])
        return self.event == disagreement.event


def table(text: str, reasons: dict[str, Any]) -> list[Row]:
    """Rows of ``file | event | kind | REASON`` (REASON a name in ``reasons``); a line
    starting with ``|`` continues the file on the line before."""
    rows, file = [], ""
    for raw in text.strip().splitlines():
        line = raw.strip()
        if not line.startswith("|"):
            file, _, line = line.partition(" ")
            for short, long in PREFIXES.items():
                if file.startswith(short):
                    file = long + file.removeprefix(short)
            if not line:
                continue
        _, event, kind, reason = (part.strip() for part in line.split("|"))
        rows.append(Row(file, event, kind, reasons[reason]))
    return rows


# --- the figures ---


def figures(outcomes: list[Outcome]) -> list[str]:
    """What bench/calendar_corpus.py prints: one line a figure."""
    skipped: Counter[str] = Counter()
    for outcome in outcomes:
        refused = ("*", "file refused whole") in outcome.skipped
        for where, reason in outcome.skipped:
            if where != "*":
                skipped[_reason_kind(reason)] += 1
        if refused:
            skipped["in a file refused whole"] += outcome.events
    kinds = Counter(d.kind for o in outcomes for d in o.disagreements)
    return [
        f"files: {len(outcomes)}",
        f"events (VEVENTs): {sum(o.events for o in outcomes)}"
        f" ({sum(o.uids for o in outcomes)} UIDs)",
        f"imported events: {sum(o.imported for o in outcomes)}",
        f"files refused whole: {sum(('*', 'file refused whole') in o.skipped for o in outcomes)}",
        f"skipped events: {sum(skipped.values())}",
        *(f"  {count:5}  {reason}" for reason, count in skipped.most_common()),
        f"files with a traceback: {sum(bool(o.tracebacks) for o in outcomes)}",
        f"files ical refuses whole (then read event by event): "
        f"{sum(o.reference_failed is not None for o in outcomes)}",
        f"events ical cannot read (no reference): {sum(len(o.unreferenced) for o in outcomes)}",
        f"disagreements: {sum(kinds.values())} (file, event, kind)",
        *(f"  {count:5}  {kind}" for kind, count in kinds.most_common()),
    ]


def _reason_kind(reason: str) -> str:
    """A skip reason without its details (values, positions)."""
    return re.sub(r"\s*\(.*$", "", reason, flags=re.S).split(": ")[0]


def main() -> int:
    try:
        lines = fetch()
    except ValueError as error:
        print(f"calendar corpus: {error}", file=sys.stderr)
        return 1
    for line in lines:
        if not line.endswith(": cached"):  # quiet on every make test but the first
            print(f"calendar corpus: {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
