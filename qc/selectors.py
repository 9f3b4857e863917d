"""Reads for the dashboard pages: the latest stored report, its age, and whether workers run.

Nothing here computes a statistic; it reads what a worker stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from qc.models import QualityReport, RecomputeState, ReportOptions, WorkerHeartbeat

SUMMARY = QualityReport.SUMMARY
ITEMS = QualityReport.ITEMS


def latest_report(study, kind: str = SUMMARY) -> QualityReport | None:
    return (
        QualityReport.objects.filter(study=study, kind=kind)
        .order_by("-label_count", "-created_at")
        .first()
    )


def latest_items(study, fingerprint: str | None = None) -> QualityReport | None:
    qs = QualityReport.objects.filter(study=study, kind=ITEMS)
    if fingerprint:
        qs = qs.filter(fingerprint=fingerprint)
    return qs.order_by("-label_count", "-created_at").first()


def tasks_run_eagerly() -> bool:
    from concord.celery import app

    return bool(app.conf.task_always_eager)


def worker_silence_limit() -> timedelta:
    return timedelta(seconds=float(getattr(settings, "CONCORD_QC_WORKER_SILENCE_SECONDS", 60)))


@dataclass(frozen=True)
class WorkerStatus:
    eager: bool
    last_seen: object  # datetime or None
    missing: bool  # broker configured but no worker seen recently
    waiting_seconds: float | None  # how long a queued recomputation has waited to start


def worker_status(state: RecomputeState | None) -> WorkerStatus:
    now = timezone.now()
    if tasks_run_eagerly():
        return WorkerStatus(True, None, False, None)
    beat = WorkerHeartbeat.objects.exclude(hostname="eager").order_by("-seen_at").first()
    last_seen = beat.seen_at if beat else None
    waiting = None
    if (
        state
        and state.pending_since
        and (state.started_at is None or state.started_at < state.pending_since)
    ):
        waiting = (now - state.pending_since).total_seconds()
    silent = last_seen is None or now - last_seen > worker_silence_limit()
    stuck = waiting is not None and waiting > 60
    return WorkerStatus(False, last_seen, silent or stuck, waiting)


def recompute_state(study) -> RecomputeState | None:
    return RecomputeState.objects.filter(study=study).first()


def run_status(state: RecomputeState | None, now=None) -> str:
    """The study's recomputation as the worker's records show it: "running" (heartbeat fresh),
    "stalled" (started, unfinished, heartbeat stale: its worker died), "queued" (a marker under a
    task id), "lost" (a marker too old to be a waiting task), or "idle"."""
    from qc.services import heartbeat_stale_after, stale_after

    now = now or timezone.now()
    if state is None:
        return "idle"
    if state.running:
        beat = state.heartbeat_at or state.started_at
        if beat is not None and now - beat > heartbeat_stale_after():
            return "stalled"
        return "running"
    if state.pending_since:
        return "lost" if now - state.pending_since > stale_after() else "queued"
    return "idle"


def unanimous_view(study) -> bool:
    return ReportOptions.objects.filter(study=study, unanimous_view=True).exists()


def dashboard(study) -> dict:
    from qc import charts
    from qc.loaders import REPORT_VERSION

    report = latest_report(study)
    state = recompute_state(study)
    summary = report.payload if report else None
    return {
        "report": report,
        "summary": summary,
        "age": (timezone.now() - report.created_at) if report else None,
        # Stored by an older version of the report code (fields may be missing until recomputed).
        "outdated": bool(summary) and summary.get("version") != REPORT_VERSION,
        "state": state,
        "run": run_status(state),
        "worker": worker_status(state),
        "charts": charts.for_report(summary) if summary else {},
        "unanimous_view": unanimous_view(study),
    }
