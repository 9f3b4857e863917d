"""The engine's contract: leases, resume, gates, overlap, submit outcomes (any database)."""

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import Assignment, GuideVersion, Label, SpaAnswer, Study, Unit
from annotation.schemes import AnswerError
from annotation.services import assignment as engine
from annotation.services.submission import submit_label
from annotation.signals import label_submitted
from tests.factories import enrol, make_study

pytestmark = pytest.mark.django_db


def answer(annotator, a, choice="safe", key=None):
    return submit_label(
        annotator=annotator,
        assignment_token=a.token,
        data={"choice": choice},
        idempotency_key=key or uuid.uuid4(),
    )


def label_all(annotator, study, limit=1000):
    served = []
    for _ in range(limit):
        a = engine.next_assignment(annotator, study)
        if a is None:
            break
        served.append(a)
        assert answer(annotator, a).status == "stored"
    return served


def test_next_returns_the_open_lease_until_it_is_answered():
    study = make_study(n_prompts=3)
    e = enrol(study)
    first = engine.next_assignment(e.user, study)
    assert engine.next_assignment(e.user, study).pk == first.pk
    answer(e.user, first)
    second = engine.next_assignment(e.user, study)
    assert second.pk != first.pk
    assert second.position == first.position + 1


def test_one_annotator_gets_every_unit_once_then_none():
    study = make_study(n_prompts=10)
    e = enrol(study)
    served = label_all(e.user, study)
    units = [a.unit_id for a in served]
    assert sorted(units) == sorted(Unit.objects.filter(study=study).values_list("id", flat=True))
    assert [a.position for a in served] == list(range(1, len(served) + 1))
    assert engine.work_state(e.user, study).blocked_reason == "done"


def test_unit_never_gets_more_labels_than_its_overlap():
    study = make_study(n_prompts=4, overlap=2)
    people = [enrol(study).user for _ in range(4)]
    for person in people:
        label_all(person, study)
    per_unit = {}
    for unit_id in Label.objects.filter(study=study).values_list("unit_id", flat=True):
        per_unit[unit_id] = per_unit.get(unit_id, 0) + 1
    assert set(per_unit.values()) == {2}
    assert set(Unit.objects.filter(study=study).values_list("open_slots", flat=True)) == {0}


def test_the_same_key_twice_stores_one_label_and_returns_it():
    study = make_study(n_prompts=2)
    e = enrol(study)
    a = engine.next_assignment(e.user, study)
    key = uuid.uuid4()
    first = answer(e.user, a, key=key)
    again = answer(e.user, a, key=key)
    assert (first.status, again.status) == ("stored", "duplicate")
    assert again.label.pk == first.label.pk
    assert Label.objects.count() == 1


def test_a_stale_form_under_another_key_is_a_duplicate():
    study = make_study(n_prompts=2)
    e = enrol(study)
    a = engine.next_assignment(e.user, study)
    first = answer(e.user, a)
    stale = answer(e.user, a, choice="unsafe")
    assert stale.status == "duplicate" and stale.label.pk == first.label.pk
    assert Label.objects.get().choice == "safe"


def test_another_annotators_token_is_not_found():
    study = make_study(n_prompts=2)
    mine, theirs = enrol(study).user, enrol(study).user
    a = engine.next_assignment(mine, study)
    assert answer(theirs, a).status == "not_found"
    assert Label.objects.count() == 0


def test_a_bad_answer_raises_and_stores_nothing():
    study = make_study(n_prompts=2)
    e = enrol(study)
    a = engine.next_assignment(e.user, study)
    with pytest.raises(AnswerError) as err:
        answer(e.user, a, choice="maybe")
    assert err.value.field == "choice"
    a.refresh_from_db()
    assert a.status == "leased" and Label.objects.count() == 0


def test_label_copies_the_assignments_context_and_signals():
    study = make_study(n_prompts=2)
    GuideVersion.objects.create(study=study, number=1, body="v1")
    e = enrol(study)
    a = engine.next_assignment(e.user, study)
    seen = []

    def receiver(sender, label, study_id, **kw):
        seen.append((label.pk, study_id))

    label_submitted.connect(receiver)
    try:
        result = submit_label(
            annotator=e.user,
            assignment_token=a.token,
            data={"choice": "unsafe"},
            idempotency_key=str(uuid.uuid4()),
            timings={"rendered_at": a.leased_at.isoformat(), "duration_ms": 4100},
        )
    finally:
        label_submitted.disconnect(receiver)
    label = result.label
    assert (label.study_id, label.unit_id, label.annotator_id) == (study.id, a.unit_id, e.user_id)
    assert label.purpose == "production" and label.guide_version_id == a.guide_version_id
    assert label.guide_version is not None
    assert label.duration_ms == 4100 and label.active_ms is None
    assert label.rendered_at == a.leased_at
    assert seen == [(label.pk, study.id)]


def test_expired_lease_returns_its_slot_once():
    study = make_study(n_prompts=1, overlap=1, systems=("alpha",))
    e = enrol(study)
    a = engine.next_assignment(e.user, study)
    unit = Unit.objects.get(pk=a.unit_id)
    assert unit.open_slots == 0
    later = timezone.now() + timedelta(seconds=study.lease_seconds + 1)
    assert engine.reclaim_expired(study, now=later) == 1
    assert engine.reclaim_expired(study, now=later) == 0
    unit.refresh_from_db()
    assert unit.open_slots == 1


def test_late_submit_is_reassigned_when_the_slot_was_taken():
    study = make_study(n_prompts=1, overlap=1, systems=("alpha",))
    slow, fast = enrol(study).user, enrol(study).user
    a = engine.next_assignment(slow, study)
    later = timezone.now() + timedelta(seconds=study.lease_seconds + 1)
    b = engine.next_assignment(fast, study, now=later)  # reclaims, then takes the slot
    assert b is not None and b.unit_id == a.unit_id
    result = answer(slow, a)
    assert result.status == "reassigned" and result.label is None
    assert answer(fast, b).status == "stored"
    assert Label.objects.count() == 1


def test_late_submit_is_accepted_while_the_slot_is_free():
    study = make_study(n_prompts=1, overlap=1, systems=("alpha",))
    e = enrol(study)
    a = engine.next_assignment(e.user, study)
    engine.reclaim_expired(study, now=timezone.now() + timedelta(days=1))
    assert answer(e.user, a).status == "stored"
    unit = Unit.objects.get(pk=a.unit_id)
    assert unit.open_slots == 0


def test_abandon_returns_the_slot_and_serves_the_next_unit():
    study = make_study(n_prompts=2, overlap=1, systems=("alpha",))
    e = enrol(study)
    a = engine.next_assignment(e.user, study)
    engine.abandon(a)
    engine.abandon(a)
    assert Unit.objects.get(pk=a.unit_id).open_slots == 1
    b = engine.next_assignment(e.user, study)
    assert b.pk != a.pk


@pytest.mark.parametrize(
    "status,reason", [("paused", "paused"), ("closed", "closed"), ("draft", "paused")]
)
def test_a_study_that_is_not_live_hands_out_nothing(status, reason):
    study = make_study(n_prompts=2, status=status)
    e = enrol(study)
    assert engine.next_assignment(e.user, study) is None
    assert engine.work_state(e.user, study).blocked_reason == reason


def test_quota_stops_the_annotator():
    study = make_study(n_prompts=5, quota_per_annotator=3)
    e = enrol(study)
    assert len(label_all(e.user, study)) == 3
    state = engine.work_state(e.user, study)
    assert (state.done, state.assigned, state.blocked_reason) == (3, 3, "quota")


def test_qualification_is_required_when_the_study_has_one():
    study = make_study(n_prompts=2, requires_qualification=True)
    e = enrol(study)
    assert engine.next_assignment(e.user, study) is None
    assert engine.work_state(e.user, study).blocked_reason == "qualification"
    e.qualified_at = timezone.now()
    e.save()
    assert engine.next_assignment(e.user, study) is not None


def test_a_guide_that_requires_recalibration_gates_production():
    study = make_study(n_prompts=2)
    e = enrol(study)
    v1 = GuideVersion.objects.create(study=study, number=1, body="v1")
    GuideVersion.objects.create(study=study, number=2, body="v2", requires_recalibration=True)
    e.calibrated_guide_version = v1
    e.save()
    assert engine.next_assignment(e.user, study) is None
    assert engine.work_state(e.user, study).blocked_reason == "recalibration"
    e.calibrated_guide_version = GuideVersion.objects.get(number=2)
    e.save()
    assert engine.next_assignment(e.user, study) is not None


def test_work_state_counts_done_and_what_is_left():
    study = make_study(n_prompts=5, systems=("alpha", "beta"))
    e = enrol(study)
    assert engine.work_state(e.user, study) == engine.WorkState(0, 10, "")
    label_all(e.user, study, limit=4)
    state = engine.work_state(e.user, study)
    assert (state.done, state.assigned, state.blocked_reason) == (4, 10, "")


def test_pairwise_winner_is_the_canonical_system():
    study = make_study(Study.TaskKind.PAIRWISE, n_prompts=6)
    e = enrol(study)
    for _ in range(6):
        a = engine.next_assignment(e.user, study)
        label = answer(e.user, a, choice="left").label
        left_output = a.presentation["left"]
        assert label.winner_id == (a.unit.members.get(output_id=left_output).output.system_id)


def test_spa_batch_stores_answers_per_comparison():
    study = make_study(
        Study.TaskKind.SPA,
        n_prompts=6,
        systems=("a", "b", "c"),
        spa_exposure_m=3,
        spa_both_directions=True,
        spa_collect_likert=True,
        overlap=2,
    )
    e = enrol(study)
    a = engine.next_assignment(e.user, study)
    p = a.presentation
    assert len(p["questions"]) == 4 and len(p["outputs"]) == 9
    assert [q["reverse"] for q in p["questions"]] == [False, False, True, True]
    assert p["questions"][1]["comparison"] != p["questions"][2]["comparison"]
    data = {f"p_{i}": "60" for i in range(4)}
    # Likert fields are named by display position; each maps back to the output shown there.
    data.update({f"likert_{j}": str(1 + j % 5) for j in range(len(p["outputs"]))})
    result = submit_label(
        annotator=e.user, assignment_token=a.token, data=data, idempotency_key=uuid.uuid4()
    )
    assert result.status == "stored"
    assert SpaAnswer.objects.filter(label=result.label).count() == 4
    assert result.label.output_ratings.count() == 9
    stored = dict(result.label.output_ratings.values_list("output_id", "score"))
    assert stored == {o: 1 + j % 5 for j, o in enumerate(p["outputs"])}


def test_enrolment_gets_a_random_seed_by_default():
    study = make_study(n_prompts=1)
    from annotation.models import Enrolment
    from tests.factories import UserFactory

    seeds = {Enrolment.objects.create(study=study, user=UserFactory()).queue_seed for _ in range(3)}
    assert len(seeds) == 3 and 0 not in seeds


def test_assignments_record_purpose_and_lease():
    study = make_study(n_prompts=2)
    e = enrol(study)
    a = engine.next_assignment(e.user, study)
    assert a.purpose == Assignment.Purpose.PRODUCTION
    assert a.expires_at - a.leased_at == timedelta(seconds=study.lease_seconds)
    assert len(a.token) >= 20
