"""Crowd entry: a Prolific or MTurk study link creates or resumes a passwordless annotator.

The worker id never becomes a visible name: the username is a hash of platform and worker id.
"""

import hashlib
import re

from django.contrib.auth import get_user_model, login
from django.db import IntegrityError, transaction
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from annotation.models import Enrolment, Study

# Prolific ids are 24 hex characters and MTurk ids upper-case alphanumerics; accept a little more,
# but nothing that could carry markup, paths or control characters.
ID_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
# What each platform puts in the study link: (worker id, other ids kept with the session).
PARAMETERS = {
    Study.CrowdPlatform.PROLIFIC: ("PROLIFIC_PID", ("STUDY_ID", "SESSION_ID")),
    Study.CrowdPlatform.MTURK: ("workerId", ("assignmentId", "hitId")),
}
MTURK_PREVIEW = "ASSIGNMENT_ID_NOT_AVAILABLE"


class CrowdEntryError(ValueError):
    """A study link whose parameters cannot be accepted."""


def crowd_study_or_404(token: str) -> Study:
    """A study that takes crowd workers through its link: launched, with a platform set."""
    study = (
        Study.objects.filter(token=token)
        .exclude(crowd_platform="")
        .exclude(status=Study.Status.DRAFT)
        .first()
    )
    if study is None:
        raise Http404("No such study link.")
    return study


def crowd_username(platform: str, worker_id: str) -> str:
    digest = hashlib.sha256(f"{platform}:{worker_id}".encode()).hexdigest()[:24]
    return f"crowd-{platform}-{digest}"


def read_parameters(study: Study, query) -> tuple[str, dict]:
    """The worker id and the other platform ids from a study link, validated."""
    worker_name, other_names = PARAMETERS[study.crowd_platform]
    worker_id = query.get(worker_name, "")
    if not worker_id:
        raise CrowdEntryError(f"The link is missing {worker_name}.")
    if not ID_PATTERN.match(worker_id):
        raise CrowdEntryError(f"{worker_name} is not a valid id.")
    others = {}
    for name in other_names:
        value = query.get(name, "")
        if value and not ID_PATTERN.match(value):
            raise CrowdEntryError(f"{name} is not a valid id.")
        others[name] = value
    if study.crowd_platform == Study.CrowdPlatform.PROLIFIC and not others["SESSION_ID"]:
        raise CrowdEntryError("The link is missing SESSION_ID.")
    if study.crowd_platform == Study.CrowdPlatform.MTURK and not others["assignmentId"]:
        raise CrowdEntryError("The link is missing assignmentId.")
    return worker_id, others


@transaction.atomic
def enter_crowd_worker(study: Study, worker_id: str):
    """Create or find the worker's passwordless account and enrol it (open crowd) in the study.

    Refuses an account that has a password or staff rights: a study link never signs in a
    person who signs in some other way.
    """
    user_model = get_user_model()
    username = crowd_username(study.crowd_platform, worker_id)
    user = user_model.objects.filter(username=username).first()
    if user is None:
        try:
            with transaction.atomic():
                user = user_model(username=username)
                user.set_unusable_password()
                user.save()
        except IntegrityError:  # the same link opened twice at once
            user = user_model.objects.get(username=username)
    if user.has_usable_password() or user.is_staff or user.is_superuser:
        raise CrowdEntryError("This link cannot be used to sign in.")
    try:
        with transaction.atomic():
            Enrolment.objects.get_or_create(
                study=study,
                user=user,
                defaults={"pool": Enrolment.Pool.OPEN_CROWD, "external_id": worker_id},
            )
    except IntegrityError:
        pass  # enrolled by a parallel request
    return user


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
