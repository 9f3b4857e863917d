"""Redis outages and lost tasks, against a real Redis this test starts and stops, a real worker
and PostgreSQL: annotators keep working, labels commit, and recomputation catches up.

A private redis-server (on a free loopback port, no persistence, `noeviction`) serves as both
the cache (sessions read through it) and the broker, so stopping it is a real outage of both,
and restarting it loses its queue, as a Redis restart without persistence does.
"""

import os
import signal
import socket
import subprocess
import time
import uuid
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotation.models import Label, Membership
from concord.celery import app as celery_app
from qc import selectors, services
from qc.models import QualityReport, RecomputeState, WorkerHeartbeat
from tests.conftest import start_worker, wait_for
from tests.factories import MembershipFactory, enrol, make_study

pytestmark = [pytest.mark.worker, pytest.mark.postgres, pytest.mark.redis]


class PrivateRedis:
    def __init__(self, tmp_path):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.dir, self.proc = tmp_path, None

    def url(self, db: int) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def start(self):
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--maxmemory-policy", "noeviction", "--dir", str(self.dir)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        wait_for(lambda: self._up(), timeout=20, interval=0.1)

    def _up(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                return True
        except OSError:
            return False

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)


def _use_broker(url: str, queue: str, eager: bool):
    conf = celery_app.conf
    old = (conf.broker_write_url, conf.task_default_queue, conf.task_always_eager)
    conf.update(
        broker_url=url,
        broker_write_url=url,
        broker_read_url=url,
        task_default_queue=queue,
        task_always_eager=eager,
    )
    celery_app._after_fork()  # forget pooled connections to the old broker
    return old


@pytest.fixture
def outage_world(transactional_db, settings, tmp_path):
    """A private Redis as cache and broker, a real worker on it (1 s heartbeat), and an annotator
    with an open session."""
    redis = PrivateRedis(tmp_path)
    redis.start()
    settings.CACHES = {
        "default": {
            "BACKEND": "concord.cache.RedisCache",
            "LOCATION": redis.url(1),
            "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 1.0},
        }
    }
    settings.SESSION_ENGINE = "concord.sessions"
    settings.CONCORD_QC_AUTO_RECOMPUTE = True
    settings.CONCORD_QC_DEBOUNCE_SECONDS = 0.2
    import concord.sessions

    concord.sessions._skip_cache_until = 0.0
    queue = f"outage-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    old = _use_broker(redis.url(0), queue, eager=False)
    log = tmp_path / "worker.log"
    workers = []

    def supervise():
        """Start the worker, or start it again if it exited, as compose's `restart:` does
        (kombu's Redis transport can die restoring an unacked message when Redis vanishes)."""
        if not workers or workers[-1].poll() is not None:
            workers.append(
                start_worker(
                    queue,
                    log,
                    CELERY_BROKER_URL=redis.url(0),
                    CONCORD_WORKER_HEARTBEAT_SECONDS=1,
                    CONCORD_QC_DEBOUNCE_SECONDS=0.2,
                )
            )

    supervise()
    study = make_study(n_prompts=6)
    user = enrol(study).user
    client = Client()
    client.force_login(user)
    try:
        yield {
            "redis": redis,
            "study": study,
            "user": user,
            "client": client,
            "log": log,
            "supervise": supervise,
            "workers": workers,
        }
    finally:
        for worker in workers:
            worker.terminate()
            try:
                worker.wait(timeout=20)
            except subprocess.TimeoutExpired:
                worker.kill()
        redis.stop()
        _use_broker(*old)


def submit_next(client, study) -> int:
    task = client.get(reverse("api-work-next", args=[study.token]))
    assert task.status_code == 200
    token = task.json()["token"]
    return client.post(
        reverse("api-work-submit", args=[study.token, token]),
        {"choice": "safe"},
        content_type="application/json",
        headers={"Idempotency-Key": str(uuid.uuid4())},
    ).status_code


def report_with(study, n: int):
    return QualityReport.objects.filter(study=study, kind="study", label_count=n).first()


def test_a_redis_outage_keeps_annotators_working_and_recomputation_catches_up(outage_world):
    w = outage_world
    study, client = w["study"], w["client"]
    assert submit_next(client, study) == 200
    wait_for(lambda: report_with(study, 1), timeout=60)  # the worker is up and running
    assert wait_for(lambda: WorkerHeartbeat.objects.exists(), timeout=30)

    w["redis"].stop()  # cache and broker gone
    page = client.get(reverse("work-task", args=[study.token]))
    assert page.status_code == 200  # the session is read from the database
    assert submit_next(client, study) == 200  # and the label commits
    assert submit_next(client, study) == 200
    assert Label.objects.filter(study=study).count() == 3
    state = RecomputeState.objects.get(study=study)
    assert state.owed_since is not None and state.pending_since is None  # owed, not stuck
    # A fresh sign-in works too (the session is written to the database).
    other = Client()
    assert (
        other.post(
            reverse("login"), {"username": w["user"].username, "password": "pw-for-tests-1"}
        ).status_code
        == 302
    )
    assert other.get("/").status_code == 200

    w["redis"].start()  # back, with an empty queue
    time.sleep(3)
    w["supervise"]()
    report = wait_for(lambda: report_with(study, 3), timeout=90)
    assert report is not None, w["log"].read_text()
    assert RecomputeState.objects.get(study=study).owed_since is None


def test_signing_out_during_an_outage_is_not_undone_by_the_cache_coming_back(
    outage_world, settings
):
    settings.CONCORD_SESSION_CACHE_SECONDS = 2
    w = outage_world
    client = Client()
    client.force_login(w["user"])
    assert client.get("/").status_code == 200  # cached now
    cookie = client.cookies["sessionid"].value
    w["redis"].stop()
    assert client.post(reverse("logout")).status_code == 302  # deleted from the database
    w["redis"].start()
    time.sleep(2.5)  # the cache entry's bounded life (it could not be deleted while Redis was down)
    import concord.sessions

    concord.sessions._skip_cache_until = 0.0
    replay = Client()
    replay.cookies["sessionid"] = cookie
    assert replay.get("/").status_code == 302


def test_a_marker_whose_task_the_broker_lost_is_requeued_by_the_worker(outage_world):
    w = outage_world
    study = w["study"]
    assert submit_next(w["client"], study) == 200
    wait_for(lambda: report_with(study, 1), timeout=60)
    # A marker under a task id no queue holds (its message went with a Redis restart).
    RecomputeState.objects.filter(study=study).update(
        pending_since=timezone.now() - timedelta(minutes=2), task_id="lost-" + uuid.uuid4().hex
    )
    from tests.factories import UserFactory
    from tests.qc.labels import add_labels

    unit = study.units.exclude(labels__annotator=w["user"]).first()
    add_labels(study, [{"unit": unit, "annotator": UserFactory(), "choice": "unsafe"}], signal=True)
    # Per-label scheduling is refused by the marker; the live worker finds the task lost.
    assert wait_for(lambda: report_with(study, 2), timeout=90) is not None, w["log"].read_text()


def test_recompute_now_always_starts_a_run_or_says_why(outage_world):
    w = outage_world
    study = w["study"]
    lead = MembershipFactory(workspace=study.workspace, role=Membership.Role.LEAD).user
    lead_client = Client()
    lead_client.force_login(lead)
    url = reverse("study-recompute", args=[study.token])
    RecomputeState.objects.update_or_create(
        study=study,
        defaults={"pending_since": timezone.now(), "task_id": "gone-" + uuid.uuid4().hex},
    )
    answer = lead_client.post(url, headers={"HX-Request": "true"}).content.decode()
    assert "queued" in answer.lower()
    state = RecomputeState.objects.get(study=study)
    assert not state.task_id.startswith("gone-")  # a new task replaced the lost one
    wait_for(lambda: RecomputeState.objects.get(study=study).finished_at, timeout=90)

    w["redis"].stop()
    answer = lead_client.post(url, headers={"HX-Request": "true"})
    assert answer.status_code == 200
    assert "cannot be reached" in answer.content.decode()


def test_a_run_whose_worker_died_is_shown_as_stopped_not_storing_forever(
    transactional_db, settings, client
):
    settings.CONCORD_QC_HEARTBEAT_STALE_SECONDS = 60
    study = make_study(n_prompts=2)
    now = timezone.now()
    RecomputeState.objects.create(
        study=study,
        started_at=now - timedelta(minutes=5),
        heartbeat_at=now - timedelta(minutes=4),
        stage="storing",
        progress=95,
        run_task_id="dead-run",
    )
    state = selectors.recompute_state(study)
    assert selectors.run_status(state) == "stalled"
    lead = MembershipFactory(workspace=study.workspace, role=Membership.Role.LEAD).user
    client.force_login(lead)
    html = client.get(reverse("study-recompute-progress", args=[study.token])).content.decode()
    assert "stopped" in html and "hx-trigger" not in html  # said plainly, and no endless polling
    outcome = services.request_recompute(study, lead)  # eager here: the run happens now
    assert outcome.started
    state = selectors.recompute_state(study)
    assert selectors.run_status(state) == "idle" and state.progress == 100


def test_a_running_worker_is_seen_without_any_task_and_a_stopped_one_is_not(
    transactional_db, tmp_path, settings
):
    queue = f"health-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    worker = start_worker(queue, tmp_path / "worker.log", CONCORD_WORKER_HEARTBEAT_SECONDS=1)
    try:
        beat = wait_for(
            lambda: WorkerHeartbeat.objects.filter(hostname__contains=queue).first(), timeout=90
        )
        first = beat.seen_at
        wait_for(
            lambda: WorkerHeartbeat.objects.get(pk=beat.pk).seen_at > first, timeout=30
        )  # refreshed by the loop, not by tasks (none was sent)
    finally:
        worker.terminate()
        worker.wait(timeout=30)
    assert not WorkerHeartbeat.objects.filter(hostname__contains=queue).exists()
