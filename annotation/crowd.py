"""Crowd entry view: `/c/<study token>/?...` signs a Prolific or MTurk worker in and sends them on.

The rules (parameters, accounts, enrolment) live in `annotation.services.crowd`. A link opened in a
browser that is already signed in as someone else never replaces that session silently (a link
is easy to plant: that would be login CSRF): the page asks, and only a POST from the page itself
(CSRF-checked) switches accounts.
"""

from django.contrib.auth import login
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from annotation.models import Study
from annotation.selectors import crowd_study_or_404
from annotation.services.crowd import (
    PARAMETERS,
    CrowdEntryError,
    crowd_username,
    enter_crowd_worker,
    read_parameters,
)

MTURK_PREVIEW = "ASSIGNMENT_ID_NOT_AVAILABLE"


@require_http_methods(["GET", "POST"])
@never_cache
def entry(request, token: str):
    """`/c/<study token>/?PROLIFIC_PID=..&STUDY_ID=..&SESSION_ID=..` (or MTurk's workerId and
    assignmentId): sign the worker in and send them to the workbench. Signed in as someone
    else, a GET asks first; the POST of that page's form does the switch."""
    study = crowd_study_or_404(token)
    params = request.POST if request.method == "POST" else request.GET
    if study.crowd_platform == Study.CrowdPlatform.MTURK and params.get("assignmentId") == (
        MTURK_PREVIEW
    ):
        return render(request, "annotation/work_crowd.html", {"study": study, "preview": True})
    try:
        worker_id, others = read_parameters(study, params)
        if (
            request.method == "GET"
            and request.user.is_authenticated
            and request.user.get_username() != crowd_username(study.crowd_platform, worker_id)
        ):
            worker_name, other_names = PARAMETERS[study.crowd_platform]
            fields = [(worker_name, worker_id), *((n, others[n]) for n in other_names)]
            context = {"study": study, "switch": True, "fields": fields}
            return render(request, "annotation/work_crowd.html", context)
        user = enter_crowd_worker(study, worker_id)
    except CrowdEntryError as error:
        return render(
            request, "annotation/work_crowd.html", {"study": study, "error": str(error)}, status=400
        )
    if not request.user.is_authenticated or request.user.pk != user.pk:
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    request.session[f"crowd:{study.token}"] = {"platform": study.crowd_platform, **others}
    return redirect("work-start", token=study.token)
