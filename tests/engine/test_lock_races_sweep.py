"""The sweep, the skip and the progress read racing a submit, a sweep or a claim on PostgreSQL.

Each test stops one operation inside its transaction (an event it waits on) and runs the other
against it, so the race happens at the same point every time. A lock wait shows as a
`lock_timeout` error (nothing here may wait on a lock held by the stopped transaction).
"""

import threading
import uuid
from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.db import OperationalError, connection, connections
from django.utils import timezone

from annotation.models import Assignment, Label, Unit
from annotation.services import assignment as engine
from annotation.services import submission
from annotation.services.submission import submit_label
from tests.engine.invariants import assert_invariants
from tests.factories import enrol, make_study

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@contextmanager
def no_lock_waits():
    """Any lock wait on this connection fails at once instead of queueing."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config('lock_timeout', '2s', false)")
    try:
        yield
    except OperationalError as exc:
        pytest.fail(f"waited on a row lock held by the stopped transaction: {exc}")
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET lock_timeout")


@contextmanager
def stopped_inside(target, name, run):
    """Run `run()` in a thread of its own (its own connection); when it calls `target.name`,
    it stops there, inside its transaction, until the block ends. Yields once it has stopped."""
    original = getattr(target, name)
    reached, release = threading.Event(), threading.Event()
    result = {}

    def stop(*args, **kwargs):
        if threading.current_thread() is thread and not reached.is_set():
            reached.set()
            release.wait(30)
        return original(*args, **kwargs)

    def body():
        try:
            result["value"] = run()
        except Exception as exc:  # noqa: BLE001 - surfaced below
            result["error"] = exc
        finally:
            reached.set()
            connections.close_all()

    setattr(target, name, stop)
    thread = threading.Thread(target=body)
    try:
        thread.start()
        assert reached.wait(30)
        yield result
    finally:
        release.set()
        thread.join(30)
        setattr(target, name, original)
    assert "error" not in result, result["error"]


def lapsed_leases(study, n):
    """`n` annotators, each holding a production lease that ran out a minute ago."""
    then = timezone.now() - timedelta(seconds=study.lease_seconds + 60)
    people = [enrol(study).user for _ in range(n)]
    return [(user, engine.next_assignment(user, study, now=then)) for user in people]


def test_the_sweep_skips_a_lapsed_lease_whose_late_submit_is_committing():
    study = make_study(n_prompts=2, overlap=1, systems=("a",))
    (late_user, late), (_, walked_away) = lapsed_leases(study, 2)

    def late_submit():
        return submit_label(
            annotator=late_user,
            assignment_token=late.token,
            data={"choice": "safe"},
            idempotency_key=uuid.uuid4(),
        )

    # The late submit holds its lease's row (locked FOR UPDATE) while it stores the answer.
    with stopped_inside(submission, "clean_answer", late_submit) as submit:
        with no_lock_waits():
            expired = engine.reclaim_expired(study)
        assert expired == 1, "only the lease nobody is submitting"
    assert submit["value"].status == "stored"
    assert Assignment.objects.get(pk=late.pk).status == "submitted"
    assert Assignment.objects.get(pk=walked_away.pk).status == "expired"
    assert_invariants(study)


def test_two_sweeps_at_once_expire_each_lease_once_and_the_second_does_not_wait():
    study = make_study(n_prompts=3, overlap=1, systems=("a",))
    leases = [a for _, a in lapsed_leases(study, 3)]

    # The first sweep (say the periodic task) has locked every lapsed lease and is returning
    # their slots when a web process sweeps too.
    with stopped_inside(engine, "_return_slots", lambda: engine.reclaim_expired(study)) as first:
        with no_lock_waits():
            second = engine.reclaim_expired(study)
        assert second == 0, "the leases the first sweep holds are not the second's"
    assert first["value"] == 3
    assert set(
        Assignment.objects.filter(pk__in=[a.pk for a in leases]).values_list("status", flat=True)
    ) == {"expired"}
    assert set(Unit.objects.filter(study=study).values_list("open_slots", flat=True)) == {1}
    assert_invariants(study)


def skip_while_its_late_answer_lands():
    """Skip a task whose lease lapsed and was swept, while the late answer to it (from another
    tab) lands between skip's read of the task and its write. Returns (the assignment, what
    skip said, what the submit said)."""
    study = make_study(n_prompts=1, overlap=1, systems=("a",))
    [(user, a)] = lapsed_leases(study, 1)
    assert engine.reclaim_expired(study) == 1  # the task shows as expired; its slot is free
    stored = []

    def late_submit():
        try:
            stored.append(
                submit_label(
                    annotator=user,
                    assignment_token=a.token,
                    data={"choice": "safe"},
                    idempotency_key=uuid.uuid4(),
                )
            )
        finally:
            connections.close_all()

    def answer_lands_first(execute, sql, params, many, context):
        if not stored and sql.startswith('UPDATE "annotation_assignment"') and "skip_reason" in sql:
            worker = threading.Thread(target=late_submit)
            worker.start()
            worker.join(30)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(answer_lands_first):
        outcome = engine.skip(user, study, a.token, Assignment.SkipReason.values[0])
    assert stored and stored[0].status == "stored"
    return a, outcome


def test_skipping_a_lapsed_task_while_its_late_answer_is_stored_keeps_the_answer():
    a, _ = skip_while_its_late_answer_lands()
    assert Assignment.objects.get(pk=a.pk).status == "submitted"
    assert Label.objects.filter(assignment_id=a.pk).exists()
    assert_invariants(a.study)


def test_skipping_a_lapsed_task_whose_late_answer_was_stored_meanwhile_says_gone():
    # skip's docstring: "gone" when the task was answered meanwhile; the workbench then says
    # "That task was already answered ..., so it was not skipped", not "Skipped".
    _, outcome = skip_while_its_late_answer_lands()
    assert outcome == "gone"


def test_progress_is_read_without_waiting_for_the_annotators_claim_in_flight():
    study = make_study(n_prompts=3, overlap=1, systems=("a",))
    user = enrol(study).user

    # A "next" of this annotator holds their enrolment (FOR UPDATE) while it picks a unit;
    # the progress bar of another tab is read meanwhile.
    def claim():
        return engine.next_assignment(user, study)

    with stopped_inside(engine, "_injected_role", claim), no_lock_waits():
        state = engine.work_state(user, study)
    assert (state.done, state.blocked_reason) == (0, "")
    assert state.assigned >= 1
