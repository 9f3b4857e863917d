"""Celery tasks of the quality-control side: recomputations and the worker heartbeat.

Task arguments are JSON only; every task is safe to run twice.
"""

from celery import shared_task
from django.utils import timezone

from qc.models import WorkerHeartbeat


@shared_task(name="qc.tasks.heartbeat", bind=True)
def heartbeat(self) -> str:
    """Record that a worker (or the eager in-process runner) ran a task against the database."""
    hostname = self.request.hostname or "eager"
    WorkerHeartbeat.objects.update_or_create(
        hostname=hostname, defaults={"seen_at": timezone.now()}
    )
    return hostname


@shared_task(name="qc.tasks.recompute_all_live_studies")
def recompute_all_live_studies() -> int:
    """Safety net run by Celery beat; the quality-report pipeline fills this in."""
    heartbeat.delay()
    return 0
