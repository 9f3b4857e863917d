"""The claim's row locks on real PostgreSQL: a claim skips the units another transaction holds
instead of waiting for them, and an annotator's parallel `next` waits for their first one
without holding any unit meanwhile.

A second connection (or thread) holds the rows; the claim's connection runs with a short
`lock_timeout`, so a claim that waits for a row it should have skipped fails with an error
instead of hanging."""

import threading
import time
import uuid
from contextlib import contextmanager

import psycopg
import pytest
from django.db import connection, connections, transaction

from annotation.models import Assignment, Unit
from annotation.services import assignment as engine
from annotation.services import setup
from annotation.services.submission import submit_label
from tests.factories import enrol, make_study

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


class _Undo(Exception):
    pass


def would_serve(user, study) -> Assignment:
    """What `next` would give the annotator now, claimed in a transaction that is rolled back
    (the walk and the draws are seeded, so the next real claim makes the same choice)."""
    served = []
    try:
        with transaction.atomic():
            served.append(engine.next_assignment(user, study))
            raise _Undo
    except _Undo:
        pass
    return served[0]


@contextmanager
def row_held(table: str, row_id: int):
    """Another connection holds the row `FOR UPDATE` (as a parallel claim that took it does)
    until the block ends."""
    other = psycopg.connect(**connection.get_connection_params())
    try:
        other.execute(f"SELECT id FROM {table} WHERE id = %s FOR UPDATE", (row_id,))
        yield
    finally:
        other.rollback()
        other.close()


@contextmanager
def waiting_is_an_error():
    """The claim's connection gives up on any row lock it would wait for."""
    with connection.cursor() as cursor:
        cursor.execute("SET lock_timeout = '1s'")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET lock_timeout")


def answer(user, lease) -> None:
    result = submit_label(
        annotator=user,
        assignment_token=lease.token,
        data={"choice": "safe"},
        idempotency_key=uuid.uuid4(),
    )
    assert result.status == "stored"


@pytest.mark.parametrize("quota", [None, 5], ids=["one-statement claim", "claim under a quota"])
def test_a_claim_skips_a_unit_another_claim_holds_and_serves_the_next(quota):
    study = make_study(n_prompts=3, overlap=2, systems=("a",), quota_per_annotator=quota)
    user = enrol(study).user
    first_choice = would_serve(user, study).unit_id

    with row_held("annotation_unit", first_choice), waiting_is_an_error():
        lease = engine.next_assignment(user, study)

    assert lease is not None and lease.purpose == "production"
    assert lease.unit_id != first_choice
    assert Unit.objects.get(pk=first_choice).open_slots == 2  # untouched
    assert Unit.objects.get(pk=lease.unit_id).open_slots == 1


def test_a_gold_position_skips_a_gold_unit_another_claim_holds_and_serves_another_gold():
    study = make_study(n_prompts=5, overlap=2, systems=("a",), gold_rate=0.99)
    for unit in Unit.objects.filter(study=study).order_by("id")[:2]:
        setup.mark_gold(unit, {"choice": "safe"})
    user = enrol(study, queue_seed=7).user  # seeded: the same positions are gold every run
    # Position 1 is never gold; answer production tasks up to the first gold position.
    while (upcoming := would_serve(user, study)).purpose != "gold":
        answer(user, engine.next_assignment(user, study))
    held_gold = upcoming.unit_id

    with row_held("annotation_unit", held_gold), waiting_is_an_error():
        lease = engine.next_assignment(user, study)

    assert lease.purpose == "gold"
    assert lease.unit_id != held_gold
    gold = Unit.objects.filter(study=study, role="gold")
    assert sorted(gold.values_list("id", "open_slots")) == sorted(
        [(held_gold, 2), (lease.unit_id, 1)]
    )


def blocked(pid: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT cardinality(pg_blocking_pids(%s)) > 0", [pid])
        return cursor.fetchone()[0]


def test_a_second_next_of_one_annotator_waits_for_the_first_holding_no_unit_meanwhile():
    # Two units, one slot each: the annotator's first request takes one; while it is open, their
    # second request must wait on their enrolment, not take the other unit from a colleague.
    study = make_study(n_prompts=2, overlap=1, systems=("a",))
    user, colleague = enrol(study).user, enrol(study).user
    first_taken, release = threading.Event(), threading.Event()
    second_pid, leases, errors = [], {}, []

    def first_request():
        try:
            with transaction.atomic():
                leases["first"] = engine.next_assignment(user, study)
                first_taken.set()
                release.wait(60)
        except Exception as exc:  # noqa: BLE001 - surfaced below
            errors.append(exc)
        finally:
            first_taken.set()
            connections.close_all()

    def second_request():
        try:
            connection.ensure_connection()
            second_pid.append(connection.connection.info.backend_pid)
            leases["second"] = engine.next_assignment(user, study)
        except Exception as exc:  # noqa: BLE001 - surfaced below
            errors.append(exc)
        finally:
            connections.close_all()

    first = threading.Thread(target=first_request)
    first.start()
    first_taken.wait(60)
    second = threading.Thread(target=second_request)
    second.start()
    try:
        # The second request is waiting on a lock the first holds.
        deadline = time.monotonic() + 60
        while not (second_pid and blocked(second_pid[0])):
            assert second.is_alive() and time.monotonic() < deadline, (leases, errors)
            time.sleep(0.01)
        served = engine.next_assignment(colleague, study)
    finally:
        release.set()
        first.join(60)
        second.join(60)

    assert not errors, errors
    assert served is not None and served.unit_id != leases["first"].unit_id
    assert leases["second"].pk == leases["first"].pk
    assert Assignment.objects.filter(annotator=user, status="leased").count() == 1
