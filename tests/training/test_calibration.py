"""Calibration sessions: independent labels, the distribution shown only after a rater has
submitted all theirs (counts, never names), rulings recorded against items, publishing."""

import uuid

import pytest
from django.urls import reverse

from annotation.models import (
    CalibrationSession,
    GuideVersion,
    Label,
    Ruling,
    Study,
    Unit,
    UnitOutput,
)
from annotation.services import assignment as engine
from annotation.services import batches, calibration, guides
from annotation.services.submission import submit_label
from annotation.services.training_items import TrainingError
from tests.factories import enrol, make_study
from tests.training.helpers import answer_batch, labelled_study, unit_of

pytestmark = pytest.mark.django_db


def session_of_three(study):
    raters = [enrol(study) for _ in range(3)]
    session = calibration.open_session(
        study,
        title="Rice week",
        raters=[r.user for r in raters],
        units=[unit_of(study, p) for p in ("p0", "p1", "p2")],
    )
    return session, raters


def prompt_of(unit):
    return Unit.objects.get(pk=unit.pk).prompt.external_id


def test_a_session_needs_enrolled_raters_and_items():
    study, _ = labelled_study()
    stranger = enrol(labelled_study(n_prompts=1, raters=1)[0]).user
    rater = enrol(study).user
    with pytest.raises(TrainingError, match="not enrolled"):
        calibration.open_session(
            study, title="S", raters=[rater, stranger], units=[unit_of(study, "p0")]
        )
    with pytest.raises(TrainingError) as error:
        calibration.open_session(study, title="S", raters=[rater, enrol(study).user], units=[])
    assert error.value.field == "items"
    assert not CalibrationSession.objects.exists()


def test_raters_see_the_distribution_only_after_submitting_all_their_labels(client):
    study, _ = labelled_study()
    session, raters = session_of_three(study)
    picks = [
        {"p0": "unsafe", "p1": "safe", "p2": "safe"},
        {"p0": "safe", "p1": "safe", "p2": "safe"},
        {"p0": "unsafe", "p1": "unsafe", "p2": "safe"},
    ]
    url = reverse("calibration-rater", args=[study.token, session.token])
    first = raters[0]
    client.force_login(first.user)
    # the other two finish first: the first rater still sees nothing of theirs
    for rater, pick in zip(raters[1:], picks[1:], strict=True):
        batch = calibration.start_session_batch(session, rater.user)
        answer_batch(batch, lambda unit, pick=pick: pick[prompt_of(unit)])
    page = client.get(url).content.decode()
    assert "Label the batch" in page and "tr-split" not in page
    batch = calibration.start_session_batch(session, first.user)
    answer_batch(batch, lambda unit: picks[0][prompt_of(unit)])
    page = client.get(url).content.decode()
    assert "How the labels fell" in page
    for r in raters:
        assert r.user.username not in page.split("</header>", 1)[1]
    splits = calibration.distribution(session)
    # most disputed first: p0 and p1 split 2:1, p2 unanimous last
    assert [prompt_of(s.item.unit) for s in splits][-1] == "p2"
    assert {prompt_of(s.item.unit): dict(s.split) for s in splits} == {
        "p0": {"Unsafe": 2, "Safe": 1},
        "p1": {"Safe": 2, "Unsafe": 1},
        "p2": {"Safe": 3},
    }


def test_calibration_labels_are_calibration_and_never_production():
    study, _ = labelled_study()
    slots = dict(Unit.objects.filter(role="production").values_list("id", "open_slots"))
    production = Label.objects.filter(purpose="production").count()
    session, raters = session_of_three(study)
    for r in raters:
        answer_batch(calibration.start_session_batch(session, r.user), lambda unit: "safe")
    assert Label.objects.filter(purpose="calibration").count() == 9
    assert Label.objects.filter(purpose="production").count() == production
    assert dict(Unit.objects.filter(role="production").values_list("id", "open_slots")) == slots
    assert set(
        Label.objects.filter(purpose="calibration").values_list("unit__role", flat=True)
    ) == {"calibration"}


def test_rulings_recorded_in_a_session_are_published_as_a_version_that_gates():
    study, producers = labelled_study()
    session, raters = session_of_three(study)
    for r in raters:
        answer_batch(calibration.start_session_batch(session, r.user), lambda unit: "safe")
    items = {prompt_of(s.item.unit): s.item for s in calibration.distribution(session)}
    calibration.record_ruling(session, items["p0"], title="Reheat is not enough", text="Unsafe.")
    calibration.record_ruling(session, items["p1"], title="Fridge within 2h", text="Safe.")
    assert Ruling.objects.filter(guide_version__isnull=True).count() == 2
    assert guides.rulings_in_force(study) == []  # drafts are not in the guide yet
    version = calibration.publish_session(
        session, body="The guide.", requires_recalibration=True, seed=2
    )
    assert version.number == 1 and version.rulings_introduced.count() == 2
    assert version.recalibration_units.count() == 2
    session.refresh_from_db()
    assert session.status == "published" and session.published_version == version
    # everyone enrolled before the change is gated until their batch is done
    assert engine.work_state(producers[0].user, study).blocked_reason == "recalibration"
    with pytest.raises(TrainingError):
        calibration.record_ruling(session, items["p2"], title="Late", text="x")


def test_publishing_without_rulings_is_refused():
    study, _ = labelled_study()
    session, _ = session_of_three(study)
    with pytest.raises(TrainingError):
        calibration.publish_session(session, body="x")
    assert not GuideVersion.objects.exists()


def test_only_the_sessions_raters_reach_it(client):
    study, _ = labelled_study()
    session, _ = session_of_three(study)
    outsider = enrol(study).user
    client.force_login(outsider)
    url = reverse("calibration-rater", args=[study.token, session.token])
    assert client.get(url).status_code == 404
    with pytest.raises(TrainingError):
        calibration.start_session_batch(session, outsider)


def test_a_rater_has_finished_a_session_only_with_that_sessions_batch():
    study, _ = labelled_study()
    first, raters = session_of_three(study)
    second = calibration.open_session(
        study, title="Fridge week", raters=[r.user for r in raters], units=[unit_of(study, "p3")]
    )
    user = raters[0].user
    answer_batch(calibration.start_session_batch(first, user), lambda unit: "safe")
    assert calibration.rater_finished(first, user)
    assert not calibration.rater_finished(second, user)  # not even started


def submit_first_task(batch, choice):
    assignment = batches.next_task(batch)
    submit_label(
        annotator=batch.annotator,
        assignment_token=assignment.token,
        data={"choice": choice},
        idempotency_key=uuid.uuid4(),
    )


def test_a_tied_split_lists_its_answers_alphabetically_and_equal_splits_the_most_labelled_first():
    study, _ = labelled_study()
    raters = [enrol(study).user for _ in range(3)]
    units = [unit_of(study, p) for p in ("p0", "p1")]
    ties = calibration.open_session(study, title="Ties", raters=raters[:2], units=units)
    # p0 and p1 split 1:1, "unsafe" counted first on one of them whichever batch comes first
    picks = [{"p0": "unsafe", "p1": "safe"}, {"p0": "safe", "p1": "unsafe"}]
    for user, pick in zip(raters[:2], picks, strict=True):
        batch = calibration.start_session_batch(ties, user)
        answer_batch(batch, lambda unit, pick=pick: pick[prompt_of(unit)])
    shown = calibration.distribution(ties)
    assert [s.split for s in shown] == [(("Safe", 1), ("Unsafe", 1))] * 2
    units = [unit_of(study, p) for p in ("p2", "p3")]
    counts = calibration.open_session(study, title="Counts", raters=raters, units=units)
    for user in raters[:2]:
        answer_batch(calibration.start_session_batch(counts, user), lambda unit: "safe")
    # the third rater answers one item only: one unanimous item has 3 labels, the other 2
    submit_first_task(calibration.start_session_batch(counts, raters[2]), "safe")
    assert [s.n for s in calibration.distribution(counts)] == [3, 2]


def test_a_pairwise_session_shows_which_canonical_side_won_whatever_side_it_was_shown_on():
    study = make_study(Study.TaskKind.PAIRWISE, n_prompts=2, systems=("alpha", "beta"))
    raters = [enrol(study).user for _ in range(2)]
    units = list(Unit.objects.filter(study=study, role=Unit.Role.PRODUCTION).order_by("id"))
    session = calibration.open_session(study, title="Pairs", raters=raters, units=units)
    for user in raters:
        batch = calibration.start_session_batch(session, user)
        while (a := batches.next_task(batch)) is not None:
            first = UnitOutput.objects.get(unit=a.unit, position=0).output_id
            side = "left" if a.presentation["left"] == first else "right"
            submit_label(
                annotator=user,
                assignment_token=a.token,
                data={"choice": side},
                idempotency_key=uuid.uuid4(),
            )
    shown = calibration.distribution(session)
    assert [s.split for s in shown] == [(("The first response is better", 2),)] * 2
