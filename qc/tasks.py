"""Celery tasks of the quality-control side: report recomputations and the worker heartbeat.

Task arguments are JSON only; every task is safe to run twice (reports are keyed by snapshot).
"""

from celery import shared_task
from django.utils import timezone

from annotation.models import Study
from qc.models import WorkerHeartbeat


def _beat(hostname: str | None) -> str:
    hostname = hostname or "eager"
    WorkerHeartbeat.objects.update_or_create(
        hostname=hostname, defaults={"seen_at": timezone.now()}
    )
    return hostname


@shared_task(name="qc.tasks.heartbeat", bind=True)
def heartbeat(self) -> str:
    """Record that a worker (or the eager in-process runner) ran a task against the database."""
    return _beat(self.request.hostname)


@shared_task(
    name="qc.tasks.recompute_study",
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
)
def recompute_study(self, study_id: int) -> str:
    """Recompute one study's report for its current snapshot (no-op if already stored)."""
    from qc import services

    if not self.request.is_eager:
        _beat(self.request.hostname)
    return services.recompute(int(study_id))


@shared_task(name="qc.tasks.recompute_all_live_studies")
def recompute_all_live_studies() -> int:
    """Safety net run by Celery beat: schedule every open study (runs skip stored snapshots)."""
    from qc import services

    heartbeat.delay()
    open_statuses = [Study.Status.LIVE, Study.Status.PAUSED, Study.Status.QUALIFYING]
    queued = 0
    for study_id in Study.objects.filter(status__in=open_statuses).values_list("id", flat=True):
        queued += services.schedule_recompute(study_id, countdown=0)
    return queued
