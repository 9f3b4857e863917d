"""Reads of rater monitoring: stored rater reports, the workspace overview, triage and audits.

Nothing here computes a statistic; tenant scope comes from annotation.selectors.
"""

from __future__ import annotations

from django.http import Http404
from django.shortcuts import get_object_or_404
from django.utils import timezone

from annotation.models import Label, Membership, Study, Unit, UnitOutput, Workspace
from annotation.selectors import lead_studies_for
from qc.models import Adjudication, Audit, AuditItem, QualityReport, RaterReport

RATERS = "raters"


def latest_raters(study: Study) -> QualityReport | None:
    return QualityReport.objects.filter(study=study, kind=RATERS).order_by("-created_at").first()


def latest_study_summary(study: Study) -> dict:
    report = (
        QualityReport.objects.filter(study=study, kind=QualityReport.SUMMARY)
        .order_by("-created_at")
        .first()
    )
    return report.payload if report else {}


def rater_page(study: Study, annotator_id: int) -> dict:
    """The stored page of one rater in one study (404 if the study has no such rater)."""
    report = latest_raters(study)
    row = None
    if report is not None:
        row = RaterReport.objects.filter(
            study=study, annotator_id=annotator_id, fingerprint=report.fingerprint
        ).first()
    if row is None and not Label.objects.filter(study=study, annotator_id=annotator_id).exists():
        raise Http404("no such rater in this study")
    severity = latest_study_summary(study).get("severity") or {}
    return {
        "report": report,
        "summary": report.payload if report else None,
        "age": timezone.now() - report.created_at if report else None,
        "page": row.payload if row else None,
        "severity_section": severity,
        "audits": Audit.objects.filter(study=study, target_annotator_id=annotator_id),
    }


def workspaces_for(user):
    if user.is_staff:
        return Workspace.objects.all()
    return Workspace.objects.filter(
        memberships__user=user, memberships__role=Membership.Role.LEAD
    ).distinct()


def workspace_or_404(user, slug: str) -> Workspace:
    return get_object_or_404(workspaces_for(user), slug=slug)


def overview(user, workspace: Workspace) -> dict:
    """Every rater of every study in the workspace, from each study's latest rater report:
    alerts first, then by the stored concern score."""
    rows, studies, missing = [], [], []
    for study in lead_studies_for(user).filter(workspace=workspace).order_by("name"):
        report = latest_raters(study)
        if report is None:
            missing.append(study)
            continue
        studies.append((study, report))
        for entry in report.payload.get("ranking", []):
            rows.append({**entry, "study": study})
    rows.sort(
        key=lambda r: (
            not r["alert"],
            -r["concern"],
            r["gold_accuracy"] if r["gold_accuracy"] is not None else 2.0,
            r["annotator"],
        )
    )
    rule = studies[0][1].payload.get("concern_rule", "") if studies else ""
    return {"rows": rows, "studies": studies, "missing": missing, "concern_rule": rule}


def triage(study: Study) -> dict:
    report = latest_raters(study)
    queue = (report.payload.get("triage") if report else None) or {}
    latest = {}
    for adj in Adjudication.objects.filter(study=study).select_related("adjudicator"):
        latest.setdefault(adj.unit_id, adj)  # ordered newest first
    rows = [{**r, "adjudication": latest.get(r["unit_id"])} for r in queue.get("rows", [])]
    return {"report": report, "queue": queue, "rows": rows, "n_adjudicated": len(latest)}


def triage_item(study: Study, unit_token: str) -> dict:
    unit = get_object_or_404(Unit.objects.filter(study=study), token=unit_token)
    labels = (
        Label.objects.filter(unit=unit)
        .select_related("annotator", "winner", "guide_version")
        .order_by("id")
    )
    return {
        "unit": unit,
        "members": UnitOutput.objects.filter(unit=unit)
        .select_related("output__system", "output__prompt")
        .order_by("position"),
        "labels": labels,
        "history": Adjudication.objects.filter(unit=unit).select_related("adjudicator"),
    }


def audits(study: Study) -> dict:
    report = latest_raters(study)
    return {
        "report": report,
        "section": (report.payload.get("audits") if report else None) or {},
        "audits": Audit.objects.filter(study=study).select_related("target_annotator"),
    }


def audit_detail(study: Study, audit_id: int) -> dict:
    audit = get_object_or_404(Audit.objects.filter(study=study), pk=audit_id)
    items = AuditItem.objects.filter(audit=audit).select_related(
        "label", "label__annotator", "label__unit", "label__winner", "checked_by"
    )
    return {"audit": audit, "items": items}
