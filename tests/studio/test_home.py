"""The annotator's home: per study progress, what blocks them and the step that unblocks them;
drafts (nothing offered) are not shown."""

import uuid

import pytest
from django.urls import reverse

from annotation.models import GuideVersion
from annotation.selectors import annotator_home
from annotation.services.assignment import next_assignment
from annotation.services.submission import submit_label
from tests.factories import MembershipFactory, UserFactory, enrol, make_study

pytestmark = pytest.mark.django_db


def member(study, user=None, **enrolment):
    user = user or UserFactory()
    MembershipFactory(workspace=study.workspace, user=user, role="annotator")
    enrol(study, user, **enrolment)
    return user


def card(user, study):
    (found,) = [c for c in annotator_home(user) if c.study == study]
    return found


def test_a_live_study_with_work_offers_start_and_no_blocker():
    study = make_study(n_prompts=2)
    c = card(member(study), study)
    assert (c.blocker, c.action_label) == ("", "Start")
    assert c.action_url == reverse("work-start", args=[study.token])


def test_after_a_first_answer_the_card_offers_continue_with_progress():
    study = make_study(n_prompts=3)
    user = member(study)
    fresh = card(user, study)
    a = next_assignment(user, study)
    submit_label(
        annotator=user,
        assignment_token=a.token,
        data={"choice": "safe"},
        idempotency_key=uuid.uuid4(),
        timings={},
    )
    c = card(user, study)
    assert (fresh.action_label, c.action_label) == ("Start", "Continue")
    assert c.done == 1 and c.assigned >= 2 and c.assigned == fresh.assigned


def test_a_draft_study_is_not_shown():
    study = make_study(n_prompts=2, status="draft")
    assert annotator_home(member(study)) == []


def test_a_paused_study_says_so_without_a_link():
    study = make_study(n_prompts=2, status="paused")
    c = card(member(study), study)
    assert c.blocker == "paused" and (c.action_url, c.action_label) == ("", "")
    assert c.title == "Paused by the lead"
    assert c.text == "No new tasks for now; your progress is kept."


def test_qualification_and_recalibration_link_to_their_step():
    study = make_study(n_prompts=2, requires_qualification=True)
    c = card(member(study), study)
    assert c.blocker == "qualification" and c.action_url.startswith(f"/work/{study.token}/")
    other = make_study(n_prompts=2)
    user = member(other)
    GuideVersion.objects.create(study=other, number=1, body="v1", requires_recalibration=True)
    c = card(user, other)
    assert c.blocker == "recalibration" and c.action_url.startswith(f"/work/{other.token}/")


def test_quota_reached_shows_progress_and_the_reason():
    study = make_study(n_prompts=3)
    user = member(study, quota=1)
    a = next_assignment(user, study)
    submit_label(
        annotator=user,
        assignment_token=a.token,
        data={"choice": "safe"},
        idempotency_key=uuid.uuid4(),
        timings={},
    )
    c = card(user, study)
    assert (c.blocker, c.done, c.action_url) == ("quota", 1, "")


def test_the_home_page_shows_each_card_with_its_blocker(client):
    live = make_study(n_prompts=2, name="Live one")
    paused = make_study(n_prompts=2, status="paused", name="Paused one")
    user = member(live)
    member(paused, user)
    client.force_login(user)
    page = client.get(reverse("home")).content.decode()
    assert 'data-blocker="none"' in page and 'data-blocker="paused"' in page
    assert "Paused by the lead" in page
