"""Each role reaches what it should and nothing else; a foreign object answers 404, never 500."""

import pytest
from django.urls import reverse

from annotation.models import Membership
from tests.factories import MembershipFactory, UserFactory, enrol, make_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def world():
    """Two workspaces, each with a lead and a study; one annotator enrolled in study A only."""
    study_a = make_study(n_prompts=2)
    study_b = make_study(n_prompts=2)
    lead_a = MembershipFactory(workspace=study_a.workspace, role=Membership.Role.LEAD).user
    lead_b = MembershipFactory(workspace=study_b.workspace, role=Membership.Role.LEAD).user
    annotator = UserFactory()
    MembershipFactory(workspace=study_a.workspace, user=annotator, role="annotator")
    enrol(study_a, annotator)
    staff = UserFactory(is_staff=True)
    return {
        "a": study_a,
        "b": study_b,
        "lead_a": lead_a,
        "lead_b": lead_b,
        "ann": annotator,
        "staff": staff,
    }


def get(client, user, name, study):
    client.force_login(user)
    return client.get(reverse(name, args=[study.token]))


def test_anonymous_visitor_is_sent_to_sign_in(client, world):
    response = client.get(reverse("study-overview", args=[world["a"].token]))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_lead_opens_own_workspace_study(client, world):
    assert get(client, world["lead_a"], "study-overview", world["a"]).status_code == 200


def test_lead_cannot_open_another_workspaces_study(client, world):
    assert get(client, world["lead_a"], "study-overview", world["b"]).status_code == 404


def test_annotator_cannot_open_lead_pages_of_their_own_study(client, world):
    assert get(client, world["ann"], "study-overview", world["a"]).status_code == 404


def test_annotator_opens_the_study_they_are_enrolled_in(client, world):
    assert get(client, world["ann"], "work-start", world["a"]).status_code == 200


def test_annotator_cannot_open_a_study_they_are_not_enrolled_in(client, world):
    assert get(client, world["ann"], "work-start", world["b"]).status_code == 404


def test_enrolment_in_one_study_opens_no_other_study_of_the_same_workspace(client, world):
    sibling = make_study(n_prompts=2, workspace=world["a"].workspace, name="Sibling study")
    assert get(client, world["ann"], "work-start", sibling).status_code == 404
    page = client.get(reverse("home")).content.decode()
    assert world["a"].name in page and sibling.name not in page


def test_lead_is_not_an_annotator_of_studies_they_are_not_enrolled_in(client, world):
    assert get(client, world["lead_a"], "work-start", world["a"]).status_code == 404


def test_staff_reach_every_study(client, world):
    for study in (world["a"], world["b"]):
        assert get(client, world["staff"], "study-overview", study).status_code == 200


def test_unknown_token_answers_404_not_500(client, world):
    client.force_login(world["lead_a"])
    assert client.get(reverse("study-overview", args=["no-such-token"])).status_code == 404


def test_home_lists_only_reachable_studies(client, world):
    client.force_login(world["lead_b"])
    page = client.get(reverse("home")).content.decode()
    assert world["b"].name in page
    assert world["a"].name not in page


def test_annotator_home_lists_enrolled_study_as_work_not_as_lead(client, world):
    client.force_login(world["ann"])
    page = client.get(reverse("home")).content.decode()
    assert reverse("work-start", args=[world["a"].token]) in page
    assert reverse("study-overview", args=[world["a"].token]) not in page
    assert world["b"].name not in page


def test_admin_site_is_closed_to_leads(client, world):
    client.force_login(world["lead_a"])
    response = client.get("/admin/")
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]


def test_htmx_request_from_expired_session_gets_401_with_redirect(client, world):
    response = client.get(
        reverse("work-start", args=[world["a"].token]), headers={"HX-Request": "true"}
    )
    assert response.status_code == 401
    assert response["HX-Redirect"].startswith(reverse("login"))
