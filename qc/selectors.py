"""Reads for the dashboard pages: the latest stored report, its age, and whether workers run.

Nothing here computes a statistic; it reads what a worker stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from annotation.models import Enrolment
from qc.models import QualityReport, RecomputeState, ReportOptions, WorkerHeartbeat

SUMMARY = QualityReport.SUMMARY
ITEMS = QualityReport.ITEMS


@dataclass(frozen=True)
class CurrentReport:
    """The stored report the page shows, chosen by the current settings' fingerprint.

    `report` is the report of exactly the current labels and settings when one is stored;
    otherwise the newest report with the current settings (`behind` labels arrived since), or
    None when no report of the current settings exists yet (`other_settings`: one does with
    settings the lead has since changed; it is never shown as if current).
    """

    report: QualityReport | None
    fingerprint: str
    exact: bool
    behind: int
    other_settings: bool


def current_report(study, kind: str = SUMMARY) -> CurrentReport:
    from qc import loaders

    config = loaders.report_config(study)
    count, newest = loaders.label_counts(study.id)
    print_ = loaders.fingerprint(count, newest, config.settings_hash)
    reports = QualityReport.objects.filter(study=study, kind=kind)
    exact = reports.filter(fingerprint=print_).first()
    if exact is not None:
        return CurrentReport(exact, print_, True, 0, False)
    same = reports.filter(settings_hash=config.settings_hash).order_by("-created_at", "-id").first()
    if same is not None:
        return CurrentReport(same, print_, False, max(count - same.label_count, 0), False)
    return CurrentReport(None, print_, False, 0, reports.exists())


def latest_report(study, kind: str = SUMMARY) -> QualityReport | None:
    """The report of the current settings (see `current_report`)."""
    return current_report(study, kind).report


def latest_items(study, fingerprint: str | None = None) -> QualityReport | None:
    """The per-item tables stored with the report of this fingerprint (None if pruned)."""
    qs = QualityReport.objects.filter(study=study, kind=ITEMS)
    if fingerprint:
        return qs.filter(fingerprint=fingerprint).first()
    return qs.order_by("-created_at", "-id").first()


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


def report_options(study) -> dict:
    options = ReportOptions.objects.filter(study=study).first()
    return {
        "unanimous_view": bool(options and options.unanimous_view),
        "clamp_gold": bool(options and options.clamp_gold),
        "ordinal_as_interval": bool(options and options.ordinal_as_interval),
        "pool": options.pool if options else "",
        "guide_version": options.guide_version if options else None,
    }


def dashboard(study) -> dict:
    from qc import charts
    from qc.loaders import REPORT_VERSION

    current = current_report(study)
    report = current.report
    state = recompute_state(study)
    summary = report.payload if report else None
    options = report_options(study)
    return {
        "report": report,
        "current": current,
        "summary": summary,
        "age": (timezone.now() - report.created_at) if report else None,
        # Stored by an older version of the report code (fields may be missing until recomputed).
        "outdated": bool(summary) and summary.get("version") != REPORT_VERSION,
        "state": state,
        "run": run_status(state),
        "worker": worker_status(state),
        "charts": charts.for_report(summary) if summary else {},
        "chart_notes": charts.empty_notes(summary) if summary else {},
        "unanimous_view": options["unanimous_view"],
        "clamp_gold": options["clamp_gold"],
        "ordinal_as_interval": options["ordinal_as_interval"],
        "cut": options,
        "pools": Enrolment.Pool.choices,
        "guide_numbers": list(
            study.guide_versions.order_by("number").values_list("number", flat=True)
        ),
    }


def adjudications_by_unit(study) -> dict:
    """Unit token -> the latest adjudication of that unit (decision, reference label, who, when
    in ISO 8601): what the aggregated export's adjudication columns say."""
    from qc.models import Adjudication

    latest: dict = {}
    rows = (
        Adjudication.objects.filter(study=study)
        .order_by("unit_id", "-created_at", "-id")
        .values_list("unit__token", "decision", "reference", "adjudicator__username", "created_at")
    )
    for token, decision, reference, by, at in rows:
        if token not in latest:
            latest[token] = {
                "decision": decision,
                "reference": reference,
                "by": by or "",
                "at": at.isoformat(),
            }
    return latest
