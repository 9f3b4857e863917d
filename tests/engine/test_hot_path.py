"""The work loop's short cuts keep every rule: sign-in checks, texts, keys, and qc scheduling."""

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext, override_settings
from django.urls import reverse

from annotation import api
from annotation.models import Assignment, Label
from annotation.services import assignment as engine
from annotation.services.submission import submit_label
from concord.celery import app as celery_app
from qc import services as qc_services
from qc import tasks as qc_tasks
from qc.models import RecomputeState
from tests.factories import enrol, make_study

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]


def next_url(study):
    return reverse("api-work-next", args=[study.token])


def signed_in(study):
    e = enrol(study)
    client = Client()
    client.force_login(e.user)
    return e, client


def test_a_password_change_signs_the_api_session_out():
    study = make_study(n_prompts=2)
    e, client = signed_in(study)
    assert client.get(next_url(study)).status_code == 200
    e.user.set_password("a-new-password-123")
    e.user.save()
    assert client.get(next_url(study)).status_code == 401


def test_a_password_change_signs_the_api_session_out_of_submit_too():
    study = make_study(n_prompts=2)
    e, client = signed_in(study)
    token = client.get(next_url(study)).json()["token"]
    e.user.set_password("a-new-password-123")
    e.user.save()
    response = client.post(
        reverse("api-work-submit", args=[study.token, token]),
        data=json.dumps({"choice": "safe"}),
        content_type="application/json",
        headers={"Idempotency-Key": str(uuid.uuid4())},
    )
    assert response.status_code == 401
    assert not Label.objects.exists()
    assert Assignment.objects.get(token=token).status == Assignment.Status.LEASED


def test_a_deactivated_annotator_gets_401():
    study = make_study(n_prompts=2)
    e, client = signed_in(study)
    e.user.is_active = False
    e.user.save()
    assert client.get(next_url(study)).status_code == 401


def test_a_signed_out_session_gets_401():
    study = make_study(n_prompts=2)
    _, client = signed_in(study)
    client.logout()
    assert client.get(next_url(study)).status_code == 401


def test_a_study_the_annotator_is_not_enrolled_in_is_404():
    study, other = make_study(n_prompts=1), make_study(n_prompts=1)
    _, client = signed_in(study)
    assert client.get(next_url(other)).status_code == 404
    assert client.get(reverse("api-work-next", args=["no-such-token"])).status_code == 404


def test_the_one_statement_sign_in_gives_the_same_user_and_study_as_django():
    study = make_study(n_prompts=1)
    e, client = signed_in(study)
    request = client.get(next_url(study)).wsgi_request
    assert request.user == e.user and request.user.is_authenticated
    user, found = api._session_annotator_and_study(request_with_session(client), study.token)
    assert user == e.user and found == study
    assert found.label_scheme == study.label_scheme and found.status == study.status


def request_with_session(client):
    from django.contrib.sessions.backends.db import SessionStore
    from django.test import RequestFactory

    request = RequestFactory().get("/")
    request.session = SessionStore(client.cookies["sessionid"].value)
    return request


@override_settings(
    SESSION_ENGINE="django.contrib.sessions.backends.cached_db",
    CACHES={"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}},
)
def test_cached_sessions_sign_in_and_out_like_database_sessions():
    study = make_study(n_prompts=2)
    _, client = signed_in(study)
    assert client.get(next_url(study)).status_code == 200
    client.logout()
    assert client.get(next_url(study)).status_code == 401


def test_texts_read_at_claim_time_are_the_texts_of_the_presentation():
    study = make_study(n_prompts=3)
    e = enrol(study)
    a = engine.next_assignment(e.user, study)
    assert a.texts == api.task_texts(a.presentation)
    again = engine.next_assignment(e.user, study)  # the open lease, re-read: texts looked up
    assert again.pk == a.pk and api.task_payload(again) == api.task_payload(a)


def answer(user, a, key):
    return submit_label(
        annotator=user, assignment_token=a.token, data={"choice": "safe"}, idempotency_key=key
    )


def test_another_annotators_key_is_a_conflict_and_stores_nothing():
    study = make_study(n_prompts=2)
    first, second = enrol(study), enrol(study)
    key = uuid.uuid4()
    assert answer(first.user, engine.next_assignment(first.user, study), key).status == "stored"
    theirs = engine.next_assignment(second.user, study)
    result = answer(second.user, theirs, key)
    assert result.status == "conflict" and result.label is None
    assert "nothing was saved" in result.message
    theirs.refresh_from_db()
    assert theirs.status == Assignment.Status.LEASED and Label.objects.count() == 1


def test_a_key_reused_on_a_later_task_is_a_conflict_and_leaves_the_task_open():
    study = make_study(n_prompts=3)
    e = enrol(study)
    key = uuid.uuid4()
    answer(e.user, engine.next_assignment(e.user, study), key)
    later = engine.next_assignment(e.user, study)
    result = answer(e.user, later, key)
    assert result.status == "conflict" and result.label is None
    later.refresh_from_db()
    assert later.status == Assignment.Status.LEASED and Label.objects.count() == 1
    # Sent again under a key of its own, the answer is stored.
    assert answer(e.user, later, uuid.uuid4()).status == "stored"


@pytest.fixture
def queued(monkeypatch):
    """A broker, as far as scheduling can tell: tasks recorded, not run, eager mode off."""
    calls = []
    monkeypatch.setattr(
        qc_tasks.recompute_study, "apply_async", lambda *a, **kw: calls.append((a, kw))
    )
    monkeypatch.setitem(celery_app.conf, "task_always_eager", False)
    monkeypatch.setattr(qc_services, "_queued_until", {})
    return calls


@pytest.mark.django_db(transaction=True)
def test_labels_in_the_first_half_of_a_queued_countdown_ask_nothing_of_the_database(queued):
    study = make_study(n_prompts=1)
    assert qc_services.schedule_recompute(study.pk) is True
    with CaptureQueriesContext(connection) as queries:
        assert qc_services.schedule_recompute(study.pk) is False
    assert len(queries) == 0 and len(queued) == 1


@pytest.mark.django_db(transaction=True)
def test_after_the_half_countdown_the_marker_decides_in_one_statement(queued):
    study = make_study(n_prompts=1)
    assert qc_services.schedule_recompute(study.pk) is True
    qc_services._queued_until[study.pk] = 0.0  # the half countdown has passed
    with CaptureQueriesContext(connection) as queries:
        assert qc_services.schedule_recompute(study.pk) is False  # still pending
    assert len(queries) == 1
    RecomputeState.objects.filter(study=study).update(pending_since=None)  # a run started
    qc_services._queued_until[study.pk] = 0.0
    assert qc_services.schedule_recompute(study.pk) is True
    assert len(queued) == 2
    assert RecomputeState.objects.get(study=study).pending_since is not None


@pytest.mark.django_db(transaction=True)
def test_eager_runs_keep_no_in_process_window(monkeypatch):
    calls = []
    monkeypatch.setattr(
        qc_tasks.recompute_study, "apply_async", lambda *a, **kw: calls.append((a, kw))
    )
    monkeypatch.setitem(celery_app.conf, "task_always_eager", True)
    study = make_study(n_prompts=1)
    assert qc_services.schedule_recompute(study.pk) is True
    assert study.pk not in qc_services._queued_until


def test_cached_sessions_without_a_shared_cache_are_refused():
    env = dict(os.environ, SESSION_ENGINE="django.contrib.sessions.backends.cached_db")
    env.pop("CACHE_URL", None)
    code = "import concord.settings"
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert run.returncode != 0 and "needs a shared CACHE_URL" in run.stderr


def test_submit_through_the_api_answers_json(client):
    study = make_study(n_prompts=2)
    e = enrol(study)
    client.force_login(e.user)
    task = client.get(next_url(study)).json()
    response = client.post(
        reverse("api-work-submit", args=[study.token, task["token"]]),
        data=json.dumps({"choice": "safe"}),
        content_type="application/json",
        headers={"Idempotency-Key": str(uuid.uuid4())},
    )
    assert response.status_code == 200 and response.json()["status"] == "stored"


@pytest.mark.django_db
def test_beat_reclaims_expired_leases_exactly_once():
    from datetime import timedelta

    from django.utils import timezone

    from annotation.models import Assignment, Unit
    from annotation.services.assignment import next_assignment
    from annotation.tasks import reclaim_expired_leases
    from tests.factories import enrol, make_study

    study = make_study(n_prompts=2, overlap=1)
    person = enrol(study).user
    lease = next_assignment(person, study)
    Assignment.objects.filter(pk=lease.pk).update(expires_at=timezone.now() - timedelta(seconds=1))

    assert reclaim_expired_leases.apply().get() == 1
    assert reclaim_expired_leases.apply().get() == 0
    assert Unit.objects.get(pk=lease.unit_id).open_slots == 1


@pytest.fixture
def coalescing(queued, settings, monkeypatch):
    """The per-process coalescing of recompute checks, with a short window and a clean slate."""
    settings.CONCORD_QC_CHECK_EVERY_SECONDS = 0.3
    monkeypatch.setattr(qc_services, "_checked_until", {})
    monkeypatch.setattr(qc_services, "_unchecked", set())
    monkeypatch.setattr(qc_services, "_flusher_armed", [False])
    return queued


def wait_until(predicate, seconds=5.0):
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


@pytest.mark.django_db(transaction=True)
def test_labels_between_checks_ask_nothing_and_a_later_check_covers_them(coalescing):
    study = make_study(n_prompts=1)
    qc_services.label_committed(study.pk)  # the first label checks: claims and queues a run
    assert len(coalescing) == 1
    qc_services._queued_until.clear()  # the half countdown has passed: the run may start
    RecomputeState.objects.filter(study=study).update(pending_since=None)  # and it did
    with CaptureQueriesContext(connection) as queries:
        qc_services.label_committed(study.pk)  # committed after the run's snapshot
    assert len(queries) == 0 and len(coalescing) == 1
    # No label follows it: the timer checks the marker and queues the run that covers it.
    assert wait_until(lambda: len(coalescing) == 2)
    assert RecomputeState.objects.get(study=study).pending_since is not None


@pytest.mark.django_db(transaction=True)
def test_the_next_label_after_the_window_checks_for_those_before_it(coalescing, settings):
    settings.CONCORD_QC_CHECK_EVERY_SECONDS = 0.2
    study = make_study(n_prompts=1)
    qc_services.label_committed(study.pk)
    qc_services._queued_until.clear()
    RecomputeState.objects.filter(study=study).update(pending_since=None)
    qc_services.label_committed(study.pk)  # remembered
    qc_services._checked_until[study.pk] = 0.0  # the window has passed
    qc_services.label_committed(study.pk)  # checks at once, for itself and the one before
    assert len(coalescing) == 2 and study.pk not in qc_services._unchecked


def test_a_session_of_another_sign_in_backend_goes_the_standard_way_with_the_same_rules(settings):
    # The one-statement sign-in reads ModelBackend sessions only; any other is Django's to read.
    other = "django.contrib.auth.backends.AllowAllUsersModelBackend"
    settings.AUTHENTICATION_BACKENDS = [*settings.AUTHENTICATION_BACKENDS, other]
    study, elsewhere = make_study(n_prompts=2), make_study(n_prompts=1)
    e = enrol(study)
    client = Client()
    client.force_login(e.user, backend=other)
    task = client.get(next_url(study))
    assert task.status_code == 200 and task.json()["task"]["kind"] == "output"
    assert client.get(next_url(elsewhere)).status_code == 404
    response = client.post(
        reverse("api-work-submit", args=[study.token, task.json()["token"]]),
        data=json.dumps({"choice": "safe"}),
        content_type="application/json",
        headers={"Idempotency-Key": str(uuid.uuid4())},
    )
    assert response.status_code == 200 and response.json()["status"] == "stored"
    assert Label.objects.get().annotator == e.user


@pytest.mark.parametrize("kind", ["categorical", "pairwise"])
def test_a_lease_taken_in_one_statement_stores_the_presentation_python_draws(kind):
    # On PostgreSQL a production lease of an output or pair unit is drawn in SQL (_claim_sql):
    # what is stored must be what presentation.draw gives, on both sides of a pair.
    from annotation.models import Enrolment, Unit
    from annotation.presentation import Member, draw

    study = make_study(task_kind=kind, n_prompts=8, gold_rate=0, repeat_rate=0)
    e = enrol(study)
    seen = set()
    for _ in range(8):
        a = engine.next_assignment(e.user, study)
        stored = Assignment.objects.get(pk=a.pk)
        unit = Unit.objects.get(pk=a.unit_id)
        members = [
            Member(m.output_id, m.output.system_id, m.output.prompt_id)
            for m in unit.members.select_related("output").order_by("position")
        ]
        seed = Enrolment.objects.get(pk=e.pk).queue_seed
        assert stored.presentation == a.presentation == draw(unit.kind, members, seed, a.position)
        assert stored.status == "leased" and stored.token == a.token
        seen.add(str(a.presentation.get("left") == members[0].output_id))
        data = {"choice": "left" if kind == "pairwise" else "safe"}
        result = submit_label(
            annotator=e.user, assignment_token=a.token, data=data, idempotency_key=uuid.uuid4()
        )
        assert result.status == "stored"
    if kind == "pairwise":
        assert seen == {"True", "False"}  # both sides came up


def post_answer(client, study, token, body, key=None):
    return client.post(
        reverse("api-work-submit", args=[study.token, token]),
        data=json.dumps(body),
        content_type="application/json",
        headers={"Idempotency-Key": str(key or uuid.uuid4())},
    )


def test_a_submit_stored_in_one_statement_keeps_every_field_of_the_label():
    # The process read the study on `next`, so the submit cleans the answer first and stores it
    # in the statement that reads the lease (api._one_statement_submit).
    study = make_study(n_prompts=2)
    e, client = signed_in(study)
    task = client.get(next_url(study)).json()
    key = uuid.uuid4()
    timings = {"duration_ms": 1500, "active_ms": 1200, "rendered_at": "2020-01-01T00:00:00Z"}
    body = {"choice": "safe", "extra": "dropped", "timings": timings}
    response = post_answer(client, study, task["token"], body, key)
    assert response.status_code == 400 and response.json()["field"] == "timings.rendered_at"
    assert not Label.objects.exists()  # rolled back: the lease's own check came after the write
    assert Assignment.objects.get(token=task["token"]).status == Assignment.Status.LEASED
    del timings["rendered_at"]
    assert post_answer(client, study, task["token"], body, key).json()["status"] == "stored"
    label = Label.objects.get()
    a = Assignment.objects.get(token=task["token"])
    assert a.status == Assignment.Status.SUBMITTED and a.closed_at == label.created_at
    assert (label.assignment_id, label.unit_id, label.annotator_id) == (a.id, a.unit_id, e.user.id)
    assert (label.study_id, label.purpose, label.guide_version_id) == (
        study.id,
        a.purpose,
        a.guide_version_id,
    )
    assert label.idempotency_key == key and label.choice == "safe" and label.score is None
    assert label.value == {"choice": "safe"} and label.exposure == {}
    assert (label.duration_ms, label.active_ms, label.rendered_at) == (1500, 1200, None)
    again = post_answer(client, study, task["token"], {"choice": "safe"}, key)
    assert again.json()["status"] == "duplicate" and Label.objects.count() == 1


def test_a_key_of_another_task_is_a_conflict_through_the_one_statement_submit():
    study = make_study(n_prompts=3)
    _, client = signed_in(study)
    key = uuid.uuid4()
    first = client.get(next_url(study)).json()["token"]
    assert post_answer(client, study, first, {"choice": "safe"}, key).status_code == 200
    later = client.get(next_url(study)).json()["token"]
    response = post_answer(client, study, later, {"choice": "safe"}, key)
    assert response.status_code == 409 and response.json()["status"] == "conflict"
    assert Assignment.objects.get(token=later).status == Assignment.Status.LEASED


def test_a_study_paused_or_rescored_after_next_is_not_written_by_the_one_statement_submit():
    from annotation.models import Study

    study = make_study(n_prompts=3)
    _, client = signed_in(study)
    token = client.get(next_url(study)).json()["token"]
    Study.objects.filter(pk=study.pk).update(status=Study.Status.PAUSED)
    response = post_answer(client, study, token, {"choice": "safe"})
    assert response.status_code == 409 and response.json()["status"] == "paused"
    Study.objects.filter(pk=study.pk).update(
        status=Study.Status.LIVE, label_scheme={"labels": [{"value": "fine", "text": "Fine"}]}
    )
    # The process cleaned "safe" with the scheme it read on next; the study's scheme changed.
    response = post_answer(client, study, token, {"choice": "safe"})
    assert response.status_code == 400 and response.json()["field"] == "choice"
    assert not Label.objects.exists()
    assert post_answer(client, study, token, {"choice": "fine"}).json()["status"] == "stored"


# The hot statements read the session's row themselves and remember, per process, the sign-in
# they decoded from it: what is remembered must never outlive or outrank the row.


def submit_answer(client, study, token):
    return client.post(
        reverse("api-work-submit", args=[study.token, token]),
        data=json.dumps({"choice": "safe"}),
        content_type="application/json",
        headers={"Idempotency-Key": str(uuid.uuid4())},
    )


def session_row(client):
    from django.contrib.sessions.models import Session

    return Session.objects.get(session_key=client.cookies["sessionid"].value)


def test_an_expired_session_row_signs_out_next_and_submit_after_they_were_served():
    from django.utils import timezone

    study = make_study(n_prompts=3)
    _, client = signed_in(study)
    token = client.get(next_url(study)).json()["token"]
    assert submit_answer(client, study, token).status_code == 200
    token = client.get(next_url(study)).json()["token"]  # the sign-in is remembered by now
    row = session_row(client)
    row.expire_date = timezone.now() - timezone.timedelta(seconds=1)
    row.save()
    assert submit_answer(client, study, token).status_code == 401
    assert client.get(next_url(study)).status_code == 401
    assert Label.objects.count() == 1
    assert Assignment.objects.get(token=token).status == Assignment.Status.LEASED


def test_a_session_deleted_elsewhere_signs_out_at_once():
    # Sign-out on another device or by an admin deletes the row; this process had served it.
    study = make_study(n_prompts=3)
    _, client = signed_in(study)
    token = client.get(next_url(study)).json()["token"]
    session_row(client).delete()
    assert submit_answer(client, study, token).status_code == 401
    assert client.get(next_url(study)).status_code == 401
    assert not Label.objects.exists()


def test_a_session_rewritten_for_another_user_serves_that_user_not_the_remembered_one():
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore

    study = make_study(n_prompts=3)
    first, client = signed_in(study)
    second = enrol(study)
    assert client.get(next_url(study)).status_code == 200  # first's sign-in is remembered
    store = SessionStore(client.cookies["sessionid"].value)
    store[SESSION_KEY] = str(second.user.pk)
    store[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    store[HASH_SESSION_KEY] = second.user.get_session_auth_hash()
    store.save()
    response = client.get(next_url(study))
    assert response.status_code == 200
    assert Assignment.objects.get(token=response.json()["token"]).annotator == second.user
    assert submit_answer(client, study, response.json()["token"]).status_code == 200
    assert Label.objects.get().annotator == second.user


def test_a_rotated_secret_key_signs_out_a_session_served_before(settings):
    # The session hash is an HMAC under SECRET_KEY: an accepted hash is remembered only with the
    # key it was made under (api._verified_user), so a rotated key is not served from memory.
    study = make_study(n_prompts=3)
    _, client = signed_in(study)
    token = client.get(next_url(study)).json()["token"]
    assert submit_answer(client, study, token).status_code == 200
    assert client.get(next_url(study)).status_code == 200  # remembered by now
    settings.SECRET_KEY = "a-rotated-key-" + "x" * 50
    assert client.get(next_url(study)).status_code == 401
    assert Label.objects.count() == 1


def test_a_user_row_read_again_unchanged_is_the_instance_made_before_and_a_changed_one_is_new():
    # api._instance hands back the instance made from the same row; any change to the row (here
    # the name, and then the password) makes a new one, and a new password is verified afresh.
    study = make_study(n_prompts=3)
    e, client = signed_in(study)
    first = client.get(next_url(study)).wsgi_request.user
    assert client.get(next_url(study)).wsgi_request.user is first
    e.user.first_name = "Renamed"
    e.user.save()
    renamed = client.get(next_url(study)).wsgi_request.user
    assert renamed is not first and renamed.first_name == "Renamed"
    e.user.set_password("a-new-password-123")
    e.user.save()
    assert client.get(next_url(study)).status_code == 401


def test_a_password_changed_in_this_session_keeps_it_signed_in():
    # update_session_auth_hash rewrites the session's hash under the same key: the new text is
    # read, not the remembered hash, which no longer verifies.
    from django.contrib.auth import HASH_SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore

    study = make_study(n_prompts=3)
    e, client = signed_in(study)
    assert client.get(next_url(study)).status_code == 200
    e.user.set_password("a-new-password-123")
    e.user.save()
    store = SessionStore(client.cookies["sessionid"].value)
    store[HASH_SESSION_KEY] = e.user.get_session_auth_hash()
    store.save()
    token = client.get(next_url(study)).json()["token"]
    assert submit_answer(client, study, token).status_code == 200
    assert Label.objects.get().annotator == e.user


def test_a_tampered_session_row_is_not_trusted():
    study = make_study(n_prompts=3)
    _, client = signed_in(study)
    assert client.get(next_url(study)).status_code == 200
    row = session_row(client)
    row.session_data = row.session_data[:-4] + (
        "AAAA" if row.session_data[-4:] != "AAAA" else "BBBB"
    )
    row.save()
    assert client.get(next_url(study)).status_code == 401


@override_settings(
    SESSION_ENGINE="django.contrib.sessions.backends.cached_db",
    CACHES={"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}},
)
def test_a_remembered_sign_in_reads_no_session_from_the_cache(monkeypatch):
    from django.contrib.sessions.backends.cached_db import SessionStore

    study = make_study(n_prompts=4)
    _, client = signed_in(study)
    loads = []
    load = SessionStore.load
    monkeypatch.setattr(SessionStore, "load", lambda self: loads.append(1) or load(self))
    for _ in range(3):
        token = client.get(next_url(study)).json()["token"]
        assert submit_answer(client, study, token).status_code == 200
    if connection.vendor == "postgresql":
        assert len(loads) == 1  # the first request; the hot statements read the row after it
    else:
        assert len(loads) == 6  # no hot statements on SQLite: Django reads it every time
    client.logout()
    assert client.get(next_url(study)).status_code == 401


def test_work_answers_vary_by_cookie():
    study = make_study(n_prompts=2)
    _, client = signed_in(study)
    response = client.get(next_url(study))
    assert "Cookie" in response.headers["Vary"]
    assert "Cookie" in submit_answer(client, study, response.json()["token"]).headers["Vary"]


@override_settings(SESSION_SAVE_EVERY_REQUEST=True)
def test_sessions_saved_on_every_request_are_saved_by_work_requests_too():
    from django.utils import timezone

    study = make_study(n_prompts=3)
    _, client = signed_in(study)
    assert client.get(next_url(study)).status_code == 200
    row = session_row(client)
    row.expire_date = timezone.now() + timezone.timedelta(minutes=5)
    row.save()
    assert client.get(next_url(study)).status_code == 200
    assert session_row(client).expire_date > timezone.now() + timezone.timedelta(days=1)
