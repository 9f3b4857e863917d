"""Imports in a real Celery worker: queued from an upload, and a killed worker publishes nothing."""

import io
import os
import signal
import time

import pytest
from django.db import connection

from annotation.imports import services
from annotation.models import ImportJob, Output
from concord.celery import app as celery_app
from tests.conftest import start_worker, wait_for
from tests.factories import StudyFactory
from tests.imports.helpers import csv_bytes, load_content

pytestmark = [pytest.mark.worker, pytest.mark.postgres, pytest.mark.redis]


def outputs_file(n: int) -> bytes:
    return csv_bytes(
        "id,prompt_id,system,text",
        [f"o{i}{s},p{i},{s},Text {i} {s}" for i in range(n) for s in "ab"],
    )


def insert_in_flight() -> bool:
    """Another session holds rows inserted into annotation_output, uncommitted."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT 1 FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE"
            " c.relname = 'annotation_output' AND l.mode = 'RowExclusiveLock'"
            " AND l.pid <> pg_backend_pid()"
        )
        return cursor.fetchone() is not None


def test_an_upload_is_imported_by_the_worker_and_the_request_only_stores_the_file(
    worker_process, broker_mode, settings, tmp_path
):
    settings.CONCORD_IMPORT_DIR = str(tmp_path)
    study = StudyFactory(status="draft")
    load_content(study, systems=("a", "b"), n_prompts=0)
    services.import_file(
        study,
        "prompts",
        io.BytesIO(csv_bytes("id,text", [f"p{i},P{i}" for i in range(30)])),
        "p.csv",
    )
    job = services.start_import(study, "outputs", "csv", io.BytesIO(outputs_file(30)), "o.csv")
    assert job.status == "queued" and os.path.exists(job.path)
    done = wait_for(lambda: ImportJob.objects.filter(pk=job.pk, status="done").first(), timeout=60)
    assert done.created == 60, worker_process.log_path.read_text()
    assert not os.path.exists(job.path)  # the upload is removed once imported


@pytest.mark.filterwarnings("ignore::celery.exceptions.AlwaysEagerIgnored")
def test_killing_the_worker_mid_publish_publishes_nothing_and_a_rerun_publishes_it_all(
    transactional_db, tmp_path, settings
):
    settings.CONCORD_IMPORT_DIR = str(tmp_path)
    study = StudyFactory(status="draft")
    load_content(study, systems=("a", "b"), n_prompts=0)
    services.import_file(
        study,
        "prompts",
        io.BytesIO(csv_bytes("id,text", [f"p{i},P{i}" for i in range(50)])),
        "p.csv",
    )
    job = services.start_import(
        study, "outputs", "csv", io.BytesIO(outputs_file(50)), "o.csv", enqueue=False
    )

    queue = f"test-import-kill-{os.getpid()}-{time.monotonic_ns()}"
    log = tmp_path / "worker.log"
    slow = start_worker(queue, log, CONCORD_IMPORT_TEST_PAUSE_SECONDS=120)
    try:
        celery_app.send_task("annotation.imports.run_import", args=[job.pk], queue=queue)
        # The worker has inserted the outputs inside its open publish transaction...
        wait_for(insert_in_flight, timeout=60)
        os.kill(slow.pid, signal.SIGKILL)  # ...and dies before committing.
        slow.wait(timeout=20)
    finally:
        if slow.poll() is None:
            slow.kill()
    wait_for(lambda: not insert_in_flight(), timeout=30)
    assert not Output.objects.filter(prompt__study=study).exists(), log.read_text()
    job.refresh_from_db()
    assert job.status == "checking" and not job.finished  # the page can tell it stopped

    fresh = start_worker(queue, log)
    try:
        celery_app.send_task("annotation.imports.run_import", args=[job.pk], queue=queue)
        wait_for(lambda: ImportJob.objects.filter(pk=job.pk, status="done").exists(), timeout=60)
    finally:
        fresh.terminate()
        fresh.wait(timeout=20)
    assert Output.objects.filter(prompt__study=study).count() == 100
    job.refresh_from_db()
    assert (job.created, job.unchanged) == (100, 0)
