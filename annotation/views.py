"""Pages of the annotation side: home, the lead's study overview. Views stay thin.

The annotator workbench lives in `annotation.workbench`; the dashboards in `qc.views`.
"""

from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.shortcuts import render
from django.views.decorators.http import require_GET

from annotation import diagnostics, selectors
from annotation.models import Label, Unit


@require_GET
@login_required
def home(request):
    """The studies the user may lead and the ones they may annotate (enrolled and a member of
    the workspace: the selectors hold that rule)."""
    lead_studies = selectors.lead_studies_for(request.user).select_related("workspace")
    annotator_studies = selectors.annotator_studies_for(request.user).select_related("workspace")
    return render(
        request,
        "annotation/home.html",
        {"lead_studies": lead_studies, "annotator_studies": annotator_studies},
    )


@require_GET
@login_required
def study_overview(request, token: str):
    study = selectors.lead_study_or_404(request.user, token)
    units_by_role = dict(
        Unit.objects.filter(study=study).values_list("role").annotate(n=Count("id"))
    )
    context = {
        "study": study,
        "units_by_role": units_by_role,
        "n_labels": Label.objects.filter(study=study).count(),
        "n_annotators": study.enrolments.count(),
        "systems": study.systems.all(),
        "guide": study.current_guide(),
        "skips": diagnostics.skips(study),
        "gold": diagnostics.gold_supply(study),
    }
    return render(request, "annotation/study_overview.html", context)
