"""Rater pages, the workspace overview, triage and audits: thin views over selectors/services.

Leads of the study's workspace (and staff) only; every number shown comes from a stored report.
"""

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation.selectors import lead_study_or_404
from qc.models import Adjudication, AuditItem
from qc.raters import selectors, services
from qc.raters.services import ReviewError


@login_required
@require_GET
def rater_page(request, token: str, annotator_id: int):
    study = lead_study_or_404(request.user, token)
    context = {"study": study, **selectors.rater_page(study, annotator_id)}
    annotator = get_object_or_404(get_user_model(), pk=annotator_id)
    context["annotator"] = annotator
    return render(request, "qc/raters/rater.html", context)


@login_required
@require_GET
def study_raters(request, token: str):
    study = lead_study_or_404(request.user, token)
    report = selectors.latest_raters(study)
    context = {"study": study, "report": report, "summary": report.payload if report else None}
    return render(request, "qc/raters/study_raters.html", context)


@login_required
@require_GET
def overview(request, slug: str):
    workspace = selectors.workspace_or_404(request.user, slug)
    context = {"workspace": workspace, **selectors.overview(request.user, workspace)}
    return render(request, "qc/raters/overview.html", context)


@login_required
@require_POST
def send_to_audit(request, token: str, annotator_id: int):
    study = lead_study_or_404(request.user, token)
    annotator = get_object_or_404(get_user_model(), pk=annotator_id)
    selectors.rater_page(study, annotator_id)  # 404 unless a rater of this study
    try:
        audit = services.draw_audit(
            study,
            "targeted",
            request.POST.get("size", "20"),
            request.user,
            reason=f"Screening sample of {annotator.get_username()}'s labels",
            annotator=annotator,
        )
    except ReviewError as exc:
        messages.error(request, str(exc))
        return redirect("rater-page", token=study.token, annotator_id=annotator_id)
    messages.success(request, f"{audit.items.count()} labels sent to a targeted audit.")
    return redirect("audit-detail", token=study.token, audit_id=audit.id)


@login_required
@require_GET
def triage(request, token: str):
    study = lead_study_or_404(request.user, token)
    return render(request, "qc/raters/triage.html", {"study": study, **selectors.triage(study)})


@login_required
@require_http_methods(["GET", "POST"])
def triage_item(request, token: str, unit_token: str):
    study = lead_study_or_404(request.user, token)
    context = {"study": study, **selectors.triage_item(study, unit_token)}
    context["causes"] = Adjudication.Cause.choices
    context["decisions"] = Adjudication.Decision.choices
    context["classes"] = _reference_choices(study)
    errors = {}
    if request.method == "POST":
        try:
            services.adjudicate(
                study,
                context["unit"],
                request.user,
                cause=request.POST.get("cause", ""),
                decision=request.POST.get("decision", ""),
                rationale=request.POST.get("rationale", ""),
                reference=request.POST.get("reference", ""),
                proposed_ruling=request.POST.get("proposed_ruling", ""),
                allowed_references=context["classes"] or None,
            )
        except ReviewError as exc:
            errors[exc.field] = exc.message
        else:
            messages.success(request, "Adjudication recorded; the raw labels are unchanged.")
            return redirect("study-triage", token=study.token)
    context["errors"] = errors
    context["posted"] = request.POST if request.method == "POST" else {}
    status = 400 if errors else 200
    return render(request, "qc/raters/triage_item.html", context, status=status)


def _reference_choices(study) -> list[str]:
    scheme = study.label_scheme or {}
    if study.task_kind in ("categorical", "ordinal"):
        return [str(x["value"]) for x in scheme.get("labels", [])]
    if study.task_kind == "likert":
        return [f"{float(p['value']):g}" for p in scheme.get("points", [])]
    if study.task_kind == "pairwise":
        return list(study.systems.values_list("name", flat=True)) + ["tie"]
    return []


@login_required
@require_http_methods(["GET", "POST"])
def audits(request, token: str):
    study = lead_study_or_404(request.user, token)
    if request.method == "POST":
        try:
            audit = services.draw_audit(study, "random", request.POST.get("size"), request.user)
        except ReviewError as exc:
            messages.error(request, str(exc))
            return redirect("study-audits", token=study.token)
        return redirect("audit-detail", token=study.token, audit_id=audit.id)
    return render(request, "qc/raters/audits.html", {"study": study, **selectors.audits(study)})


@login_required
@require_http_methods(["GET", "POST"])
def audit_detail(request, token: str, audit_id: int):
    study = lead_study_or_404(request.user, token)
    context = {"study": study, **selectors.audit_detail(study, audit_id)}
    if request.method == "POST":
        item = get_object_or_404(context["items"], pk=request.POST.get("item") or 0)
        try:
            services.check_audit_item(
                item, request.POST.get("verdict", ""), request.user, request.POST.get("note", "")
            )
        except ReviewError as exc:
            messages.error(request, str(exc))
        return redirect("audit-detail", token=study.token, audit_id=audit_id)
    context["verdicts"] = [v for v in AuditItem.Verdict.choices if v[0]]
    return render(request, "qc/raters/audit.html", context)
