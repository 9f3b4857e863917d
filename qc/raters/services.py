"""Writes of rater monitoring: the worker's rater reports, audits drawn and checked, adjudications.

Rater reports are keyed by a fingerprint of the study report's snapshot plus the audit and
adjudication records, so checking an audit item or adjudicating schedules a fresh report.
"""

from __future__ import annotations

import hashlib
import logging
import random
import secrets
import time

from django.db import IntegrityError, transaction
from django.db.models import Count, Max
from django.utils import timezone

from annotation.models import Label, Study, Unit
from qc import loaders
from qc.models import (
    Adjudication,
    Audit,
    AuditItem,
    QualityReport,
    RaterReport,
    RecomputeState,
)
from qc.raters.loaders import load_rater_data
from qc.raters.report import build_rater_reports, dawid_skene_fit
from qc.raters.review import audit_section, triage_section

logger = logging.getLogger(__name__)

RATERS = "raters"
KEEP_RATER_REPORTS = 3
MAX_AUDIT_SIZE = 500


class ReviewError(ValueError):
    """A review action that cannot be stored; `field` names the offending form field."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def review_state(study_id: int) -> str:
    """What besides labels a rater report depends on: audit verdicts and adjudications."""
    audits = AuditItem.objects.filter(audit__study_id=study_id).aggregate(
        n=Count("id"), checked=Count("checked_at"), last=Max("checked_at")
    )
    adj = Adjudication.objects.filter(study_id=study_id).aggregate(n=Count("id"), last=Max("id"))
    return f"{audits['n']}:{audits['checked']}:{audits['last']}:{adj['n']}:{adj['last']}"


def rater_fingerprint(study_fingerprint: str, study_id: int) -> str:
    raw = f"{study_fingerprint}|{review_state(study_id)}"
    return hashlib.sha256(raw.encode()).hexdigest()


def recompute_raters(
    study: Study, study_fingerprint: str, snap=None, config=None, summary=None, fits=None
):
    """Compute and store the rater reports for the study's current snapshot; safe to run twice.

    Called by the worker right after the study report (with its snapshot and summary), or on
    its own when only audits or adjudications changed (then it loads what it needs).
    Returns "stored" or "exists".
    """
    fingerprint = rater_fingerprint(study_fingerprint, study.id)
    if QualityReport.objects.filter(study=study, kind=RATERS, fingerprint=fingerprint).exists():
        return "exists"
    started = time.perf_counter()
    if snap is None:
        snap = loaders.load_snapshot(study)
        config = loaders.report_config(study)
        stored = (
            QualityReport.objects.filter(study=study, kind=QualityReport.SUMMARY)
            .order_by("-created_at")
            .first()
        )
        summary = stored.payload if stored else {}
    data = load_rater_data(study)
    # the study report's own Dawid-Skene fit of the same labels, when it made one (unclamped)
    ds = (fits or {}).get("dawid_skene") or dawid_skene_fit(snap, config)
    reports = build_rater_reports(data, snap, config, summary, ds)
    study_summary = dict(reports.summary)
    study_summary["audits"] = audit_section(study)
    study_summary["triage"] = triage_section(snap, config, ds)
    study_summary["fingerprint_of_study_report"] = study_fingerprint
    seconds = time.perf_counter() - started
    study_summary["compute_seconds"] = seconds
    try:
        with transaction.atomic():
            _, created = QualityReport.objects.get_or_create(
                study=study,
                kind=RATERS,
                fingerprint=fingerprint,
                defaults={
                    "payload": study_summary,
                    "label_count": snap.label_count,
                    "newest_label_id": snap.newest_label_id,
                    "compute_seconds": seconds,
                },
            )
            if created:
                RaterReport.objects.bulk_create(
                    [
                        RaterReport(
                            study=study,
                            annotator_id=a,
                            fingerprint=fingerprint,
                            concern=reports.concern[a][0],
                            alert=reports.concern[a][1],
                            payload=page,
                        )
                        for a, page in reports.raters.items()
                    ],
                    batch_size=500,
                )
    except IntegrityError:  # a concurrent run stored this snapshot first
        return "exists"
    if created:
        _prune(study, fingerprint)
    return "stored" if created else "exists"


def recompute_raters_safely(study: Study, study_fingerprint: str, *args) -> str:
    """`recompute_raters`, with a failure logged and recorded on the study's recompute state
    instead of failing the study report that was just stored."""
    try:
        return recompute_raters(study, study_fingerprint, *args)
    except Exception as exc:  # the study report stands; the rater pages say they are stale
        logger.exception("rater report of study %s failed", study.id)
        RecomputeState.objects.filter(study=study).update(
            last_error=f"rater report: {type(exc).__name__}: {exc}"
        )
        return "failed"


def _prune(study: Study, keep_fingerprint: str) -> None:
    RaterReport.objects.filter(study=study).exclude(fingerprint=keep_fingerprint).delete()
    old = list(
        QualityReport.objects.filter(study=study, kind=RATERS)
        .order_by("-created_at")
        .values_list("id", flat=True)[KEEP_RATER_REPORTS:]
    )
    if old:
        QualityReport.objects.filter(id__in=old).delete()


def _schedule(study: Study) -> None:
    from qc.services import schedule_recompute

    transaction.on_commit(lambda: schedule_recompute(study.id, countdown=0), robust=True)


# --------------------------------------------------------------------------- audits


@transaction.atomic
def draw_audit(
    study: Study, kind: str, size: int, by, reason: str = "", annotator=None, seed=None
) -> Audit:
    """Draw `size` labels for expert checking and store them as one audit.

    random: a uniform sample of all production labels (unanimous items included: a shared
    misconception looks like agreement). targeted: a uniform sample of one rater's production
    labels (`annotator`), e.g. from "send a sample to audit" on a rater page.
    """
    if kind not in (Audit.Kind.RANDOM, Audit.Kind.TARGETED):
        raise ReviewError("kind", f"{kind!r} is not random or targeted")
    try:
        size = int(size)
    except (TypeError, ValueError):
        raise ReviewError("size", f"{size!r} is not a whole number") from None
    if not 1 <= size <= MAX_AUDIT_SIZE:
        raise ReviewError("size", f"choose between 1 and {MAX_AUDIT_SIZE} labels")
    pool = Label.objects.filter(study=study, purpose="production")
    if kind == Audit.Kind.TARGETED:
        if annotator is None:
            raise ReviewError("annotator", "a targeted audit needs the rater to audit")
        pool = pool.filter(annotator=annotator)
        reason = reason or f"Sample of {annotator}'s labels"
    elif annotator is not None:
        raise ReviewError("annotator", "a random audit draws from every rater")
    ids = list(pool.order_by("id").values_list("id", flat=True))
    if not ids:
        raise ReviewError("size", "there are no production labels to draw from")
    seed = secrets.randbits(48) if seed is None else int(seed)
    picked = random.Random(seed).sample(ids, min(size, len(ids)))
    audit = Audit.objects.create(
        study=study,
        kind=kind,
        reason=(reason or "Random sample of production labels")[:300],
        target_annotator=annotator,
        seed=seed,
        drawn_by=by,
    )
    AuditItem.objects.bulk_create(AuditItem(audit=audit, label_id=i) for i in sorted(picked))
    return audit


@transaction.atomic
def check_audit_item(item: AuditItem, verdict: str, by, note: str = "") -> AuditItem:
    """Record the expert's verdict on one audited label (a later verdict replaces it)."""
    if verdict not in (AuditItem.Verdict.CORRECT, AuditItem.Verdict.WRONG):
        raise ReviewError("verdict", "choose correct or wrong")
    item.verdict = verdict
    item.note = note[:5000]
    item.checked_by = by
    item.checked_at = timezone.now()
    item.save(update_fields=["verdict", "note", "checked_by", "checked_at"])
    _schedule(item.audit.study)
    return item


# --------------------------------------------------------------------------- adjudication


@transaction.atomic
def adjudicate(
    study: Study,
    unit: Unit,
    by,
    cause: str,
    decision: str,
    rationale: str,
    reference: str = "",
    proposed_ruling: str = "",
    allowed_references=None,
) -> Adjudication:
    """Store an expert's decision on a disagreement item as a new record; labels are untouched."""
    if unit.study_id != study.id:
        raise ReviewError("unit", "not a unit of this study")
    if cause not in Adjudication.Cause.values:
        raise ReviewError("cause", "choose a cause")
    if decision not in Adjudication.Decision.values:
        raise ReviewError("decision", "choose a decision")
    rationale = (rationale or "").strip()
    if not rationale:
        raise ReviewError("rationale", "say why, in a sentence")
    reference = (reference or "").strip()
    if decision == Adjudication.Decision.REFERENCE:
        if not reference:
            raise ReviewError("reference", "choose the reference label")
        if allowed_references is not None and reference not in allowed_references:
            raise ReviewError("reference", f"{reference!r} is not a label of this study")
    else:
        reference = ""
    proposed_ruling = (proposed_ruling or "").strip()
    if decision == Adjudication.Decision.RULING and not proposed_ruling:
        raise ReviewError("proposed_ruling", "write the proposed ruling")
    made = Adjudication.objects.create(
        study=study,
        unit=unit,
        adjudicator=by,
        cause=cause,
        decision=decision,
        reference=reference[:200],
        rationale=rationale[:5000],
        proposed_ruling=proposed_ruling[:5000],
    )
    _schedule(study)
    return made
