"""Qualification: boundary candidates from real splits, the test's items, attempts and retries,
easy and boundary scores, and the lead's results (pass rate, easy-item trap, per-item share)."""

import uuid

import pytest
from django.utils import timezone

from annotation.models import Enrolment, Label, QualificationItem, Study, Unit, UnitOutput
from annotation.services import assignment as engine
from annotation.services import batches, calibration, guides, qualification, setup
from annotation.services.submission import submit_label
from annotation.services.training_items import TrainingError, resolve_items
from tests.factories import enrol, make_study
from tests.qc.labels import add_labels
from tests.training.helpers import answer_batch, labelled_study, unit_of

pytestmark = pytest.mark.django_db


def built_test(study):
    """p0, p1 (split 2:1) as boundary items keyed unsafe; p2 (unanimous) as an easy item."""
    for pid in ("p0", "p1"):
        qualification.add_item(study, unit_of(study, pid), answer="unsafe", difficulty="boundary")
    qualification.add_item(study, unit_of(study, "p2"), answer="safe", difficulty="easy")
    return {
        i.unit_id: i.source_unit.prompt.external_id
        for i in QualificationItem.objects.select_related("source_unit__prompt")
    }


def test_boundary_candidates_are_the_items_raters_split_on_with_the_split():
    study, _ = labelled_study()
    found = qualification.candidates(study)
    assert {c.unit.prompt.external_id for c in found} == {"p0", "p1"}
    for c in found:
        assert dict(c.split) == {"Safe": 2, "Unsafe": 1} and c.n == 3
        assert c.disagreement == pytest.approx(1 / 3)
    easy = qualification.candidates(study, split=False)
    assert {c.unit.prompt.external_id for c in easy} == {"p2", "p3"}


def test_items_in_the_test_are_qualification_copies_with_the_expert_key():
    study, _ = labelled_study()
    built_test(study)
    items = QualificationItem.objects.select_related("unit__gold_answer", "source_unit")
    assert all(i.unit.role == Unit.Role.QUALIFICATION for i in items)
    assert all(i.source_unit.role == Unit.Role.PRODUCTION for i in items)
    assert {i.unit.gold_answer.value["choice"] for i in items} == {"safe", "unsafe"}
    # proposals no longer offer what is already in the test
    assert qualification.candidates(study) == []


def test_gold_items_and_duplicates_cannot_go_into_the_test():
    study, _ = labelled_study()
    built_test(study)
    with pytest.raises(TrainingError, match="already in the test"):
        qualification.add_item(study, unit_of(study, "p0"), answer="safe", difficulty="easy")
    with pytest.raises(TrainingError) as error:
        qualification.add_item(study, unit_of(study, "p3"), answer="maybe", difficulty="easy")
    assert error.value.field == "answer"
    gold = unit_of(study, "p3")
    setup.mark_gold(gold, {"choice": "safe"})
    with pytest.raises(TrainingError, match="only production items"):
        qualification.add_item(study, gold, answer="safe", difficulty="easy")
    assert QualificationItem.objects.count() == 3


def answers_for(keys: dict, wrong: set[str]):
    """A candidate who answers every item right except the prompts in `wrong`."""
    right = {"p0": "unsafe", "p1": "unsafe", "p2": "safe"}

    def choose(unit):
        pid = keys[unit.pk]
        flip = {"safe": "unsafe", "unsafe": "safe"}
        return flip[right[pid]] if pid in wrong else right[pid]

    return choose


def test_easy_and_boundary_scores_are_counted_separately_and_decide_the_pass():
    study, _ = labelled_study(qualification_pass_score=0.6, requires_qualification=True)
    keys = built_test(study)
    candidate = enrol(study)
    attempt = qualification.start_attempt(study, candidate.user, seed=3)
    labels = answer_batch(attempt, answers_for(keys, wrong={"p0"}))
    assert {label.purpose for label in labels} == {"qualification"}
    scored = qualification.finish_attempt(attempt)
    assert scored.easy_score == 1.0 and scored.boundary_score == 0.5
    assert scored.score == pytest.approx(2 / 3) and scored.passed
    e = Enrolment.objects.get(pk=candidate.pk)
    assert e.qualified_at is not None and e.qualification_score == pytest.approx(2 / 3)
    assert engine.next_assignment(candidate.user, study).purpose == "production"


def test_a_failed_candidate_retries_only_after_re_reading_the_guide_and_then_passes():
    study, _ = labelled_study(qualification_pass_score=1.0, requires_qualification=True)
    keys = built_test(study)
    guides.publish_version(
        study,
        body="Counter rice is unsafe.",
        rulings=[
            guides.NewRuling(
                "Reheat is not enough", "Unsafe.", examples=tuple(resolve_items(study, "p0"))
            )
        ],
    )
    user = enrol(study).user
    first = qualification.start_attempt(study, user)
    answer_batch(first, answers_for(keys, wrong={"p0", "p2"}))
    first = qualification.finish_attempt(first)
    assert not first.passed and first.easy_score == 0.0 and first.boundary_score == 0.5
    missed = qualification.missed_items(first)
    assert len(missed) == 2
    rulings = {m.ruling.title if m.ruling else None for m in missed}
    assert rulings == {"Reheat is not enough", None}
    assert engine.next_assignment(user, study) is None
    status = qualification.status(study, user)
    assert status.reason == "reread" and not status.can_start
    with pytest.raises(TrainingError, match="re-read the guide"):
        qualification.start_attempt(study, user)
    qualification.mark_guide_reread(study, user)
    second = qualification.start_attempt(study, user)
    assert second.attempt == 2
    answer_batch(second, answers_for(keys, wrong=set()))
    assert qualification.finish_attempt(second).passed
    assert engine.next_assignment(user, study).purpose == "production"


def test_attempts_run_out():
    study, _ = labelled_study(
        qualification_attempts=1, qualification_retry_after_guide=False, requires_qualification=True
    )
    keys = built_test(study)
    user = enrol(study).user
    attempt = qualification.start_attempt(study, user)
    answer_batch(attempt, answers_for(keys, wrong={"p0", "p1", "p2"}))
    qualification.finish_attempt(attempt)
    assert qualification.status(study, user).reason == "no_attempts"
    with pytest.raises(TrainingError, match="every attempt"):
        qualification.start_attempt(study, user)


def test_qualification_labels_never_enter_production_or_overlap():
    study, _ = labelled_study()
    keys = built_test(study)
    slots = dict(Unit.objects.filter(role="production").values_list("id", "open_slots"))
    production = Label.objects.filter(purpose="production").count()
    user = enrol(study).user
    attempt = qualification.start_attempt(study, user)
    answer_batch(attempt, answers_for(keys, wrong=set()))
    assert dict(Unit.objects.filter(role="production").values_list("id", "open_slots")) == slots
    assert Label.objects.filter(purpose="production").count() == production
    assert Label.objects.filter(purpose="qualification").count() == 3


def test_lead_results_show_scores_pass_rate_trap_and_item_shares():
    study, _ = labelled_study(qualification_pass_score=0.6)
    keys = built_test(study)
    patterns = [set(), set(), {"p0"}, {"p0", "p1"}]  # the last one fails (1/3)
    for wrong in patterns:
        user = enrol(study).user
        attempt = qualification.start_attempt(study, user)
        answer_batch(attempt, answers_for(keys, wrong=wrong))
        qualification.finish_attempt(attempt)
    results = qualification.results(study)
    assert results.n_candidates == 4
    assert results.first_attempt_pass_rate == pytest.approx(3 / 4)
    assert not results.easy_trap
    shares = {keys[row.item.unit_id]: (row.correct, row.answers) for row in results.items}
    assert shares == {"p0": (2, 4), "p1": (3, 4), "p2": (4, 4)}
    boundary = sorted(a.boundary_score for row in results.candidates for a in row.attempts)
    assert boundary == [0.0, 0.5, 1.0, 1.0]


def test_the_easy_item_trap_is_flagged_when_nearly_everyone_passes():
    study, _ = labelled_study(qualification_pass_score=0.5)
    qualification.add_item(study, unit_of(study, "p2"), answer="safe", difficulty="easy")
    for _ in range(3):
        user = enrol(study).user
        attempt = qualification.start_attempt(study, user)
        answer_batch(attempt, lambda unit: "safe")
        qualification.finish_attempt(attempt)
    results = qualification.results(study)
    assert results.first_attempt_pass_rate == 1.0 and results.easy_trap
    assert results.n_boundary == 0


def test_an_item_everyone_misses_is_suspect():
    study, _ = labelled_study(qualification_pass_score=0.5)
    qualification.add_item(study, unit_of(study, "p3"), answer="unsafe", difficulty="easy")
    for _ in range(3):
        attempt = qualification.start_attempt(study, enrol(study).user)
        answer_batch(attempt, lambda unit: "safe")
        qualification.finish_attempt(attempt)
    (row,) = qualification.results(study).items
    assert row.share == 0.0 and row.suspect


def test_settings_are_checked():
    study, _ = labelled_study()
    with pytest.raises(TrainingError) as error:
        qualification.update_settings(
            study,
            requires_qualification=True,
            pass_score=0.8,
            attempts=2,
            retry_after_guide=True,
            before_guide=False,
            allowed_pools=[],
        )
    assert error.value.field == "requires_qualification"
    with pytest.raises(TrainingError) as error:
        qualification.update_settings(
            study,
            requires_qualification=False,
            pass_score=0.8,
            attempts=2,
            retry_after_guide=True,
            before_guide=False,
            allowed_pools=["aliens"],
        )
    assert error.value.field == "allowed_pools"


def test_calibration_and_recalibration_batches_are_not_qualification_attempts():
    study, producers = labelled_study(qualification_attempts=1)
    keys = built_test(study)
    user = producers[0].user
    guides.publish_version(
        study,
        body="Counter rice is unsafe.",
        rulings=[guides.NewRuling("R", "why", examples=tuple(resolve_items(study, "p0")))],
        requires_recalibration=True,
    )
    recalibration = calibration.start_recalibration(study, user)
    answer_batch(recalibration, lambda unit: "safe")
    assert calibration.finish_recalibration(recalibration).finished_at is not None
    session = calibration.open_session(
        study, title="S", raters=[user, producers[1].user], units=[unit_of(study, "p3")]
    )
    calibration.start_session_batch(session, user)  # left open
    status = qualification.status(study, user)
    assert (status.attempts_used, status.attempts_left) == (0, 1)
    assert status.open_attempt is None and status.last_attempt is None
    assert status.can_start and status.reason == ""
    results = qualification.results(study)
    assert results.n_candidates == 0 and (results.n_easy, results.n_boundary) == (1, 2)
    attempt = qualification.start_attempt(study, user)
    assert attempt.kind == "qualification" and attempt.attempt == 1
    answer_batch(attempt, answers_for(keys, wrong=set()))
    qualification.finish_attempt(attempt)
    (row,) = qualification.results(study).candidates
    assert row.attempts == (attempt,)


def test_candidates_come_from_this_studys_production_labels_only():
    study, producers = labelled_study(n_prompts=2, disputed=())
    other, _ = labelled_study(n_prompts=2, disputed=("p0", "p1"))  # splits in another study
    assert len(qualification.candidates(other)) == 2
    assert qualification.candidates(study) == []
    # a blind repeat that says otherwise is not a split among production labels
    rows = [{"unit": unit_of(study, "p0"), "annotator": producers[0].user, "choice": "unsafe"}]
    add_labels(study, rows, purpose="repeat")
    assert qualification.candidates(study) == []
    easy = qualification.candidates(study, split=False)
    assert sorted((c.unit.prompt.external_id, c.n) for c in easy) == [("p0", 3), ("p1", 3)]


def test_an_open_attempt_goes_on_while_the_study_is_paused_but_not_once_a_lead_qualifies():
    study, _ = labelled_study()
    built_test(study)
    enrolment = enrol(study)
    attempt = qualification.start_attempt(study, enrolment.user)
    study.status = Study.Status.PAUSED
    study.save(update_fields=["status"])
    status = qualification.status(study, enrolment.user)
    assert status.reason == "closed" and status.open_attempt == attempt and status.can_start
    Enrolment.objects.filter(pk=enrolment.pk).update(qualified_at=timezone.now())
    status = qualification.status(study, enrolment.user)
    assert status.reason == "qualified" and status.open_attempt == attempt
    assert not status.can_start


def test_the_lead_sees_who_qualified_by_user_and_the_trap_at_exactly_nine_in_ten():
    study, _ = labelled_study(qualification_pass_score=1.0)
    qualification.add_item(study, unit_of(study, "p2"), answer="safe", difficulty="easy")
    users = []
    for n in range(10):
        enrolment = enrol(study)
        if enrolment.pk == enrolment.user.pk:  # an enrolment id that is not the user id
            enrolment.delete()
            enrolment = enrol(study, user=enrolment.user)
        users.append(enrolment.user)
        attempt = qualification.start_attempt(study, enrolment.user)
        answer_batch(attempt, lambda unit, n=n: "unsafe" if n == 0 else "safe")
        qualification.finish_attempt(attempt)
    results = qualification.results(study)
    assert results.first_attempt_pass_rate == pytest.approx(0.9) and results.easy_trap
    qualified = {row.user.pk: row.qualified for row in results.candidates}
    assert qualified == {u.pk: u != users[0] for u in users}
    assert results.passed_eventually == 9


def test_a_pairwise_test_is_scored_on_the_canonical_side_whatever_side_it_was_shown_on():
    study = make_study(Study.TaskKind.PAIRWISE, n_prompts=2, systems=("alpha", "beta"))
    units = list(Unit.objects.filter(study=study, role=Unit.Role.PRODUCTION).order_by("id"))
    for unit, answer in zip(units, ("first", "second"), strict=True):
        qualification.add_item(study, unit, answer=answer, difficulty="easy")
    user = enrol(study).user
    attempt = qualification.start_attempt(study, user)
    keys = {i.unit_id: i.unit.gold_answer.value["choice"] for i in QualificationItem.objects.all()}
    while (a := batches.next_task(attempt)) is not None:
        first = UnitOutput.objects.get(unit=a.unit, position=0).output_id
        shown_first = "left" if a.presentation["left"] == first else "right"
        other = {"left": "right", "right": "left"}[shown_first]
        submit_label(
            annotator=user,
            assignment_token=a.token,
            data={"choice": shown_first if keys[a.unit_id] == "first" else other},
            idempotency_key=uuid.uuid4(),
        )
    scored = qualification.finish_attempt(attempt)
    assert scored.score == 1.0 and scored.passed


def test_a_continuous_test_accepts_a_score_within_the_tolerance():
    study = make_study(Study.TaskKind.CONTINUOUS, n_prompts=2, systems=("alpha",))
    units = list(Unit.objects.filter(study=study, role=Unit.Role.PRODUCTION).order_by("id"))
    for unit in units:
        qualification.add_item(study, unit, answer="50", difficulty="easy")
    user = enrol(study).user
    attempt = qualification.start_attempt(study, user)
    scores = iter((60, 61))  # 10 off is within the tolerance, 11 is not
    while (a := batches.next_task(attempt)) is not None:
        submit_label(
            annotator=user,
            assignment_token=a.token,
            data={"score": next(scores)},
            idempotency_key=uuid.uuid4(),
        )
    assert qualification.finish_attempt(attempt).score == 0.5
