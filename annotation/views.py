"""Pages of the annotation side: home. Views stay thin.

The annotator workbench lives in `annotation.workbench`, the lead's pages in `annotation.studio`,
the dashboards in `qc.views`.
"""

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.views.decorators.http import require_GET

from annotation import selectors


@require_GET
@login_required
def home(request):
    """The studies the user may lead and the ones they may annotate (enrolled and a member of
    the workspace: the selectors hold that rule)."""
    lead_studies = selectors.lead_studies_for(request.user).select_related("workspace")
    annotator_studies = selectors.annotator_home(request.user)
    return render(
        request,
        "annotation/home.html",
        {
            "lead_studies": lead_studies,
            "annotator_studies": annotator_studies,
            "lead_workspaces": selectors.lead_workspaces_for(request.user),
        },
    )
