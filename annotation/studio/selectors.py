"""Reads for the lead's pages: workspaces a user leads, and a study's progress at a glance.

Counts only (no statistics): units per state, work per annotator, labels still needed and the pace.
"""

from dataclasses import dataclass
from datetime import timedelta

from django.db.models import Count, F, Max, Q, Sum
from django.shortcuts import get_object_or_404
from django.utils import timezone

from annotation.models import Assignment, Enrolment, Label, Membership, Study, Unit, Workspace
from annotation.selectors import lead_workspaces_for

PACE_WINDOW = timedelta(hours=24)


def lead_workspace_or_404(user, slug: str) -> Workspace:
    return get_object_or_404(lead_workspaces_for(user), slug=slug)


@dataclass(frozen=True)
class Progress:
    """Where a study stands. Unit states count production units: `untouched` (no label, no
    lease), `in_progress` (some labels or leases, fewer labels than the overlap), `complete`."""

    untouched: int
    in_progress: int
    complete: int
    by_role: dict
    labels_needed: int
    labels_last_day: int
    days_to_finish: float | None  # at the last day's pace; None when nothing was labelled

    @property
    def units(self) -> int:
        return self.untouched + self.in_progress + self.complete


def study_progress(study: Study, now=None) -> Progress:
    now = now or timezone.now()
    by_role = dict(Unit.objects.filter(study=study).values_list("role").annotate(n=Count("id")))
    production = Unit.objects.filter(study=study, role=Unit.Role.PRODUCTION).annotate(
        n_labels=Count("labels", filter=Q(labels__purpose=Assignment.Purpose.PRODUCTION))
    )
    states = production.aggregate(
        complete=Count("id", filter=Q(n_labels__gte=F("overlap"))),
        untouched=Count("id", filter=Q(n_labels=0, open_slots=F("overlap"))),
        total=Count("id"),
        labelled=Sum("n_labels"),
        wanted=Sum("overlap"),
    )
    total, complete, untouched = states["total"], states["complete"], states["untouched"]
    needed = max((states["wanted"] or 0) - (states["labelled"] or 0), 0)
    recent = Label.objects.filter(
        study=study, purpose=Assignment.Purpose.PRODUCTION, created_at__gte=now - PACE_WINDOW
    ).count()
    days = needed / recent if recent else None
    return Progress(
        untouched=untouched,
        in_progress=total - complete - untouched,
        complete=complete,
        by_role=by_role,
        labels_needed=needed,
        labels_last_day=recent,
        days_to_finish=days,
    )


@dataclass(frozen=True)
class AnnotatorRow:
    username: str
    pool: str
    production: int
    other: int  # gold, repeats, attention, qualification, calibration: all the rest
    open_leases: int
    last_label_at: object
    quota: int | None
    enrolment: Enrolment


def annotator_rows(study: Study, now=None) -> list[AnnotatorRow]:
    """One row per enrolled annotator: their labels by kind of work, open lease, last label."""
    now = now or timezone.now()
    labels = {
        row["annotator"]: row
        for row in Label.objects.filter(study=study)
        .values("annotator")
        .annotate(
            production=Count("id", filter=Q(purpose=Assignment.Purpose.PRODUCTION)),
            total=Count("id"),
            last=Max("created_at"),
        )
    }
    leases = dict(
        Assignment.objects.filter(study=study, status=Assignment.Status.LEASED, expires_at__gt=now)
        .values_list("annotator")
        .annotate(n=Count("id"))
    )
    rows = []
    for e in Enrolment.objects.filter(study=study).select_related("user").order_by("created_at"):
        got = labels.get(e.user_id, {})
        rows.append(
            AnnotatorRow(
                username=e.user.get_username(),
                pool=e.get_pool_display(),
                production=got.get("production", 0),
                other=got.get("total", 0) - got.get("production", 0),
                open_leases=leases.get(e.user_id, 0),
                last_label_at=got.get("last"),
                quota=e.quota if e.quota is not None else study.quota_per_annotator,
                enrolment=e,
            )
        )
    return rows


# What each platform appends to the study URL, in its own placeholder syntax.
CROWD_QUERY = {
    Study.CrowdPlatform.PROLIFIC: (
        "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
    ),
    # MTurk adds workerId, assignmentId and hitId to an ExternalQuestion URL by itself.
    Study.CrowdPlatform.MTURK: "",
}


def crowd_entry_link(study: Study, site_root: str) -> str:
    """The study URL to paste into Prolific or MTurk ("" when the study has no crowd platform).
    `site_root` is this site's absolute root URL, e.g. "https://concord.example.org/"."""
    if not study.crowd_platform:
        return ""
    from django.urls import reverse

    path = reverse("crowd-entry", args=[study.token])
    return site_root.rstrip("/") + path + CROWD_QUERY[study.crowd_platform]


def may_deactivate(lead, user, workspace: Workspace) -> bool:
    """A lead may close an account only if it belongs to their workspace alone and is not staff
    or a lead (staff may close any non-staff account): no lead can lock someone out elsewhere."""
    if user.is_staff or user.is_superuser or user.pk == lead.pk:
        return False
    if lead.is_staff:
        return True
    memberships = Membership.objects.filter(user=user)
    return (
        not memberships.exclude(workspace=workspace).exists()
        and not memberships.filter(role=Membership.Role.LEAD).exists()
    )
