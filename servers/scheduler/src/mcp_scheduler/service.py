"""Firing jobs and reminders once: due firings materialised, leased, acked.

    next_due ─► every job or reminder whose time has come becomes a firing row, keyed
                 ``<job or reminder id>@<scheduled time>`` (insert-or-ignore: once, ever)
             ─► due firings leased to the caller ─► handled ─► acked (``ack`` of its
                 next ``next_due``, or the ``ack`` tool)

The firings are a ``meshkit.queue`` (leases, carried acks, fencing, the long poll). A crash
before the ack leaves the firing due: the next run of the same consumer gets it again at
once (the earlier run is fenced), any other when the lease runs out.
The orchestrator sends with the key as the message's idempotency key, so a firing redone
after a crash between sending and acking is still one message.

Catch-up (the mesh was down when a firing came due):
- of a job's missed firings only the newest counts (one briefing, not one per missed day);
  missed by more than the job's ``catch_up`` it is skipped with a log line, else handed
  out late;
- a reminder is never skipped: it is handed out late, with the time it was due.
A firing is ``late`` when handed out more than ``LATE_AFTER_S`` after its time.

A paused agent (``set_paused``, the operator's ``clawmesh agent stop``): nothing of its
fires or is handed out; resumed, it is caught up as after a downtime (the newest missed
firing of a job within its ``catch_up``, every reminder, late), firings due before the
pause first.
"""

from __future__ import annotations

import json
import logging
import secrets
import sqlite3
from collections.abc import Callable, Sequence
from datetime import datetime
from zoneinfo import ZoneInfo

from mcp_scheduler import store as q
from mcp_scheduler.recurrence import MAX_STEPS, next_after
from mcp_scheduler.reminders import repeat_rule, views
from mcp_scheduler.schedule import WEEKDAYS, Job
from mcp_scheduler.store import FIRINGS, FiringRow, JobRow, SchedulerStore
from meshkit.queue import Holder, LeasedQueue
from meshkit.wire.pause import Paused
from meshkit.wire.scheduler import Due, Firing, Jobs, JobView

logger = logging.getLogger(__name__)

LATE_AFTER_S = 60.0
# While something of a paused agent is due, a waiting next_due looks again this often: a
# resume by another process on the same database wakes no event here.
PAUSED_RECHECK_S = 1.0


class Scheduler:
    def __init__(
        self,
        store: SchedulerStore,
        jobs: list[Job],
        *,
        clock: Callable[[], float],
        lease_s: float,
    ) -> None:
        self._store = store
        self._jobs = {job.id: job for job in jobs}
        self._clock = clock
        self._firings = LeasedQueue(store, FIRINGS, lease_s=lease_s, clock=clock)

    async def check(self) -> None:
        await self._store.ping()

    def changed(self) -> None:
        """A reminder set or snoozed, an agent resumed: a waiting ``next_due`` looks again."""
        self._firings.woken()

    def stop_waiting(self) -> None:
        """The server is stopping: waiting ``next_due`` calls answer now."""
        self._firings.stop_waiting()

    async def sync(self) -> None:
        """Bring the stored jobs in line with the configured ones (at start). A job whose
        definition is unchanged keeps its next firing, even one in the past: it is caught
        up by the next ``next_due``."""
        now = self._clock()

        def work(db: sqlite3.Connection) -> None:
            stored = {row.id: row for row in q.jobs(db)}
            for job in self._jobs.values():
                fingerprint = _fingerprint(job)
                old = stored.get(job.id)
                if old is not None and old.fingerprint == fingerprint:
                    continue
                next_at = next_after(job.rule, now, job.tz)
                q.put_job(db, JobRow(job.id, job.agent, job.kind, fingerprint, next_at))
                logger.info("job %s: next firing %s", job.id, _iso(next_at, job.tz))
            for gone in q.delete_jobs_except(db, set(self._jobs)):
                logger.info("job %s: no longer in the schedule file, removed", gone)

        await self._store.transact(work)

    async def next_due(
        self, consumer: str, run: str, limit: int, wait_s: float, *, ack: Sequence[str] = ()
    ) -> Due:
        """The firings due now, leased to ``consumer``'s ``run``; when there are none, waits
        up to ``wait_s`` (until the next firing's time, or a reminder is set). The firings
        of ``ack`` are marked done first, in the transaction of the first lease: a consumer
        acks what it handled with its next poll, as a Kafka consumer commits on poll."""
        batch = await self._firings.next(
            Holder(consumer, run),
            limit,
            wait_s,
            lambda db, row, now: q.firing_of(row),
            ack=ack,
            before=self._fire_due,
            wake_at=_wake_at,
        )
        return Due(
            firings=[_view(f) for f in batch.items],
            lease_s=self._firings.lease_s,
            acked=batch.acked,
        )

    async def ack(self, keys: list[str]) -> int:
        return await self._firings.ack(keys)

    async def set_paused(self, agent: str, pause: bool) -> Paused:
        """Pause the agent (nothing of its fires or is handed out; firings leased already
        are finished by their holder) or resume it (caught up at once)."""
        now = self._clock()

        def work(db: sqlite3.Connection) -> tuple[bool, int]:
            return q.set_paused(db, agent, pause, now), q.held(db, agent, now)

        changed, waiting = await self._store.transact(work)
        if changed:
            logger.info("agent %s %s", agent, "paused" if pause else "resumed")
        if changed and not pause:
            self.changed()  # a waiting next_due hands its firings out now
        return Paused(agent=agent, paused=pause, changed=changed, waiting=waiting)

    async def jobs_of(self, agent: str) -> Jobs:
        rows, paused = await self._store.read(lambda db: (q.jobs(db, agent), q.paused(db)))
        reminders = await self._store.read(lambda db: q.reminders(db, agent, ("active", "waiting")))
        listed = []
        for row in rows:
            job = self._jobs.get(row.id)
            if job is None:
                continue
            listed.append(
                JobView(
                    id=row.id, kind=job.kind, when=_when(job), next_at=_iso(row.next_at, job.tz)
                )
            )
        return Jobs(jobs=listed, reminders=views(reminders), paused=agent in paused)

    # --- inside the transaction -----------------------------------------------------------

    def _fire_due(self, db: sqlite3.Connection, now: float) -> None:
        """Every job or reminder whose time has come becomes a firing (before the lease)."""
        paused = q.paused(db)
        for row in q.jobs(db):
            job = self._jobs.get(row.id)
            if job is not None and row.next_at <= now and row.agent not in paused:
                self._fire_job(db, job, row, now)
        for reminder in q.due_reminders(db, now):
            self._fire_reminder(db, reminder, now)

    def _fire_job(self, db: sqlite3.Connection, job: Job, row: JobRow, now: float) -> None:
        at, missed = row.next_at, 0
        for _ in range(MAX_STEPS):  # the newest firing not after now; older ones are missed
            following = next_after(job.rule, at, job.tz)
            if following > now:
                break
            at, missed = following, missed + 1
        following = next_after(job.rule, now, job.tz)
        q.put_job(db, JobRow(job.id, job.agent, job.kind, row.fingerprint, following))
        if missed:
            logger.info("job %s: %d earlier firing(s) missed while down, not sent", job.id, missed)
        key, late_s = f"{job.id}@{_iso(at, job.tz)}", now - at
        if late_s > job.catch_up_s:
            logger.info(
                "job %s: the firing of %s was missed by %s (more than catch_up %s): skipped",
                job.id,
                _iso(at, job.tz),
                _span(late_s),
                _span(job.catch_up_s),
            )
            state = "skipped"
        else:
            state = "due"
        q.add_firing(
            db,
            self._row(key, job.agent, job.kind, job.id, at, job.tz, state, now, job_payload(job)),
            now,
        )

    def _fire_reminder(self, db: sqlite3.Connection, reminder: q.ReminderRow, now: float) -> None:
        tz = ZoneInfo(reminder.timezone)
        key = f"{reminder.id}@{_iso(reminder.due_at, tz)}"
        payload: dict[str, object] = {
            "text": reminder.text,
            "reminder": reminder.id,
            "repeat": reminder.repeat,
        }
        row = self._row(
            key, reminder.agent, "reminder", reminder.id, reminder.due_at, tz, "due", now, payload
        )
        q.add_firing(db, row, now)
        rule = repeat_rule(reminder.repeat, reminder.anchor, tz)
        if rule is None:
            q.set_reminder(db, reminder.id, state="waiting")
        else:  # the next one after now: days missed while down are not sent one by one
            q.set_reminder(db, reminder.id, state="active", due_at=next_after(rule, now, tz))

    @staticmethod
    def _row(  # noqa: PLR0917
        key: str,
        agent: str,
        kind: str,
        source: str,
        at: float,
        tz: ZoneInfo,
        state: str,
        now: float,
        payload: dict[str, object],
    ) -> FiringRow:
        late = now - at > LATE_AFTER_S
        fid = "fir_" + secrets.token_hex(6)
        return FiringRow(key, fid, agent, kind, source, at, tz.key, state, late, payload, None)


def _wake_at(db: sqlite3.Connection, now: float) -> float | None:
    """When a waiting ``next_due`` looks again: the next firing's time, or soon while
    something of a paused agent is held (a resume by another process wakes no event here)."""
    soonest = q.next_due_at(db)
    if q.held(db, None, now):
        return min(soonest or now + PAUSED_RECHECK_S, now + PAUSED_RECHECK_S)
    return soonest


def job_payload(job: Job) -> dict[str, object]:
    return dict(job.spec)


def _view(row: FiringRow) -> Firing:
    tz = ZoneInfo(row.timezone)
    return Firing(
        id=row.id,
        key=row.key,
        agent=row.agent,
        kind=row.kind,
        source=row.source,
        scheduled_at=_iso(row.scheduled_at, tz),
        late=row.late,
        timezone=row.timezone,
        payload=row.payload,
    )


def _fingerprint(job: Job) -> str:
    parts = [job.kind, repr(job.rule), job.tz.key, job.catch_up_s, job.spec]
    return json.dumps(parts, sort_keys=True, default=str)


def _when(job: Job) -> str:
    at = str(job.spec.get("when", ""))
    if " " in at:
        return f"cron {at}"
    days = job.spec.get("days")
    if not isinstance(days, list) or len(days) == 7:
        return f"{at} daily"
    return f"{at} {' '.join(WEEKDAYS[d] for d in days)}"


def _iso(at: float, tz: ZoneInfo) -> str:
    return datetime.fromtimestamp(at, tz).isoformat(timespec="minutes")


def _span(seconds: float) -> str:
    minutes = int(seconds // 60)
    return f"{minutes // 60}h{minutes % 60:02d}m"
