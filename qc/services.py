"""Writes of the report pipeline: debounced scheduling, lead requests, and storing a report.

A run loads one snapshot, computes outside any transaction, and stores the report under the
snapshot's fingerprint in one transaction, so a killed worker leaves the previous report intact.

The pending marker is tied to a live task: it holds the id the task was queued under, a run
refreshes a heartbeat while it works, and a marker whose task is in no queue and with no worker
is reclaimed (by the lead's "Recompute now" at once, by a live worker's heartbeat loop within
seconds, by beat as a last resort). A run that cannot be queued (broker down) never fails the
request that asked for it: the study is marked owed and caught up when the broker returns.

Test hook (documented, off unless set): CONCORD_QC_TEST_PAUSE_SECONDS=<s> in a worker's
environment makes `recompute` sleep that long after computing and before storing (stage
"storing"), so a test can SIGKILL the worker mid-task.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import F, Q, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotation.models import Study
from qc import loaders
from qc.models import QualityReport, RecomputeState, ReportOptions
from qc.raters import services as rater_services
from qc.reports import build_report

logger = logging.getLogger(__name__)

SUMMARY = QualityReport.SUMMARY
ITEMS = QualityReport.ITEMS
KEEP_REPORTS = {SUMMARY: 20, ITEMS: 2}


def debounce_seconds() -> float:
    return float(getattr(settings, "CONCORD_QC_DEBOUNCE_SECONDS", 5))


def stale_after() -> timedelta:
    """A pending marker older than this is taken to be lost (its task never ran) and reclaimed."""
    return timedelta(seconds=float(getattr(settings, "CONCORD_QC_PENDING_STALE_SECONDS", 600)))


def _state(study_id: int) -> RecomputeState:
    state, _ = RecomputeState.objects.get_or_create(study_id=study_id)
    return state


# Studies whose state row this process saw committed (the row goes only with its study).
_state_rows: set[int] = set()
# Study id -> monotonic time before which a run this process queued cannot have started.
_queued_until: dict[int, float] = {}


def heartbeat_stale_after() -> timedelta:
    """A run whose heartbeat is older than this has lost its worker."""
    return timedelta(seconds=float(getattr(settings, "CONCORD_QC_HEARTBEAT_STALE_SECONDS", 60)))


def _claim(study_id: int, user=None, force: bool = False) -> str | None:
    """Set the study's pending marker, under a new task id, unless one is already set (and
    fresh, or `force`); returns the task id, or None if a marker was already there."""
    _state(study_id)
    now = timezone.now()
    task_id = uuid.uuid4().hex
    fields = {"pending_since": now, "task_id": task_id}
    if user is not None:
        fields["requested_by"] = user
    qs = RecomputeState.objects.filter(study_id=study_id)
    if not force:
        qs = qs.filter(Q(pending_since__isnull=True) | Q(pending_since__lt=now - stale_after()))
    return task_id if qs.update(**fields) else None


def _claim_fast(study_id: int) -> str | None:
    """`_claim` for the per-label path: one raw UPDATE once the state row is known to exist."""
    if study_id not in _state_rows:
        claimed = _claim(study_id)
        if not connection.in_atomic_block:  # the row is committed, not in a rollback-able block
            _state_rows.add(study_id)
        return claimed
    now = timezone.now()
    task_id = uuid.uuid4().hex
    adapt = connection.ops.adapt_datetimefield_value
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {RecomputeState._meta.db_table} SET pending_since = %s, task_id = %s"
            " WHERE study_id = %s AND (pending_since IS NULL OR pending_since < %s)",
            [adapt(now), task_id, study_id, adapt(now - stale_after())],
        )
        return task_id if cursor.rowcount == 1 else None


def _send(study_id: int, task_id: str, countdown: float) -> bool:
    """Queue the run under its marker's task id; on a broker failure release the marker, mark the
    study owed (caught up when the broker returns) and answer False. Never raises for the broker:
    the label that asked for this run is already committed."""
    from qc.tasks import recompute_study

    try:
        recompute_study.apply_async(args=[study_id], countdown=countdown, task_id=task_id)
    except Exception:
        if recompute_study.app.conf.task_always_eager:
            raise  # an eager run's own error, not the broker's
        logger.warning("Recomputation of study %s could not be queued", study_id, exc_info=True)
        now = timezone.now()
        RecomputeState.objects.filter(study_id=study_id, task_id=task_id).update(
            pending_since=None, task_id="", owed_since=Coalesce(F("owed_since"), Value(now))
        )
        return False
    return True


def schedule_recompute(study_id: int, countdown: float | None = None) -> bool:
    """Queue one recomputation of the study unless one is already pending; returns True if queued.

    Called after commit of each label: a busy study gets one run per debounce window, not one per
    label. Without a broker the task runs right here, eagerly (it skips a snapshot it has done).

    In-process debounce: for the first half of the countdown of a run this process queued, that
    run cannot have started (a worker holds a task until its ETA, set here), so it will read every
    label committed meanwhile and nothing needs to be asked of the database.
    """
    from qc.tasks import recompute_study

    if time.monotonic() < _queued_until.get(study_id, 0.0):
        return False
    task_id = _claim_fast(study_id)
    if task_id is None:
        return False
    delay = debounce_seconds() if countdown is None else countdown
    started = time.monotonic()
    if not _send(study_id, task_id, delay):
        return False
    if delay > 0 and not recompute_study.app.conf.task_always_eager:
        _queued_until[study_id] = started + delay / 2
    return True


def check_every_seconds() -> float:
    return float(getattr(settings, "CONCORD_QC_CHECK_EVERY_SECONDS", 1.0))


# Coalescing of the per-label check (see `label_committed`): study id -> monotonic time before
# which this process does not ask the marker again, and the studies with labels committed
# since this process last asked.
_checked_until: dict[int, float] = {}
_unchecked: set[int] = set()
_coalesce_lock = threading.Lock()
_flusher_armed = [False]


def label_committed(study_id: int) -> None:
    """After a label of the study committed: make sure a report run will cover it.

    A run clears the study's marker before it reads its snapshot, so a check of the marker made
    any time *after* a label committed covers that label: it either finds the marker pending (the
    run that clears it has not started, so it will read the label) or sets it and queues a run.
    One check therefore covers every label this process committed before it, and a busy process
    asks at most once per CONCORD_QC_CHECK_EVERY_SECONDS instead of once per label: labels
    committed in between are remembered, checked by the next label after the window or, if none
    comes, by a timer thread. (A process killed in between loses that memory; the beat's safety
    net, `qc.tasks.recompute_all_live_studies`, then covers the labels.) Eager mode (no broker)
    checks every label, as before.
    """
    from qc.tasks import recompute_study

    every = check_every_seconds()
    if every <= 0 or recompute_study.app.conf.task_always_eager:
        schedule_recompute(study_id)
        return
    now = time.monotonic()
    with _coalesce_lock:
        if now < _queued_until.get(study_id, 0.0):
            return  # a run this process queued cannot have started: it will read this label
        if now < _checked_until.get(study_id, 0.0):
            _unchecked.add(study_id)
            _arm_flusher(2 * every)
            return
        _checked_until[study_id] = now + every
        _unchecked.discard(study_id)
    schedule_recompute(study_id)


def _arm_flusher(delay: float) -> None:
    # Called under _coalesce_lock. Twice the window: in a busy process the next label checks
    # first, and the timer (which needs a database connection of its own) finds nothing to do.
    if _flusher_armed[0]:
        return
    _flusher_armed[0] = True
    timer = threading.Timer(delay, _timer_flush)
    timer.daemon = True
    timer.start()


def _timer_flush() -> None:
    try:
        flush_unchecked(due_only=True)
    finally:
        connection.close()  # this thread's own connection (if it opened one)


def flush_unchecked(due_only: bool = False) -> int:
    """Check the marker of every study with labels committed since this process last asked
    (`due_only`: only those whose window has passed; the timer comes back for the others, so
    a busy process, whose labels check for themselves, opens no connection for it); returns
    how many runs were queued."""
    with _coalesce_lock:
        _flusher_armed[0] = False  # labels committed from now on arm a new timer
        now = time.monotonic()
        studies = sorted(s for s in _unchecked if not due_only or now >= _checked_until.get(s, 0.0))
        _unchecked.difference_update(studies)
        if _unchecked:
            _arm_flusher(2 * check_every_seconds())
        for study_id in studies:
            _checked_until[study_id] = now + check_every_seconds()
    queued = 0
    for study_id in studies:
        try:
            queued += schedule_recompute(study_id)
        except Exception:  # noqa: BLE001 - the beat's safety net covers what this missed
            logger.warning("Recompute check of study %s failed", study_id, exc_info=True)
    return queued


@dataclass(frozen=True)
class RecomputeRequest:
    """What a lead's "Recompute now" did: `started` (a run is queued or ran) and why, in words."""

    started: bool
    message: str


def request_recompute(study: Study, user) -> RecomputeRequest:
    """A lead's "recompute now": always starts a run (queued at once, or run here without a
    broker), or says why it cannot. A marker whose task is lost (in no queue, with no worker)
    and a run whose worker died are reclaimed here rather than waited for."""
    from qc import selectors

    state = _state(study.id)
    status = selectors.run_status(state)
    if status == "queued":
        try:
            where = find_task(state.task_id)
        except BrokerUnavailable:
            return RecomputeRequest(False, _BROKER_DOWN)
        if where is not None:
            return RecomputeRequest(
                True, f"A recomputation is already {where}; it will read every label so far."
            )
        status = "lost"  # its message is gone: queue a new one in its place
    if status == "stalled":
        RecomputeState.objects.filter(pk=state.pk, run_task_id=state.run_task_id).update(
            finished_at=timezone.now(), stage="stopped (worker lost)", progress=0
        )
    task_id = _claim(study.id, user=user, force=status == "lost")
    if task_id is None:  # a label queued one between our read and now
        return RecomputeRequest(True, "A recomputation is queued.")
    if not _send(study.id, task_id, 0):
        return RecomputeRequest(False, _BROKER_DOWN)
    if selectors.tasks_run_eagerly():
        return RecomputeRequest(True, "Recomputed.")
    if selectors.worker_status(None).missing:
        return RecomputeRequest(
            True,
            "Queued, but no Celery worker is running: it starts when one does "
            "(celery -A concord worker).",
        )
    if status == "running":
        return RecomputeRequest(True, "Queued to run after the recomputation in progress.")
    return RecomputeRequest(True, "A recomputation is queued.")


_BROKER_DOWN = (
    "The task queue (Redis) cannot be reached, so no recomputation can start now. Labels are "
    "safe; the report is brought up to date when the queue is back."
)


class BrokerUnavailable(RuntimeError):
    """The broker (or the worker control channel) could not be reached."""


def find_task(task_id: str) -> str | None:
    """Where a queued task is: "queued" (waiting in the broker's queue), "held by a worker"
    (a worker has it, waiting for its countdown or running), or None (lost). Raises
    BrokerUnavailable when the broker cannot be asked."""
    from concord.celery import app

    if not task_id:
        return None
    try:
        inspect = app.control.inspect(timeout=1.0)
        for method, key in (("active", None), ("reserved", None), ("scheduled", "request")):
            for tasks in (getattr(inspect, method)() or {}).values():
                for task in tasks:
                    if (task.get(key) if key else task).get("id") == task_id:
                        return "held by a worker"
        with app.connection_for_read() as conn:
            client = conn.default_channel.client
            for raw in client.lrange(app.conf.task_default_queue, 0, -1):
                if task_id.encode() in raw:
                    return "queued"
    except Exception as exc:
        raise BrokerUnavailable(str(exc)) from exc
    return None


def reclaim_lost_markers(older_than: timedelta | None = None) -> int:
    """Markers pending longer than `older_than` (a minute by default) whose task is in no queue
    and with no worker: re-queue each under a new id. Run by a live worker's heartbeat loop."""
    older_than = older_than if older_than is not None else timedelta(seconds=60)
    cutoff = timezone.now() - older_than - timedelta(seconds=debounce_seconds())
    requeued = 0
    for state in RecomputeState.objects.filter(pending_since__lt=cutoff):
        if find_task(state.task_id) is None:
            task_id = uuid.uuid4().hex
            if RecomputeState.objects.filter(pk=state.pk, task_id=state.task_id).update(
                task_id=task_id, pending_since=timezone.now()
            ):
                requeued += _send(state.study_id, task_id, 0)
    return requeued


def catch_up_owed() -> int:
    """Queue the runs that could not be queued while the broker was down; returns how many."""
    queued = 0
    for study_id in RecomputeState.objects.filter(owed_since__isnull=False).values_list(
        "study_id", flat=True
    ):
        queued += schedule_recompute(study_id, countdown=0)
    return queued


def set_unanimous_view(study: Study, on: bool) -> None:
    ReportOptions.objects.update_or_create(study=study, defaults={"unanimous_view": bool(on)})


def set_report_options(
    study: Study, *, unanimous_view: bool, clamp_gold: bool, ordinal_as_interval: bool = False
) -> None:
    """The lead's report settings; they enter the settings hash, so the page shows their report.

    `ordinal_as_interval` (ordinal studies only; ignored otherwise) scores the levels as numbers
    so the severity section applies: the lead's choice, said so on the page."""
    ordinal = study.task_kind == Study.TaskKind.ORDINAL
    ReportOptions.objects.update_or_create(
        study=study,
        defaults={
            "unanimous_view": bool(unanimous_view),
            "clamp_gold": bool(clamp_gold),
            "ordinal_as_interval": bool(ordinal_as_interval) and ordinal,
        },
    )


def set_report_cut(study: Study, *, pool: str = "", guide_version: int | None = None) -> None:
    """Cut the study's report to one annotator pool and/or one guide version ("" / None: all).

    Raises ValueError for a pool that does not exist or a version the study does not have."""
    from annotation.models import Enrolment

    if pool and pool not in Enrolment.Pool.values:
        raise ValueError(f"pool: {pool!r} is not a pool")
    if guide_version is not None and not study.guide_versions.filter(number=guide_version).exists():
        raise ValueError(f"guide_version: the study has no guide version {guide_version}")
    ReportOptions.objects.update_or_create(
        study=study, defaults={"pool": pool, "guide_version": guide_version}
    )


def _progress(study_id: int):
    def report(stage: str, pct: int) -> None:
        RecomputeState.objects.filter(study_id=study_id).update(
            stage=stage, progress=pct, heartbeat_at=timezone.now()
        )

    return report


def heartbeat_seconds() -> float:
    return float(getattr(settings, "CONCORD_QC_HEARTBEAT_SECONDS", 10))


class _heartbeat:
    """While a worker's run computes, refresh its heartbeat every few seconds from a thread (one
    stage can take longer than the stale limit). Eager runs (no task id) need none."""

    def __init__(self, study_id: int, task_id: str):
        self.study_id, self.task_id = study_id, task_id
        self.stop = threading.Event()
        self.thread = None

    def _loop(self):
        from django.db import connections

        try:
            while not self.stop.wait(heartbeat_seconds()):
                state = RecomputeState.objects.filter(
                    study_id=self.study_id, run_task_id=self.task_id
                )
                state.update(heartbeat_at=timezone.now())
        finally:
            connections.close_all()

    def __enter__(self):
        if self.task_id:
            self.thread = threading.Thread(target=self._loop, daemon=True)
            self.thread.start()
        return self

    def __exit__(self, *exc):
        if self.thread is not None:
            self.stop.set()
            self.thread.join(timeout=30)
        return False


def recompute(study_id: int, task_id: str = "") -> str:
    """Compute and store the study's report for its current snapshot; safe to run twice.

    Returns "stored", "exists" (this snapshot already has its report) or "missing" (no study).
    With a `task_id` (a worker's run), a heartbeat thread refreshes the state while it works.
    """
    study = Study.objects.filter(pk=study_id).first()
    if study is None:
        return "missing"
    now = timezone.now()
    _state(study_id)
    # Clear the marker first: labels arriving from now on schedule the next run.
    RecomputeState.objects.filter(study_id=study_id).update(
        pending_since=None,
        owed_since=None,
        started_at=now,
        heartbeat_at=now,
        stage="snapshot",
        progress=1,
        last_error="",
        run_task_id=task_id,
    )
    with _heartbeat(study_id, task_id):
        return _run(study, study_id)


def _run(study, study_id: int) -> str:
    config = loaders.report_config(study)
    count, newest = loaders.label_counts(study_id)
    print_ = loaders.fingerprint(count, newest, config.settings_hash)
    if QualityReport.objects.filter(study_id=study_id, kind=SUMMARY, fingerprint=print_).exists():
        rater_services.recompute_raters_safely(study, print_)
        _finish(study_id, "up to date")
        return "exists"
    try:
        started = time.perf_counter()
        snap = loaders.load_snapshot(study)
        print_ = loaders.fingerprint(snap.label_count, snap.newest_label_id, config.settings_hash)
        report = build_report(snap, config, progress=_progress(study_id))
        seconds = time.perf_counter() - started
        pause = float(os.environ.get("CONCORD_QC_TEST_PAUSE_SECONDS", "0") or 0)
        _progress(study_id)("storing", 95)
        if pause:
            time.sleep(pause)
        stored = store_report(
            study_id, snap, print_, report, seconds, settings_hash=config.settings_hash
        )
        _progress(study_id)("rater pages", 97)
        rater_services.recompute_raters_safely(
            study, print_, snap, config, report.summary, report.fits
        )
    except Exception as exc:
        RecomputeState.objects.filter(study_id=study_id).update(
            last_error=f"{type(exc).__name__}: {exc}", finished_at=timezone.now(), stage="failed"
        )
        raise
    _finish(study_id, "stored" if stored else "up to date")
    return "stored" if stored else "exists"


def _finish(study_id: int, stage: str) -> None:
    RecomputeState.objects.filter(study_id=study_id).update(
        finished_at=timezone.now(), stage=stage, progress=100
    )


def store_report(
    study_id: int, snap, fingerprint: str, report, seconds: float, settings_hash: str = ""
) -> bool:
    """Store both parts of a report in one transaction; False if this snapshot already had one."""
    common = {
        "settings_hash": settings_hash,
        "label_count": snap.label_count,
        "newest_label_id": snap.newest_label_id,
        "compute_seconds": seconds,
    }
    try:
        with transaction.atomic():
            _, created = QualityReport.objects.get_or_create(
                study_id=study_id,
                kind=SUMMARY,
                fingerprint=fingerprint,
                defaults={"payload": report.summary, **common},
            )
            if created:
                QualityReport.objects.get_or_create(
                    study_id=study_id,
                    kind=ITEMS,
                    fingerprint=fingerprint,
                    defaults={"payload": report.items, **common},
                )
    except IntegrityError:  # a concurrent run stored the same snapshot first
        return False
    if created:
        _prune(study_id)
    return created


def _prune(study_id: int) -> None:
    """Keep the newest few reports per kind (item tables are large), newest stored first."""
    for kind, keep in KEEP_REPORTS.items():
        old = list(
            QualityReport.objects.filter(study_id=study_id, kind=kind)
            .order_by("-created_at", "-id")
            .values_list("id", flat=True)[keep:]
        )
        if old:
            QualityReport.objects.filter(id__in=old).delete()
