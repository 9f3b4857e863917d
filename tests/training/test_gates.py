"""Gates hold through every entry point: the workbench, the JSON API and the crowd entry give a
clear refusal and create no assignment; they lift once the annotator qualifies or recalibrates."""

import uuid

import pytest
from django.urls import reverse

from annotation.models import Assignment, Enrolment, Label, Study, Unit
from annotation.services import assignment as engine
from annotation.services import batches, calibration, guides
from annotation.services.training_items import resolve_items
from tests.factories import enrol, make_study
from tests.training.helpers import answer_batch

pytestmark = pytest.mark.django_db


def gated_study(reason: str):
    """A live study with one annotator stopped by `reason`."""
    if reason == "qualification":
        study = make_study(n_prompts=3, requires_qualification=True)
        return study, enrol(study)
    if reason == "pool":
        study = make_study(n_prompts=3, allowed_pools=["expert"])
        return study, enrol(study, pool=Enrolment.Pool.OPEN_CROWD)
    study = make_study(n_prompts=3)
    e = enrol(study)
    guides.publish_version(
        study,
        body="v1",
        rulings=[guides.NewRuling("R", "why", examples=tuple(resolve_items(study, "p0")))],
        requires_recalibration=True,
    )
    return study, e


REASONS = ["qualification", "recalibration", "pool"]


@pytest.mark.parametrize("reason", REASONS)
def test_the_engine_refuses_a_gated_annotator_and_creates_nothing(reason):
    study, e = gated_study(reason)
    assert engine.next_assignment(e.user, study) is None
    assert engine.work_state(e.user, study).blocked_reason == reason
    assert not Assignment.objects.exists()


@pytest.mark.parametrize("reason", REASONS)
def test_the_json_api_refuses_a_gated_annotator_and_creates_nothing(client, reason):
    study, e = gated_study(reason)
    client.force_login(e.user)
    body = client.get(reverse("api-work-next", args=[study.token])).json()
    assert body == {"token": None, "position": None, "task": None, "blocked": reason}
    assert not Assignment.objects.exists()


@pytest.mark.parametrize("reason", REASONS)
def test_the_workbench_refuses_a_gated_annotator_with_the_way_forward(client, reason):
    study, e = gated_study(reason)
    client.force_login(e.user)
    page = client.get(reverse("work-task", args=[study.token])).content.decode()
    assert 'id="task-form"' not in page
    assert not Assignment.objects.exists()
    if reason == "qualification":
        assert "Qualification needed" in page
        assert reverse("qualification-start", args=[study.token]) in page
    elif reason == "recalibration":
        assert "The guide has changed" in page
        assert reverse("recalibration-start", args=[study.token]) in page
    else:
        assert "Not open to your group" in page
    start = client.get(reverse("work-start", args=[study.token])).content.decode()
    if reason != "pool":
        assert ">Start<" not in start


def test_the_crowd_entry_leads_a_gated_worker_to_the_test_not_to_work(client):
    study = make_study(
        n_prompts=3, requires_qualification=True, crowd_platform=Study.CrowdPlatform.PROLIFIC
    )
    url = reverse("crowd-entry", args=[study.token])
    response = client.get(url, {"PROLIFIC_PID": "abc123", "STUDY_ID": "s", "SESSION_ID": "x"})
    assert response.status_code == 302
    start = client.get(response["Location"]).content.decode()
    assert reverse("qualification-start", args=[study.token]) in start
    client.get(reverse("work-task", args=[study.token]))
    assert client.get(reverse("api-work-next", args=[study.token])).json()["blocked"] == (
        "qualification"
    )
    assert not Assignment.objects.exists()


def test_a_guide_change_blocks_production_until_the_recalibration_batch_is_done():
    study, e = gated_study("recalibration")
    batch = calibration.start_recalibration(study, e.user)
    labels = answer_batch(batch, lambda unit: "safe")
    assert labels and all(label.purpose == "calibration" for label in labels)
    assert engine.work_state(e.user, study).blocked_reason == "recalibration"  # not finished yet
    calibration.finish_recalibration(batch)
    assert engine.work_state(e.user, study).blocked_reason == ""
    assert engine.next_assignment(e.user, study).purpose == "production"


def test_a_version_published_before_enrolment_does_not_gate_the_newcomer():
    study = make_study(n_prompts=3)
    guides.publish_version(
        study,
        body="v1",
        rulings=[guides.NewRuling("R", "why", examples=tuple(resolve_items(study, "p0")))],
        requires_recalibration=True,
    )
    newcomer = enrol(study)
    assert engine.work_state(newcomer.user, study).blocked_reason == ""


def test_a_version_without_recalibration_does_not_gate():
    study = make_study(n_prompts=3)
    e = enrol(study)
    guides.publish_version(study, body="v1")
    assert engine.next_assignment(e.user, study) is not None


def test_labels_carry_the_guide_version_they_were_made_under():
    study = make_study(n_prompts=3)
    e = enrol(study)
    guides.publish_version(study, body="v1")
    a = engine.next_assignment(e.user, study)
    from annotation.services.submission import submit_label

    submit_label(
        annotator=e.user,
        assignment_token=a.token,
        data={"choice": "safe"},
        idempotency_key=uuid.uuid4(),
    )
    v2 = guides.publish_version(study, body="v2")
    b = engine.next_assignment(e.user, study)
    submit_label(
        annotator=e.user,
        assignment_token=b.token,
        data={"choice": "safe"},
        idempotency_key=uuid.uuid4(),
    )
    numbers = list(Label.objects.order_by("id").values_list("guide_version__number", flat=True))
    assert numbers == [1, v2.number]


def test_training_work_never_takes_production_slots_or_shows_up_as_progress():
    study, e = gated_study("recalibration")
    before = dict(Unit.objects.filter(role="production").values_list("id", "open_slots"))
    batch = calibration.start_recalibration(study, e.user)
    answer_batch(batch, lambda unit: "unsafe")
    calibration.finish_recalibration(batch)
    after = dict(Unit.objects.filter(role="production").values_list("id", "open_slots"))
    assert before == after
    assert engine.work_state(e.user, study).done == 0
    # an open training lease is never resumed (nor counted) as production work
    other = enrol(study)
    session = calibration.open_session(
        study, title="S", raters=[e.user, other.user], units=resolve_items(study, "p1")
    )
    lease = batches.next_task(calibration.start_session_batch(session, e.user))
    assert lease.purpose == "calibration"
    a = engine.next_assignment(e.user, study)
    assert a.purpose == "production" and a.token != lease.token
    assert engine.work_state(e.user, study).assigned >= 1


def test_a_guide_change_stops_even_the_task_already_on_screen():
    study = make_study(n_prompts=3)
    e = enrol(study)
    open_lease = engine.next_assignment(e.user, study)
    assert open_lease is not None
    guides.publish_version(
        study,
        body="v1",
        rulings=[guides.NewRuling("R", "why", examples=tuple(resolve_items(study, "p0")))],
        requires_recalibration=True,
    )
    assert engine.next_assignment(e.user, study) is None
    assert engine.work_state(e.user, study).blocked_reason == "recalibration"
