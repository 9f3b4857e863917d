"""Who may work where: enrolling annotators, and ending someone's access.

Access to a study as an annotator needs BOTH a membership of the study's workspace and an
enrolment in the study (`annotation.selectors.annotator_studies_for`, and the JSON API's one
statement in `annotation.api`). Ending access keeps every label (labels are append-only) and the
enrolment itself (so re-adding the membership restores the queue where it was); it releases the
person's open leases at once, so their slots go back to the pool, and because every request checks
membership (and Django refuses an inactive user), the next request on any open session is refused.

    enrol(study, user, pool=...)        membership (annotator, if none) + enrolment; idempotent
    remove_membership(workspace, user)  ends access to the workspace's studies; leases freed
    deactivate_user(user)               ends every access of the account; leases freed
"""

from collections import Counter

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from annotation.models import Assignment, Enrolment, Membership, Unit, Workspace
from annotation.models.work import Purpose


@transaction.atomic
def enrol(study, user, pool: str = Enrolment.Pool.TRAINED, **fields) -> Enrolment:
    """Enrol `user` in `study`, making them an annotator member of its workspace if they are not
    a member yet (an existing lead membership is kept as it is)."""
    Membership.objects.get_or_create(
        workspace_id=study.workspace_id, user=user, defaults={"role": Membership.Role.ANNOTATOR}
    )
    enrolment, _ = Enrolment.objects.get_or_create(
        study=study, user=user, defaults={"pool": pool, **fields}
    )
    return enrolment


def release_open_leases(user, workspace: Workspace | None = None) -> int:
    """Close the user's open leases (in one workspace's studies, or everywhere) as expired and
    return their production slots, each exactly once. A submit that holds a lease's row lock is
    waited for: it either commits first (and the lease is no longer open) or finds it closed."""
    now = timezone.now()
    with transaction.atomic():
        qs = Assignment.objects.filter(annotator=user, status=Assignment.Status.LEASED)
        if workspace is not None:
            qs = qs.filter(study__workspace=workspace)
        rows = list(
            qs.select_for_update(of=("self",))
            .order_by("id")
            .values_list("id", "unit_id", "purpose")
        )
        if not rows:
            return 0
        Assignment.objects.filter(
            pk__in=[r[0] for r in rows], status=Assignment.Status.LEASED
        ).update(status=Assignment.Status.EXPIRED, closed_at=now)
        returned = Counter(r[1] for r in rows if r[2] == Purpose.PRODUCTION)
        for unit_id, n in sorted(returned.items()):  # unit id order, as the engine's reclaimer
            Unit.objects.filter(pk=unit_id).update(open_slots=F("open_slots") + n)
    return len(rows)


@transaction.atomic
def remove_membership(workspace: Workspace, user) -> int:
    """Remove the user from the workspace: their annotator access to its studies (and a lead's
    access to its pages) ends at their next request; open leases there are released at once.
    Labels and enrolments stay. Returns how many leases were released."""
    Membership.objects.filter(workspace=workspace, user=user).delete()
    return release_open_leases(user, workspace)


@transaction.atomic
def deactivate_user(user) -> int:
    """Deactivate the account (Django then refuses it on every open session's next request) and
    release all its open leases. Labels stay. Returns how many leases were released."""
    type(user).objects.filter(pk=user.pk).update(is_active=False)
    user.is_active = False
    return release_open_leases(user)
