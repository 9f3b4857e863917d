"""Reads with the tenant scope built in: every query of studies starts from `for_user`.

A foreign id is simply not in the queryset, so views answer 404, never 500 or someone else's data.
"""

from dataclasses import dataclass

from django.db.models import Exists, OuterRef, QuerySet
from django.http import Http404
from django.shortcuts import get_object_or_404
from django.urls import NoReverseMatch, reverse

from annotation.models import ApiToken, Enrolment, Membership, Study, Workspace


def _member_of_workspace(user, role: str | None = None) -> Exists:
    memberships = Membership.objects.filter(workspace=OuterRef("workspace_id"), user=user)
    if role is not None:
        memberships = memberships.filter(role=role)
    return Exists(memberships)


def _enrolled(user) -> Exists:
    return Exists(Enrolment.objects.filter(study=OuterRef("pk"), user=user))


def lead_studies_for(user) -> QuerySet[Study]:
    """Studies the user may configure and analyse: staff all, leads their workspaces'."""
    if not user.is_authenticated:
        return Study.objects.none()
    if user.is_staff:
        return Study.objects.all()
    return Study.objects.filter(_member_of_workspace(user, Membership.Role.LEAD))


def annotator_studies_for(user) -> QuerySet[Study]:
    """Studies the user may annotate: enrolled in the study AND a member (any role) of its
    workspace; removing either ends access at the next request. Staff only where both hold."""
    if not user.is_authenticated:
        return Study.objects.none()
    return Study.objects.filter(_member_of_workspace(user), _enrolled(user))


def lead_study_or_404(user, token: str) -> Study:
    return get_object_or_404(lead_studies_for(user).select_related("workspace"), token=token)


def annotator_study_or_404(user, token: str) -> Study:
    return get_object_or_404(annotator_studies_for(user), token=token)


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


# --- the annotator's home page ------------------------------------------------------------------

# Where each blocker is lifted, by URL name (the first that exists), and the button's words.
UNBLOCK = {
    "qualification": (("qualification-start", "work-start"), "Take the qualification test"),
    "recalibration": (("recalibration-start", "work-start"), "Do the recalibration"),
}
BLOCKER_TEXT = {
    "": ("Work is waiting for you", ""),
    "paused": ("Paused by the lead", "No new tasks for now; your progress is kept."),
    "quota": ("Quota reached", "You have done every task this study asks of you. Thank you!"),
    "qualification": (
        "Qualification needed",
        "Pass this study's short qualification test to start annotating.",
    ),
    "recalibration": (
        "The guide has changed",
        "A short recalibration on the new guide is needed before you continue.",
    ),
    "pool": ("Not open to your pool", "The lead has limited this study to other annotator pools."),
    "closed": ("Closed", "This study has ended. Thank you for taking part."),
    "done": ("All done", "There is nothing more for you here right now."),
}


@dataclass(frozen=True)
class StudyCard:
    """One study on an annotator's home page: progress, what (if anything) blocks them, and the
    step that unblocks them (`action_url` empty when there is nothing to do)."""

    study: Study
    done: int
    assigned: int
    blocker: str  # "" | "paused" | "quota" | "qualification" | "recalibration" | "closed" | "done"
    title: str
    text: str
    action_url: str
    action_label: str


def _first_url(names, token: str) -> str:
    for name in names:
        try:
            return reverse(name, args=[token])
        except NoReverseMatch:
            continue
    return ""


def annotator_home(user) -> list[StudyCard]:
    """The studies an annotator works on, each with progress and blocker (the engine's own gate
    and progress, `work_state`). Drafts are left out: they offer nothing yet."""
    from annotation.services.assignment import work_state

    cards = []
    studies = annotator_studies_for(user).exclude(status=Study.Status.DRAFT)
    for study in studies.select_related("workspace").order_by("name"):
        state = work_state(user, study)
        reason = state.blocked_reason
        title, text = BLOCKER_TEXT.get(reason, BLOCKER_TEXT["done"])
        if reason == "":
            url = reverse("work-start", args=[study.token])
            label = "Continue" if state.done else "Start"
        elif reason in UNBLOCK:
            names, label = UNBLOCK[reason]
            url = _first_url(names, study.token)
        else:
            url, label = "", ""
        cards.append(
            StudyCard(study, int(state.done), int(state.assigned), reason, title, text, url, label)
        )
    return cards


def lead_workspaces_for(user) -> QuerySet[Workspace]:
    """Workspaces the user leads: staff all, leads their own (annotators none)."""
    if not user.is_authenticated:
        return Workspace.objects.none()
    if user.is_staff:
        return Workspace.objects.all()
    return Workspace.objects.filter(
        memberships__user=user, memberships__role=Membership.Role.LEAD
    ).distinct()


def api_tokens_for(user) -> QuerySet[ApiToken]:
    """The user's own API tokens, newest first (revoked ones included, marked as such)."""
    if not user.is_authenticated:
        return ApiToken.objects.none()
    return ApiToken.objects.filter(user=user)
