"""Celery tasks of the annotation side: housekeeping that must not wait for a request.

Expired leases return their slots here every minute; the engine also reclaims before it ever
tells an annotator that nothing is left.
"""

from celery import shared_task

from annotation.services.assignment import reclaim_expired


@shared_task(name="annotation.tasks.reclaim_expired_leases")
def reclaim_expired_leases() -> int:
    """Return the slots of every expired production lease to the pool, exactly once each."""
    return reclaim_expired()


# Registered with the worker through this module (Celery autodiscovers `<app>.tasks` only).
from annotation.imports.tasks import run_import_task  # noqa: E402, F401
