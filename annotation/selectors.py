"""Reads with the tenant scope built in: every query of studies starts from `for_user`.

A foreign id is simply not in the queryset, so views answer 404, never 500 or someone else's data.
"""

from django.db.models import Q, QuerySet
from django.http import Http404
from django.shortcuts import get_object_or_404

from annotation.models import ApiToken, Membership, Study, Workspace


def studies_for(user) -> QuerySet[Study]:
    """Every study the user may reach in any role: staff all, leads their workspaces', annotators
    the ones they are enrolled in."""
    if not user.is_authenticated:
        return Study.objects.none()
    if user.is_staff:
        return Study.objects.all()
    return Study.objects.filter(
        Q(workspace__memberships__user=user, workspace__memberships__role=Membership.Role.LEAD)
        | Q(enrolments__user=user)
    ).distinct()


def lead_studies_for(user) -> QuerySet[Study]:
    """Studies the user may configure and analyse: staff all, leads their workspaces'."""
    if not user.is_authenticated:
        return Study.objects.none()
    if user.is_staff:
        return Study.objects.all()
    return Study.objects.filter(
        workspace__memberships__user=user, workspace__memberships__role=Membership.Role.LEAD
    ).distinct()


def annotator_studies_for(user) -> QuerySet[Study]:
    """Studies the user is enrolled in as an annotator (staff included only where enrolled)."""
    if not user.is_authenticated:
        return Study.objects.none()
    return Study.objects.filter(enrolments__user=user)


def lead_study_or_404(user, token: str) -> Study:
    return get_object_or_404(lead_studies_for(user).select_related("workspace"), token=token)


def annotator_study_or_404(user, token: str) -> Study:
    return get_object_or_404(annotator_studies_for(user), token=token)


def is_lead(user) -> bool:
    return user.is_staff or Membership.objects.filter(user=user, role=Membership.Role.LEAD).exists()


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
