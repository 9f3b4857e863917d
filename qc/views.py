"""The lead's study dashboard and its downloads; thin views over qc.selectors and qc.services.

Pages show stored reports only: no statistic is computed inside a request.
"""

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from annotation.selectors import lead_study_or_404
from concord import csvsafe
from qc import exports, selectors, services


@login_required
@require_GET
def dashboard(request, token: str):
    study = lead_study_or_404(request.user, token)
    context = {"study": study, **selectors.dashboard(study)}
    return render(request, "qc/dashboard.html", context)


@login_required
@require_POST
def recompute_now(request, token: str):
    study = lead_study_or_404(request.user, token)
    outcome = services.request_recompute(study, request.user)
    if request.htmx:
        return _progress(request, study, notice=outcome.message)
    (messages.success if outcome.started else messages.error)(request, outcome.message)
    return redirect("study-dashboard", token=study.token)


@login_required
@require_GET
def progress(request, token: str):
    return _progress(request, lead_study_or_404(request.user, token))


def _progress(request, study, notice: str = ""):
    state = selectors.recompute_state(study)
    context = {
        "study": study,
        "state": state,
        "run": selectors.run_status(state),
        "notice": notice,
        "worker": selectors.worker_status(state),
        "report": selectors.latest_report(study),
    }
    return render(request, "qc/partials/progress.html", context)


@login_required
@require_POST
def options(request, token: str):
    study = lead_study_or_404(request.user, token)
    services.set_report_options(
        study,
        unanimous_view=request.POST.get("unanimous_view") == "on",
        clamp_gold=request.POST.get("clamp_gold") == "on",
        ordinal_as_interval=request.POST.get("ordinal_as_interval") == "on",
    )
    version = request.POST.get("guide_version", "")
    try:
        services.set_report_cut(
            study,
            pool=request.POST.get("pool", ""),
            guide_version=int(version) if version.isdigit() else None,
        )
    except ValueError as error:
        messages.error(request, str(error))
    services.request_recompute(study, request.user)
    return redirect("study-dashboard", token=study.token)


def _attachment(response, filename: str):
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@login_required
@require_GET
def report_json(request, token: str):
    study = lead_study_or_404(request.user, token)
    report = selectors.latest_report(study)
    if report is None:
        raise Http404("no report yet")
    items = selectors.latest_items(study, report.fingerprint)
    body = {
        "study": study.token,
        "fingerprint": report.fingerprint,
        "created_at": report.created_at.isoformat(),
        "compute_seconds": report.compute_seconds,
        "report": report.payload,
        "items": items.payload if items else None,
    }
    response = HttpResponse(json.dumps(body, allow_nan=False), content_type="application/json")
    return _attachment(response, f"concord-{study.token}-report.json")


@login_required
@require_GET
def report_csv(request, token: str, table: str):
    study = lead_study_or_404(request.user, token)
    if table not in exports.TABLES:
        raise Http404("no such table")
    report = selectors.latest_report(study)
    if report is None:
        raise Http404("no report yet")
    items = adjudications = None
    if exports.needs_items(table):
        found = selectors.latest_items(study, report.fingerprint)
        items = found.payload if found else {}
        adjudications = selectors.adjudications_by_unit(study)
    lines = csvsafe.lines(exports.rows(table, report.payload, items, adjudications))
    response = StreamingHttpResponse(lines, content_type="text/csv")
    return _attachment(response, f"concord-{study.token}-{table}.csv")


@login_required
@require_GET
def aggregated_jsonl(request, token: str):
    """The aggregated labels (the soft-labels table) as JSON Lines, one item a line."""
    from annotation.exports.writers import jsonl_text

    study = lead_study_or_404(request.user, token)
    report = selectors.latest_report(study)
    if report is None:
        raise Http404("no report yet")
    found = selectors.latest_items(study, report.fingerprint)
    records = exports.aggregated_records(
        report.payload, found.payload if found else {}, selectors.adjudications_by_unit(study)
    )
    response = StreamingHttpResponse(
        jsonl_text(records), content_type="application/x-ndjson; charset=utf-8"
    )
    return _attachment(response, f"concord-{study.token}-aggregated-labels.jsonl")
