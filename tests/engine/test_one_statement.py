"""The one-statement claim and submit of PostgreSQL store exactly what the Python path stores."""

import json
import uuid
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.urls import reverse
from django.utils import timezone

from annotation import api
from annotation.models import Assignment, Enrolment, GuideVersion, Label, Unit
from annotation.services import assignment as engine
from annotation.services import setup
from annotation.services.submission import submit_label
from tests.engine.invariants import assert_invariants
from tests.factories import enrol, make_study

pytestmark = pytest.mark.django_db

LEASE_FIELDS = [
    "id",
    "token",
    "study_id",
    "unit_id",
    "annotator_id",
    "purpose",
    "status",
    "position",
    "presentation",
    "repeat_of_id",
    "guide_version_id",
    "leased_at",
    "expires_at",
]
WALK_FIELDS = ["queue_seed", "positions_issued", "walk_pass", "walk_step", "walk_cursor"]


SEED = 4242


def lay_out_keys(study, layout):
    """Production keys spread evenly over the ring, or all in the first segment of the walk of
    an enrolment seeded SEED (so each claim's first probe finds a unit: the one-statement take)."""
    units = list(Unit.objects.filter(study=study, role="production").order_by("id"))
    lo, hi = (0, 1 << engine.KEY_BITS) if layout == "spread" else engine.segment(SEED, 0, 0)
    gap = (hi - lo) // (len(units) + 1)
    for i, unit in enumerate(units):
        unit.shuffle_key = lo + (i + 1) * gap
    Unit.objects.bulk_update(units, ["shuffle_key"])


def work_study(kind, **fields):
    study = make_study(
        task_kind=kind,
        n_prompts=12,
        overlap=2,
        gold_rate=0.25,
        repeat_rate=0.3,
        repeat_min_gap_units=2,
        repeat_min_gap_minutes=0,
        **fields,
    )
    answer = {"choice": "left"} if kind == "pairwise" else {"choice": "safe"}
    for unit in Unit.objects.filter(study=study).order_by("id")[:3]:
        setup.mark_gold(unit, answer)
    GuideVersion.objects.create(study=study, number=1, body="v1")  # each lease names it
    return study, answer


def claims(study, user, answer, start, tasks=16):
    """Claim and answer `tasks` tasks one minute apart; what was served and stored at each."""
    seen = []
    for i in range(tasks):
        now = start + timedelta(minutes=i)
        a = engine.next_assignment(user, study, now=now)
        if a is None:
            seen.append(None)
            continue
        stored = Assignment.objects.get(pk=a.pk)
        # What the claim returns is the lease as stored, with the texts of its presentation.
        assert [getattr(a, f) for f in LEASE_FIELDS] == [getattr(stored, f) for f in LEASE_FIELDS]
        assert a.texts == api.task_texts(a.presentation)
        assert a.guide_version_id == study.guide_versions.get().id
        again = engine.next_assignment(user, study, now=now + timedelta(seconds=30))
        assert (again.pk, again.token, again.presentation) == (a.pk, a.token, a.presentation)
        walk = Enrolment.objects.filter(study=study, user=user).values(*WALK_FIELDS).get()
        assert walk["positions_issued"] == a.position
        if a.purpose == "production":  # the walk goes on just past the unit taken
            assert walk["walk_cursor"] == Unit.objects.get(pk=a.unit_id).shuffle_key + 1
        seen.append(
            (
                [getattr(a, f) for f in LEASE_FIELDS if f not in ("id", "token", "repeat_of_id")],
                a.repeat_of_id is not None,
                walk,
                sorted(Unit.objects.filter(study=study).values_list("id", "open_slots")),
            )
        )
        result = submit_label(
            annotator=user, assignment_token=a.token, data=answer, idempotency_key=uuid.uuid4()
        )
        assert result.status == "stored"
    assert_invariants(study)
    return seen


@pytest.mark.postgres
@pytest.mark.parametrize(
    "kind, quota, layout",
    [
        ("categorical", None, "walk"),
        ("pairwise", None, "walk"),
        ("categorical", None, "spread"),
        ("pairwise", None, "spread"),
        ("categorical", 30, "walk"),
        ("categorical", 30, "spread"),
    ],
)
def test_the_one_statement_claims_serve_and_store_what_the_python_path_does(
    kind, quota, layout, monkeypatch
):
    # On PostgreSQL a production position is taken by one statement (_ProductionClaim), an
    # injected one (gold, repeats) by a first probe that also looks for the open lease, and with
    # a quota the open lease is read first; the Python path (as on SQLite) must agree on every
    # task, presentation, walk and slot. Keys on the walk: each first probe finds a unit (taken
    # in the same statement); spread: most first probes find nothing (the later probes pick).
    study, answer = work_study(kind)
    lay_out_keys(study, layout)
    user = enrol(study, quota=quota, queue_seed=SEED).user
    start = timezone.now().replace(microsecond=0)
    monkeypatch.setattr(engine, "_maybe_reclaim_all", lambda now: None)
    runs = []
    for python in (False, True):
        with monkeypatch.context() as m:
            if python:
                m.setattr(engine, "_pg", lambda: False)
            with transaction.atomic():
                runs.append(claims(study, user, answer, start))
                transaction.set_rollback(True)
    one_statement, python = runs
    assert one_statement == python
    purposes = [step[0][3] for step in python if step]
    assert {"production", "gold", "repeat"} <= set(purposes), purposes


@pytest.mark.postgres
def test_a_study_used_up_by_the_one_statement_claim_gives_back_expired_slots():
    # The first probes find nothing; the expired lease of another annotator is reclaimed and its
    # unit taken by the fallback pick after the sweep.
    study = make_study(n_prompts=2, systems=("alpha",), overlap=1)
    first, second = enrol(study).user, enrol(study).user
    now = timezone.now()
    held = engine.next_assignment(first, study, now=now)
    done = engine.next_assignment(second, study, now=now)
    submit_label(
        annotator=second,
        assignment_token=done.token,
        data={"choice": "safe"},
        idempotency_key=uuid.uuid4(),
    )
    assert engine.next_assignment(second, study, now=now) is None
    later = now + timedelta(seconds=study.lease_seconds + 1)
    taken = engine.next_assignment(second, study, now=later)
    assert taken.unit_id == held.unit_id and taken.purpose == "production"
    stored = Assignment.objects.get(pk=taken.pk)
    assert [getattr(taken, f) for f in LEASE_FIELDS] == [getattr(stored, f) for f in LEASE_FIELDS]
    assert Assignment.objects.get(pk=held.pk).status == Assignment.Status.EXPIRED
    assert_invariants(study, now=later)


# --- the submit ------------------------------------------------------------------------------


def next_task(client, study):
    return client.get(reverse("api-work-next", args=[study.token])).json()


def post(client, study, token, body, key):
    return client.post(
        reverse("api-work-submit", args=[study.token, token]),
        data=json.dumps(body),
        content_type="application/json",
        headers={"Idempotency-Key": str(key)},
    )


def signed_in(study, client):
    e = enrol(study)
    client.force_login(e.user)
    return e.user


@pytest.fixture
def standard_way(monkeypatch):
    """Which of the submit's other ways were asked: the standard submit, the lease read without
    the label, the store after a statement that wrote nothing."""
    asked = []
    for name in ("submit_label", "submit_with", "store_loaded"):
        original = getattr(api, name)

        def spy(*args, _name=name, _original=original, **kwargs):
            asked.append(_name)
            return _original(*args, **kwargs)

        monkeypatch.setattr(api, name, spy)
    return asked


def test_a_common_submit_is_stored_by_the_statement_that_reads_the_lease(client, standard_way):
    study = make_study(n_prompts=3)
    user = signed_in(study, client)
    task = next_task(client, study)  # the process reads the study: the answer is cleaned first
    rendered = timezone.now().isoformat()
    timings = {"rendered_at": rendered, "duration_ms": 2500, "active_ms": 2000}
    key = uuid.uuid4()
    response = post(client, study, task["token"], {"choice": "safe", "timings": timings}, key)
    assert response.status_code == 200
    assert response.json() == {"status": "stored", "message": "Saved."}
    if connection.vendor == "postgresql":
        assert standard_way == []  # nothing else was asked: one statement stored it
    label = Label.objects.get()
    a = Assignment.objects.get(token=task["token"])
    assert a.status == "submitted" and a.closed_at == label.created_at
    assert (label.annotator_id, label.idempotency_key, label.choice) == (user.id, key, "safe")
    assert (label.duration_ms, label.active_ms) == (2500, 2000)
    assert label.rendered_at.isoformat() == rendered


def test_a_late_answer_through_the_one_statement_submit_is_stored_with_its_key_and_timings(
    client, standard_way
):
    # The statement finds the lease expired and writes nothing; the lease it read is stored from
    # (store_loaded): the slot is taken back, the label stored with its key and timings.
    study = make_study(n_prompts=3)
    user = signed_in(study, client)
    task = next_task(client, study)
    later = timezone.now() + timedelta(seconds=study.lease_seconds + 1)
    assert engine.reclaim_expired(study, now=later) == 1
    key = uuid.uuid4()
    timings = {"duration_ms": 2500, "active_ms": 2000}
    response = post(client, study, task["token"], {"choice": "safe", "timings": timings}, key)
    assert response.json() == {"status": "stored", "message": "Saved."}
    if connection.vendor == "postgresql":
        assert standard_way == ["store_loaded"]
    label = Label.objects.get()
    assert (label.annotator_id, label.idempotency_key, label.choice) == (user.id, key, "safe")
    assert (label.duration_ms, label.active_ms) == (2500, 2000)
    a = Assignment.objects.get(token=task["token"])
    assert a.status == "submitted" and label.assignment_id == a.id
    assert_invariants(study)
    again = post(client, study, task["token"], {"choice": "safe"}, key)
    assert again.json()["status"] == "duplicate" and Label.objects.count() == 1


def test_a_label_stored_in_one_statement_schedules_its_studys_report(
    client, settings, monkeypatch, django_capture_on_commit_callbacks
):
    from qc import services as qc_services

    settings.CONCORD_QC_AUTO_RECOMPUTE = True
    scheduled = []
    monkeypatch.setattr(qc_services, "label_committed", scheduled.append)
    study = make_study(n_prompts=2)
    signed_in(study, client)
    task = next_task(client, study)
    with django_capture_on_commit_callbacks(execute=True):
        response = post(client, study, task["token"], {"choice": "safe"}, uuid.uuid4())
    assert response.json()["status"] == "stored"
    assert scheduled == [study.pk]


@pytest.mark.parametrize("late", [False, True])
def test_the_label_a_submit_signals_is_the_label_it_stored(client, late):
    # Receivers of label_submitted get the label as stored, whichever way the submit took.
    from annotation.signals import label_submitted

    received = []

    def receiver(sender, label, study_id, **kwargs):
        received.append(
            (label.pk, label.idempotency_key, label.created_at, label.annotator_id, study_id)
        )

    study = make_study(n_prompts=2)
    user = signed_in(study, client)
    task = next_task(client, study)
    if late:
        later = timezone.now() + timedelta(seconds=study.lease_seconds + 1)
        engine.reclaim_expired(study, now=later)
    label_submitted.connect(receiver, sender=Label, weak=False, dispatch_uid="test-signal")
    try:
        response = post(client, study, task["token"], {"choice": "safe"}, uuid.uuid4())
    finally:
        label_submitted.disconnect(sender=Label, dispatch_uid="test-signal")
    assert response.json()["status"] == "stored"
    label = Label.objects.get()
    assert label.annotator_id == user.id
    assert received == [(label.pk, label.idempotency_key, label.created_at, user.id, study.pk)]
