"""Crowd entry view: `/c/<study token>/?...` signs a Prolific or MTurk worker in and sends them on.

The rules (parameters, accounts, enrolment) live in `annotation.services.crowd`.
"""

from django.contrib.auth import login
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from annotation.models import Study
from annotation.selectors import crowd_study_or_404
from annotation.services.crowd import CrowdEntryError, enter_crowd_worker, read_parameters

MTURK_PREVIEW = "ASSIGNMENT_ID_NOT_AVAILABLE"


@require_GET
@never_cache
def entry(request, token: str):
    """`/c/<study token>/?PROLIFIC_PID=..&STUDY_ID=..&SESSION_ID=..` (or MTurk's workerId and
    assignmentId): sign the worker in and send them to the workbench."""
    study = crowd_study_or_404(token)
    if (
        study.crowd_platform == Study.CrowdPlatform.MTURK
        and request.GET.get("assignmentId") == MTURK_PREVIEW
    ):
        return render(request, "annotation/work_crowd.html", {"study": study, "preview": True})
    try:
        worker_id, others = read_parameters(study, request.GET)
        user = enter_crowd_worker(study, worker_id)
    except CrowdEntryError as error:
        return render(
            request, "annotation/work_crowd.html", {"study": study, "error": str(error)}, status=400
        )
    if not request.user.is_authenticated or request.user.pk != user.pk:
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    request.session[f"crowd:{study.token}"] = {"platform": study.crowd_platform, **others}
    return redirect("work-start", token=study.token)
