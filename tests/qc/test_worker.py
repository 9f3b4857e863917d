"""A real Celery worker (Redis, PostgreSQL) recomputes reports, and survives being killed.

Redis redelivers an unacknowledged acks_late message only after the visibility timeout (an hour
in settings), so after the SIGKILL the test re-sends the task, as the beat safety net would.
"""

import os
import signal
import time

import pytest
from django.urls import reverse

from annotation.models import Membership
from concord.celery import app as celery_app
from qc import services
from qc.models import QualityReport, RecomputeState
from tests.conftest import start_worker, wait_for
from tests.factories import MembershipFactory
from tests.qc import simulate
from tests.qc.labels import add_labels

pytestmark = [pytest.mark.worker, pytest.mark.postgres, pytest.mark.redis]


def summary(study, label_count):
    return QualityReport.objects.filter(
        study=study, kind=QualityReport.SUMMARY, label_count=label_count
    ).first()


def test_worker_recomputes_after_labels_arrive_and_the_page_shows_the_new_numbers(
    worker_process, broker_mode, settings, client
):
    settings.CONCORD_QC_DEBOUNCE_SECONDS = 0.5
    study, _ = simulate.categorical_study(n_prompts=12)
    people = simulate.annotators(2, prefix="late")
    units = list(study.units.order_by("id"))
    add_labels(study, [{"unit": units[0], "annotator": people[0], "choice": "unsafe"}], signal=True)
    n = study.labels.count()
    first = wait_for(lambda: summary(study, n), timeout=60)

    client.force_login(MembershipFactory(workspace=study.workspace, role=Membership.Role.LEAD).user)
    page = client.get(reverse("study-dashboard", args=[study.token])).content.decode()
    assert f'data-fact="labels">{n}<' in page

    add_labels(
        study,
        [{"unit": u, "annotator": people[1], "choice": "safe"} for u in units[1:6]],
        signal=True,
    )
    second = wait_for(lambda: summary(study, n + 5), timeout=60)
    assert second.fingerprint != first.fingerprint
    page = client.get(reverse("study-dashboard", args=[study.token])).content.decode()
    assert f'data-fact="labels">{n + 5}<' in page, worker_process.log_path.read_text()


@pytest.mark.filterwarnings("ignore::celery.exceptions.AlwaysEagerIgnored")
def test_killing_the_worker_mid_task_keeps_the_previous_report_and_the_rerun_completes(
    transactional_db, tmp_path
):
    study, _ = simulate.categorical_study(n_prompts=10)
    services.recompute(study.pk)  # the previous report
    before = set(QualityReport.objects.values_list("id", "fingerprint"))
    (person,) = simulate.annotators(1, prefix="kill")
    add_labels(study, [{"unit": study.units.first(), "annotator": person, "choice": "safe"}])
    n = study.labels.count()

    queue = f"test-kill-{os.getpid()}-{time.monotonic_ns()}"
    log = tmp_path / "worker.log"
    slow = start_worker(queue, log, CONCORD_QC_TEST_PAUSE_SECONDS=120)
    try:
        celery_app.send_task("qc.tasks.recompute_study", args=[study.pk], queue=queue)
        wait_for(
            lambda: RecomputeState.objects.filter(study=study, stage="storing").exists(), timeout=60
        )
        os.kill(slow.pid, signal.SIGKILL)
        slow.wait(timeout=20)
    finally:
        if slow.poll() is None:
            slow.kill()
    assert set(QualityReport.objects.values_list("id", "fingerprint")) == before
    state = RecomputeState.objects.get(study=study)
    assert state.running  # started, never finished: the page can say so

    fresh = start_worker(queue, log)
    try:
        celery_app.send_task("qc.tasks.recompute_study", args=[study.pk], queue=queue)
        report = wait_for(lambda: summary(study, n), timeout=60)
    finally:
        fresh.terminate()
        fresh.wait(timeout=20)
    assert QualityReport.objects.filter(fingerprint=report.fingerprint).count() == 2  # both rows
    assert RecomputeState.objects.get(study=study).progress == 100, log.read_text()
