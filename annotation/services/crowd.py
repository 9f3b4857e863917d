"""Crowd entry: a Prolific or MTurk study link creates or resumes a passwordless annotator.

The worker id never becomes a visible name: the username is a hash of platform and worker id.
"""

import hashlib
import re

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction

from annotation.models import Enrolment, Membership, Study

# Prolific ids are 24 hex characters and MTurk ids upper-case alphanumerics; accept a little more,
# but nothing that could carry markup, paths or control characters.
ID_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
# What each platform puts in the study link: (worker id, other ids kept with the session).
PARAMETERS = {
    Study.CrowdPlatform.PROLIFIC: ("PROLIFIC_PID", ("STUDY_ID", "SESSION_ID")),
    Study.CrowdPlatform.MTURK: ("workerId", ("assignmentId", "hitId")),
}


class CrowdEntryError(ValueError):
    """A study link whose parameters cannot be accepted."""


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

    Refuses an account that has a password or staff rights (a study link never signs in a
    person who signs in some other way), a deactivated account, and a worker whose workspace
    membership was removed (the link does not restore access a lead ended).
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
    if user.has_usable_password() or user.is_staff or user.is_superuser or not user.is_active:
        raise CrowdEntryError("This link cannot be used to sign in.")
    enrolment = Enrolment.objects.filter(study=study, user=user).first()
    if enrolment is None:
        try:
            with transaction.atomic():
                # Access needs the workspace membership too; both are made together, once.
                Membership.objects.get_or_create(
                    workspace_id=study.workspace_id,
                    user=user,
                    defaults={"role": Membership.Role.ANNOTATOR},
                )
                Enrolment.objects.create(
                    study=study,
                    user=user,
                    pool=Enrolment.Pool.OPEN_CROWD,
                    external_id=worker_id,
                )
        except IntegrityError:
            pass  # enrolled by a parallel request
    elif not Membership.objects.filter(workspace_id=study.workspace_id, user=user).exists():
        # The lead removed this worker: the link must not bring them back.
        raise CrowdEntryError("Your access to this study has ended.")
    return user
