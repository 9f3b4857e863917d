"""Late answers, retries and refusals at their edges: a late answer to injected work (gold) is
stored without a slot, a late production answer takes back its own unit's slot and no other; a
retry under the same key is told its answer was already saved, a key reused on another task what
to do, an answer to no task of the annotator's that the task does not exist; production work of
a study gone back to qualifying is not taken; a key that is no UUID is refused on its field.

Added after the mutation run of annotation/services/submission.py (bench/MUTATION.md), where
each of these could change without any test in the module's list noticing.
"""

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import Assignment, Label, Study, Unit
from annotation.schemes import AnswerError
from annotation.services import assignment as engine
from annotation.services import setup
from annotation.services.submission import submit_label
from tests.factories import enrol, make_study

pytestmark = pytest.mark.django_db


def answer(annotator, a):
    return submit_label(
        annotator=annotator,
        assignment_token=a.token,
        data={"choice": "safe"},
        idempotency_key=uuid.uuid4(),
    )


def test_a_late_answer_to_gold_is_stored():
    study = make_study(n_prompts=6, overlap=1, systems=("alpha",), gold_rate=0.99)
    for unit in Unit.objects.filter(study=study)[:3]:
        setup.mark_gold(unit, "safe")
    user = enrol(study).user
    a = engine.next_assignment(user, study)
    while a.purpose != "gold":  # a production task now and then (1 % of positions)
        assert answer(user, a).status == "stored"
        a = engine.next_assignment(user, study)
    engine.reclaim_expired(study, now=timezone.now() + timedelta(days=1))
    result = answer(user, a)
    assert result.status == "stored"
    assert result.label.purpose == "gold"


def test_a_late_production_answer_takes_back_only_its_own_units_slot():
    study = make_study(n_prompts=3, overlap=1, systems=("alpha",))
    user = enrol(study).user
    a = engine.next_assignment(user, study)
    engine.reclaim_expired(study, now=timezone.now() + timedelta(days=1))
    assert answer(user, a).status == "stored"
    slots = dict(Unit.objects.filter(study=study).values_list("id", "open_slots"))
    assert slots.pop(a.unit_id) == 0
    assert set(slots.values()) == {1}


def test_a_retry_under_the_same_key_is_told_its_answer_was_already_saved():
    study = make_study(n_prompts=2, overlap=1, systems=("alpha",))
    user = enrol(study).user
    a = engine.next_assignment(user, study)
    key = uuid.uuid4()
    first = submit_label(
        annotator=user, assignment_token=a.token, data={"choice": "safe"}, idempotency_key=key
    )
    again = submit_label(
        annotator=user, assignment_token=a.token, data={"choice": "unsafe"}, idempotency_key=key
    )
    assert (again.status, again.label, again.message) == (
        "duplicate",
        first.label,
        "This answer was already saved.",
    )


def test_an_answer_to_a_task_of_nobody_is_told_the_task_does_not_exist():
    study = make_study(n_prompts=1, systems=("alpha",))
    result = submit_label(
        annotator=enrol(study).user,
        assignment_token="no-such-task",
        data={"choice": "safe"},
        idempotency_key=uuid.uuid4(),
    )
    assert (result.status, result.label, result.message) == (
        "not_found",
        None,
        "This task does not exist.",
    )


def test_a_key_reused_on_another_task_is_refused_saying_what_to_do():
    study = make_study(n_prompts=3, overlap=1, systems=("alpha",))
    user = enrol(study).user
    key = uuid.uuid4()
    first = engine.next_assignment(user, study)
    submit_label(
        annotator=user, assignment_token=first.token, data={"choice": "safe"}, idempotency_key=key
    )
    second = engine.next_assignment(user, study)
    result = submit_label(
        annotator=user, assignment_token=second.token, data={"choice": "safe"}, idempotency_key=key
    )
    assert (result.status, result.label, result.message) == (
        "conflict",
        None,
        "This submission key was already used for another task, so nothing was saved."
        " Submit the answer again with a new key (reload the task to get one).",
    )


def test_production_work_answered_after_the_study_went_back_to_qualifying_is_not_taken():
    study = make_study(n_prompts=2, overlap=1, systems=("alpha",))
    user = enrol(study).user
    a = engine.next_assignment(user, study)
    Study.objects.filter(pk=study.pk).update(status=Study.Status.QUALIFYING)
    result = submit_label(
        annotator=user,
        assignment_token=a.token,
        data={"choice": "safe"},
        idempotency_key=uuid.uuid4(),
    )
    assert (result.status, result.label) == ("paused", None)


@pytest.mark.parametrize("key", ["not-a-uuid", None])
def test_a_key_that_is_no_uuid_is_refused_on_its_field(key):
    study = make_study(n_prompts=1, systems=("alpha",))
    user = enrol(study).user
    a = engine.next_assignment(user, study)
    with pytest.raises(AnswerError) as refused:
        submit_label(
            annotator=user, assignment_token=a.token, data={"choice": "safe"}, idempotency_key=key
        )
    assert (refused.value.field, refused.value.message) == (
        "idempotency_key",
        "must be a UUID made when the task was shown",
    )


def lost_the_race(a):
    """The state a post finds when a parallel post of the same task stored its label between
    this post's read of the lease and its insert: the lease still reads as open."""
    Assignment.objects.filter(pk=a.pk).update(status=Assignment.Status.LEASED)


def test_a_post_that_lost_the_race_to_its_own_retry_is_told_duplicate_with_the_first_label():
    study = make_study(n_prompts=2, overlap=1, systems=("alpha",))
    user = enrol(study).user
    a = engine.next_assignment(user, study)
    key = uuid.uuid4()
    first = submit_label(
        annotator=user, assignment_token=a.token, data={"choice": "safe"}, idempotency_key=key
    )
    lost_the_race(a)
    again = submit_label(
        annotator=user, assignment_token=a.token, data={"choice": "unsafe"}, idempotency_key=key
    )
    assert (again.status, again.label, again.message) == (
        "duplicate",
        first.label,
        "This answer was already saved.",
    )
    assert Label.objects.get().choice == "safe"


def test_a_post_that_lost_the_race_under_another_key_is_told_duplicate_with_this_tasks_label():
    study = make_study(n_prompts=3, overlap=1, systems=("alpha",))
    user = enrol(study).user
    answer(user, engine.next_assignment(user, study))  # an earlier label of the annotator's
    a = engine.next_assignment(user, study)
    first = answer(user, a)
    lost_the_race(a)
    again = answer(user, a)
    assert (again.status, again.label, again.message) == (
        "duplicate",
        first.label,
        "This answer was already saved.",
    )
    assert Label.objects.filter(assignment=a).count() == 1


def test_a_late_answer_whose_slot_went_to_another_annotator_is_told_so_and_not_stored():
    study = make_study(n_prompts=1, overlap=1, systems=("alpha",))
    slow, fast = enrol(study).user, enrol(study).user
    a = engine.next_assignment(slow, study)
    later = timezone.now() + timedelta(seconds=study.lease_seconds + 1)
    assert engine.next_assignment(fast, study, now=later).unit_id == a.unit_id
    result = answer(slow, a)
    assert (result.status, result.label, result.message) == (
        "reassigned",
        None,
        "This item was reassigned after your time ran out; your answer was not needed.",
    )
    assert not Label.objects.exists()
