"""The lead's pages: new study, settings with scheme editors and field errors, launch, overview."""

import pytest
from django.urls import reverse

from annotation.models import GuideVersion, Membership, Study
from tests.factories import MembershipFactory, UserFactory, WorkspaceFactory, enrol, make_study
from tests.studio.forms import form_data

pytestmark = pytest.mark.django_db


@pytest.fixture
def lead(client):
    membership = MembershipFactory(role=Membership.Role.LEAD)
    client.force_login(membership.user)
    return membership


def create(client, kind, name="My study"):
    response = client.post(reverse("studio-new-study"), {"name": name, "task_kind": kind})
    assert response.status_code == 302, response.content.decode()[:2000]
    return Study.objects.get(name=name)


def test_home_offers_new_study_to_a_lead_and_not_to_an_annotator(client, lead):
    assert reverse("studio-new-study") in client.get("/").content.decode()
    annotator = UserFactory()
    client.force_login(annotator)
    assert reverse("studio-new-study") not in client.get("/").content.decode()
    assert client.get(reverse("studio-new-study")).status_code == 404


@pytest.mark.parametrize("kind", [k.value for k in Study.TaskKind])
def test_a_lead_creates_a_draft_of_each_kind_and_sees_only_its_settings(client, lead, kind):
    study = create(client, kind)
    assert study.workspace == lead.workspace and study.status == "draft"
    page = client.get(reverse("studio-settings", args=[study.token])).content.decode()
    assert ('name="spa_exposure_m"' in page) == (kind == "spa")
    assert ('name="points-0-value"' in page) == (kind == "likert")
    assert ('name="labels-0-key"' in page) == (kind in ("categorical", "ordinal"))
    assert ('name="scale-min_text"' in page) == (kind == "continuous")
    assert ('name="pair-tie_allowed"' in page) == (kind == "pairwise")
    assert "label_scheme" not in page  # no JSON box


def settings_post(study, client, **overrides):
    """The settings page's own form as a browser would post it back, with `overrides`."""
    page = client.get(reverse("studio-settings", args=[study.token])).content.decode()
    data = form_data(page, "studio-form")
    data.update(overrides)
    return client.post(reverse("studio-settings", args=[study.token]), data)


def test_settings_save_a_likert_scheme_edited_as_rows(client, lead):
    study = create(client, "likert")
    response = settings_post(
        study,
        client,
        **{
            "points-0-value": "0",
            "points-0-text": "Awful",
            "points-4-text": "Superb",
            "overlap": "4",
        },
    )
    assert response.status_code == 302
    study.refresh_from_db()
    assert study.label_scheme["points"][0] == {"value": 0, "text": "Awful"}
    assert study.label_scheme["points"][4]["text"] == "Superb"
    assert study.overlap == 4


def test_emptying_every_likert_point_is_a_field_error_and_saves_nothing(client, lead):
    study = create(client, "likert")
    blank = {f"points-{i}-{f}": "" for i in range(8) for f in ("value", "text")}
    response = settings_post(study, client, **blank, name="Renamed")
    assert response.status_code == 200
    assert "add at least 2 points" in response.content.decode()
    study.refresh_from_db()
    assert study.name == "My study" and len(study.label_scheme["points"]) == 5


def test_each_bad_value_is_shown_at_its_field(client, lead):
    study = create(client, "categorical")
    response = settings_post(
        study,
        client,
        **{
            "labels-1-value": "yes",
            "labels-0-key": "g",
            "overlap": "0",
            "gold_rate": "150",
            "crowd_platform": "prolific",
        },
    )
    page = response.content.decode()
    assert response.status_code == 200
    for text in (
        "&#x27;yes&#x27; is used twice",
        "opens the guide",
        "must be at least 1",
        "Ensure this value is less than or equal to 99",
    ):
        assert text in page, text
    study.refresh_from_db()
    assert study.label_scheme["labels"][1]["value"] == "no"


def test_a_crowd_platform_without_completion_is_a_field_error(client, lead):
    study = create(client, "categorical")
    page = settings_post(study, client, crowd_platform="prolific").content.decode()
    assert "give the completion code or URL" in page


def test_a_live_study_shows_its_locked_settings_and_why(client, lead):
    study = make_study("likert", workspace=lead.workspace, n_prompts=2)
    page = client.get(reverse("studio-settings", args=[study.token])).content.decode()
    assert "Locked" in page and "Start a new study for a new scale" in page
    assert 'name="points-0-value"' not in page
    response = settings_post(study, client, overlap="9", question="Reworded?")
    assert response.status_code == 302  # the disabled overlap field is ignored, wording saved
    study.refresh_from_db()
    assert study.overlap == 3 and study.question == "Reworded?"


def test_launch_page_lists_failed_items_and_refuses_to_go_live(client, lead):
    study = make_study("categorical", workspace=lead.workspace, n_prompts=2, status="draft")
    page = client.get(reverse("studio-launch", args=[study.token])).content.decode()
    assert "needs 3 different people" in page and "publish a first version" in page
    response = client.post(
        reverse("studio-set-status", args=[study.token]), {"status": "live"}, follow=True
    )
    assert "Enough annotators" in response.content.decode()
    study.refresh_from_db()
    assert study.status == "draft"


def test_launch_goes_live_when_the_checklist_passes(client, lead):
    study = make_study("categorical", workspace=lead.workspace, n_prompts=2, status="draft")
    for _ in range(3):
        enrol(study)
    GuideVersion.objects.create(study=study, number=1, body="Guide")
    client.post(reverse("studio-set-status", args=[study.token]), {"status": "live"})
    study.refresh_from_db()
    assert study.status == "live"


NEW_PAGES = ["study-overview", "studio-settings", "studio-launch"]


@pytest.mark.parametrize("name", NEW_PAGES)
def test_a_lead_of_another_workspace_gets_404(client, name):
    study = make_study(n_prompts=1)
    other = MembershipFactory(role=Membership.Role.LEAD).user
    client.force_login(other)
    assert client.get(reverse(name, args=[study.token])).status_code == 404
    assert client.post(reverse(name, args=[study.token]), {}).status_code in (404, 405)


def test_a_lead_of_another_workspace_gets_404_on_its_workspace_pages(client):
    ws = WorkspaceFactory()
    client.force_login(MembershipFactory(role=Membership.Role.LEAD).user)
    assert client.get(reverse("studio-workspace", args=[ws.slug])).status_code == 404
    assert client.get(reverse("studio-new-study-in", args=[ws.slug])).status_code == 404
    response = client.post(
        reverse("studio-new-study-in", args=[ws.slug]), {"name": "x", "task_kind": "likert"}
    )
    assert response.status_code == 404
    assert not Study.objects.exists()


def test_status_post_of_another_workspace_changes_nothing(client):
    study = make_study(n_prompts=1)
    client.force_login(MembershipFactory(role=Membership.Role.LEAD).user)
    response = client.post(reverse("studio-set-status", args=[study.token]), {"status": "closed"})
    assert response.status_code == 404
    study.refresh_from_db()
    assert study.status == "live"
