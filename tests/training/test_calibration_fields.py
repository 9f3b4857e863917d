"""Calibration's read side field by field: which sessions a rater is offered, when a guide
change asks for recalibration, each item's split as the raters see it, the lead's progress
table, and where a ruling cannot go.

test_calibration.py and test_gates.py check the flow; these were added after the mutation run
of annotation/services/calibration.py (bench/MUTATION.md), where a session offered to every
annotator, another study's enrolment read, or an inverted split order passed every test.
"""

import uuid

import pytest
from django.urls import reverse

from annotation.models import Membership, Unit
from annotation.services import batches, calibration, guides
from annotation.services.submission import submit_label
from annotation.services.training_items import TrainingError, resolve_items
from tests.factories import MembershipFactory, UserFactory, enrol, make_study
from tests.training.helpers import answer_batch, labelled_study, unit_of

pytestmark = pytest.mark.django_db


def prompt_of(unit):
    return Unit.objects.get(pk=unit.pk).prompt.external_id


def open_session(study, prompts=("p0", "p1", "p2"), n_raters=3, names=None):
    names = names or [f"cal-{study.pk}-{i}" for i in range(n_raters)]
    raters = [enrol(study, user=UserFactory(username=name)).user for name in names]
    session = calibration.open_session(
        study, title="Week", raters=raters, units=[unit_of(study, p) for p in prompts]
    )
    return session, raters


def test_a_rater_is_offered_the_open_sessions_they_rate_in_only():
    study, _ = labelled_study()
    session, raters = open_session(study)
    outsider = enrol(study).user
    assert list(calibration.sessions_for_rater(study, raters[0])) == [session]
    assert list(calibration.sessions_for_rater(study, outsider)) == []
    answer_batch(calibration.start_session_batch(session, raters[0]), lambda unit: "safe")
    items = {prompt_of(s.item.unit): s.item for s in calibration.distribution(session)}
    calibration.record_ruling(session, items["p0"], title="R", text="why")
    calibration.publish_session(session, body="v1")
    assert list(calibration.sessions_for_rater(study, raters[0])) == []  # published: closed


def test_each_item_shows_its_split_most_common_first_and_its_draft_rulings():
    study, _ = labelled_study()
    session, raters = open_session(study, names=["cal-a", "cal-b", "cal-c"])
    picks = [
        {"p0": "unsafe", "p1": "safe", "p2": "safe"},
        {"p0": "safe", "p1": "unsafe", "p2": "safe"},
        {"p0": "unsafe", "p1": "unsafe", "p2": "safe"},
    ]
    for rater, pick in zip(raters[:2], picks[:2], strict=True):
        batch = calibration.start_session_batch(session, rater)
        answer_batch(batch, lambda unit, pick=pick: pick[prompt_of(unit)])
    assert [(r.username, done, total) for r, done, total in calibration.progress(session)] == [
        ("cal-a", 3, 3),
        ("cal-b", 3, 3),
        ("cal-c", 0, 3),
    ]
    batch = calibration.start_session_batch(session, raters[2])
    answer_batch(batch, lambda unit: picks[2][prompt_of(unit)])
    splits = calibration.distribution(session)
    by_prompt = {prompt_of(s.item.unit): s for s in splits}
    assert by_prompt["p0"].split == (("Unsafe", 2), ("Safe", 1))
    assert by_prompt["p1"].split == (("Unsafe", 2), ("Safe", 1))
    assert by_prompt["p2"].split == (("Safe", 3),)
    assert [s.n for s in splits] == [3, 3, 3]
    assert by_prompt["p0"].disagreement == pytest.approx(1 / 3)
    assert by_prompt["p2"].disagreement == 0.0
    # most disputed first, then the session's order
    assert [prompt_of(s.item.unit) for s in splits] == ["p0", "p1", "p2"]
    assert all(s.text is not None for s in splits)
    assert len({str(s.text) for s in splits}) == 3
    ruling = calibration.record_ruling(session, by_prompt["p1"].item, title="R", text="why")
    after = {prompt_of(s.item.unit): s for s in calibration.distribution(session)}
    assert after["p1"].rulings == (ruling,)
    assert after["p0"].rulings == () and after["p2"].rulings == ()


def test_an_item_nobody_labelled_yet_has_no_split_and_no_disagreement():
    study, _ = labelled_study()
    session, _ = open_session(study)
    for split in calibration.distribution(session):
        assert (split.split, split.n, split.disagreement) == ((), 0, 0.0)


def test_a_ruling_goes_only_on_an_item_of_an_open_session():
    study, _ = labelled_study()
    session, raters = open_session(study)
    other, _ = open_session(study, prompts=("p3",), n_raters=2, names=["cal-x", "cal-y"])
    foreign = other.items.get()
    with pytest.raises(TrainingError) as error:
        calibration.record_ruling(session, foreign, title="R", text="why")
    assert (error.value.field, str(error.value.message)) == (
        "item",
        "this item is not in the session",
    )
    item = session.items.first()
    calibration.record_ruling(session, item, title="R", text="why")
    calibration.publish_session(session, body="v1")
    session.refresh_from_db()
    with pytest.raises(TrainingError) as error:
        calibration.record_ruling(session, item, title="Late", text="why")
    assert error.value.field == "session"


def test_recalibration_is_due_for_a_new_version_that_asks_for_it_until_done():
    study = make_study(n_prompts=3)
    other = make_study(n_prompts=1)

    def ruling(title):
        return [guides.NewRuling(title, "why", examples=tuple(resolve_items(study, "p0")))]

    # Asked for before this annotator enrolled: they start on it, nothing to recalibrate.
    guides.publish_version(study, body="v1", rulings=ruling("R1"), requires_recalibration=True)
    user = enrol(study).user
    enrol(study)  # another annotator of the study
    enrol(other, user=user)  # enrolled elsewhere too: only this study's enrolment counts
    assert calibration.recalibration_due(study, user) is None
    guides.publish_version(study, body="v2")  # asks for nothing
    assert calibration.recalibration_due(study, user) is None
    v3 = guides.publish_version(study, body="v3", rulings=ruling("R3"), requires_recalibration=True)
    assert calibration.recalibration_due(study, user) == v3
    batch = calibration.start_recalibration(study, user)
    answer_batch(batch, lambda unit: "safe")
    calibration.finish_recalibration(batch)
    assert calibration.recalibration_due(study, user) is None  # calibrated on v3 itself
    assert calibration.recalibration_due(other, user) is None


def test_the_session_page_shows_each_raters_progress_and_records_rulings_until_published(client):
    study, _ = labelled_study()
    session, raters = open_session(study, names=["cal-a", "cal-b", "cal-c"])
    started = calibration.start_session_batch(session, raters[0])  # one item of three answered
    task = batches.next_task(started)
    submit_label(
        annotator=raters[0],
        assignment_token=task.token,
        data={"choice": "safe"},
        idempotency_key=uuid.uuid4(),
    )
    answer_batch(calibration.start_session_batch(session, raters[1]), lambda unit: "safe")
    client.force_login(MembershipFactory(workspace=study.workspace, role=Membership.Role.LEAD).user)
    url = reverse("calibration-session", args=[study.token, session.token])
    page = client.get(url)
    assert [(r.username, done, total) for r, done, total in page.context["progress"]] == [
        ("cal-a", 1, 3),
        ("cal-b", 3, 3),
        ("cal-c", 0, 3),
    ]
    items = {prompt_of(s.item.unit): s.item for s in page.context["splits"]}
    form = {"action": "ruling", "item": items["p0"].pk, "title": "Reheat", "text": "Unsafe."}
    assert client.post(url, form).status_code == 302
    # A ruling recorded with a worked example keeps it (the page's form has no example field).
    calibration.record_ruling(
        session, items["p1"], title="Fridge", text="Safe.", example="Rice chilled within 2h"
    )
    calibration.publish_session(session, body="The guide.")
    stale = client.post(url, {**form, "title": "Late"})  # from a page opened before publishing
    assert stale.context["ruling_error"] == "this session was published; open a new one"

    client.force_login(raters[0])
    guide = client.get(reverse("work-guide", args=[study.token])).content.decode()
    assert "Reheat" in guide and "Fridge" in guide
    assert guide.count("Example:") == 1 and "Example: Rice chilled within 2h" in guide
