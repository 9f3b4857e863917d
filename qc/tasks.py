"""Celery tasks of the quality-control side: report recomputations and the worker heartbeat.

Task arguments are JSON only; every task is safe to run twice (reports are keyed by snapshot).

Worker health is measured, not guessed: every worker process runs a heartbeat loop (started on
`worker_ready`) that records its hostname every CONCORD_WORKER_HEARTBEAT_SECONDS in
WorkerHeartbeat, and removes it on a clean shutdown. The same loop re-queues what the broker lost
(markers whose task is in no queue and with no worker) and what could not be queued while the
broker was down, so both are caught up within seconds of the broker's return.
"""

import logging
import os
import socket
import threading

from celery import shared_task
from celery.signals import worker_ready, worker_shutdown
from django.conf import settings
from django.db import close_old_connections, connections
from django.utils import timezone

from annotation.models import Study
from qc.models import WorkerHeartbeat

logger = logging.getLogger(__name__)


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

    if self.request.is_eager:
        return services.recompute(int(study_id))
    _beat(self.request.hostname)
    return services.recompute(int(study_id), task_id=self.request.id or "")


@shared_task(name="qc.tasks.recompute_all_live_studies")
def recompute_all_live_studies() -> int:
    """Safety net run by Celery beat: schedule every open study (runs skip stored snapshots)."""
    from qc import services

    heartbeat.delay()
    services.reclaim_lost_markers()
    open_statuses = [Study.Status.LIVE, Study.Status.PAUSED, Study.Status.QUALIFYING]
    queued = 0
    for study_id in Study.objects.filter(status__in=open_statuses).values_list("id", flat=True):
        queued += services.schedule_recompute(study_id, countdown=0)
    return queued


# --- the worker's heartbeat loop ----------------------------------------------------------------

_loop_stop = threading.Event()


def heartbeat_seconds() -> float:
    return float(getattr(settings, "CONCORD_WORKER_HEARTBEAT_SECONDS", 15))


def heartbeat_once(hostname: str) -> None:
    """One tick: record this worker as alive, then catch up lost and owed recomputations."""
    from qc import services

    close_old_connections()
    _beat(hostname)
    try:
        services.catch_up_owed()
        services.reclaim_lost_markers()
    except services.BrokerUnavailable:
        pass  # the broker is still away: the next tick tries again
    except Exception:
        logger.warning("Catching up recomputations failed", exc_info=True)


def _loop(hostname: str) -> None:
    try:
        while True:
            try:
                heartbeat_once(hostname)
            except Exception:
                logger.warning("Worker heartbeat failed", exc_info=True)
            if _loop_stop.wait(heartbeat_seconds()):
                break
    finally:
        connections.close_all()


def _hostname(sender) -> str:
    return getattr(sender, "hostname", None) or f"worker@{socket.gethostname()}:{os.getpid()}"


_loop_thread: threading.Thread | None = None


@worker_ready.connect(dispatch_uid="qc.worker_heartbeat_start")
def _start_heartbeat(sender=None, **kwargs) -> None:
    """Start this worker's heartbeat loop once (worker_ready fires again after a reconnect)."""
    global _loop_thread
    if _loop_thread is not None and _loop_thread.is_alive():
        return
    _loop_stop.clear()
    _loop_thread = threading.Thread(
        target=_loop, args=(_hostname(sender),), name="concord-heartbeat", daemon=True
    )
    _loop_thread.start()


@worker_shutdown.connect(dispatch_uid="qc.worker_heartbeat_stop")
def _stop_heartbeat(sender=None, **kwargs) -> None:
    _loop_stop.set()
    try:
        WorkerHeartbeat.objects.filter(hostname=_hostname(sender)).delete()
    except Exception:
        logger.warning("Could not remove this worker's heartbeat", exc_info=True)
