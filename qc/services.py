"""Writes of the report pipeline: debounced scheduling, lead requests, and storing a report.

A run loads one snapshot, computes outside any transaction, and stores the report under the
snapshot's fingerprint in one transaction, so a killed worker leaves the previous report intact.

Test hook (documented, off unless set): CONCORD_QC_TEST_PAUSE_SECONDS=<s> in a worker's
environment makes `recompute` sleep that long after computing and before storing (stage
"storing"), so a test can SIGKILL the worker mid-task.
"""

from __future__ import annotations

import logging
import os
import time
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from annotation.models import Study
from qc import loaders
from qc.models import QualityReport, RecomputeState, ReportOptions
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


def _claim(study_id: int, user=None) -> bool:
    """Set the study's pending marker unless one is already set (and fresh); True if we set it."""
    _state(study_id)
    now = timezone.now()
    fields = {"pending_since": now}
    if user is not None:
        fields["requested_by"] = user
    return bool(
        RecomputeState.objects.filter(study_id=study_id)
        .filter(Q(pending_since__isnull=True) | Q(pending_since__lt=now - stale_after()))
        .update(**fields)
    )


def _claim_fast(study_id: int) -> bool:
    """`_claim` for the per-label path: one raw UPDATE once the state row is known to exist."""
    if study_id not in _state_rows:
        claimed = _claim(study_id)
        if not connection.in_atomic_block:  # the row is committed, not in a rollback-able block
            _state_rows.add(study_id)
        return claimed
    now = timezone.now()
    adapt = connection.ops.adapt_datetimefield_value
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {RecomputeState._meta.db_table} SET pending_since = %s WHERE study_id = %s"
            " AND (pending_since IS NULL OR pending_since < %s)",
            [adapt(now), study_id, adapt(now - stale_after())],
        )
        return cursor.rowcount == 1


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
    if not _claim_fast(study_id):
        return False
    delay = debounce_seconds() if countdown is None else countdown
    started = time.monotonic()
    recompute_study.apply_async(args=[study_id], countdown=delay)
    if delay > 0 and not recompute_study.app.conf.task_always_eager:
        _queued_until[study_id] = started + delay / 2
    return True


def request_recompute(study: Study, user) -> bool:
    """A lead's "recompute now": queued at once (still one pending run per study)."""
    from qc.tasks import recompute_study

    claimed = _claim(study.id, user=user)
    if claimed:
        recompute_study.apply_async(args=[study.id], countdown=0)
    return claimed


def set_unanimous_view(study: Study, on: bool) -> None:
    ReportOptions.objects.update_or_create(study=study, defaults={"unanimous_view": bool(on)})


def set_report_options(study: Study, *, unanimous_view: bool, clamp_gold: bool) -> None:
    """The lead's report settings; they enter the settings hash, so the page shows their report."""
    ReportOptions.objects.update_or_create(
        study=study,
        defaults={"unanimous_view": bool(unanimous_view), "clamp_gold": bool(clamp_gold)},
    )


def _progress(study_id: int):
    def report(stage: str, pct: int) -> None:
        RecomputeState.objects.filter(study_id=study_id).update(stage=stage, progress=pct)

    return report


def recompute(study_id: int) -> str:
    """Compute and store the study's report for its current snapshot; safe to run twice.

    Returns "stored", "exists" (this snapshot already has its report) or "missing" (no study).
    """
    study = Study.objects.filter(pk=study_id).first()
    if study is None:
        return "missing"
    now = timezone.now()
    _state(study_id)
    # Clear the marker first: labels arriving from now on schedule the next run.
    RecomputeState.objects.filter(study_id=study_id).update(
        pending_since=None, started_at=now, stage="snapshot", progress=1, last_error=""
    )
    config = loaders.report_config(study)
    count, newest = loaders.label_counts(study_id)
    print_ = loaders.fingerprint(count, newest, config.settings_hash)
    if QualityReport.objects.filter(study_id=study_id, kind=SUMMARY, fingerprint=print_).exists():
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
