"""A real Celery worker process, on Redis and PostgreSQL, runs a task that writes to the DB."""

import pytest

from concord.celery import app as celery_app
from qc.models import WorkerHeartbeat
from tests.conftest import wait_for

pytestmark = [
    pytest.mark.worker,
    pytest.mark.postgres,
    pytest.mark.redis,
    # send_task always goes to the broker, which is the point here, eager test process or not.
    pytest.mark.filterwarnings("ignore::celery.exceptions.AlwaysEagerIgnored"),
]


def test_worker_process_runs_a_task_whose_result_appears_in_the_database(worker_process):
    assert not WorkerHeartbeat.objects.exists()
    celery_app.send_task("qc.tasks.heartbeat", queue=worker_process.queue)

    beat = wait_for(lambda: WorkerHeartbeat.objects.first(), timeout=60)

    assert beat.hostname.startswith(worker_process.queue), worker_process.log_path.read_text()
