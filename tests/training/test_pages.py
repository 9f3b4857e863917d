"""The training pages over HTTP: leads reach theirs, annotators theirs, nobody else's; the test
is taken in the workbench's task UI; forms refuse bad input naming the field."""

import re

import pytest
from django.urls import reverse

from annotation.models import GuideVersion, Membership, QualificationItem, Ruling
from annotation.services import guides, qualification
from tests.factories import MembershipFactory, UserFactory, enrol
from tests.training.helpers import labelled_study, unit_of
from tests.workbench.helpers import HTMX, form_fields

pytestmark = pytest.mark.django_db

LEAD_PAGES = [
    "training-home",
    "guide-edit",
    "guide-flags",
    "qualification-builder",
    "qualification-results",
    "calibration-sessions",
]


def lead_of(study):
    return MembershipFactory(workspace=study.workspace, role=Membership.Role.LEAD).user


@pytest.mark.parametrize("name", LEAD_PAGES)
def test_lead_pages_open_for_the_lead_and_are_404_for_others(client, name):
    study, raters = labelled_study(n_prompts=2, raters=2)
    url = reverse(name, args=[study.token])
    client.force_login(lead_of(study))
    assert client.get(url).status_code == 200
    client.force_login(raters[0].user)
    assert client.get(url).status_code == 404
    client.force_login(UserFactory())
    assert client.get(url).status_code == 404


def test_publishing_from_the_editor_makes_a_version_with_rulings(client):
    study, _ = labelled_study(n_prompts=3, raters=2)
    client.force_login(lead_of(study))
    url = reverse("guide-edit", args=[study.token])
    response = client.post(
        url,
        {
            "body": "# Rice\n<script>alert(1)</script>",
            "changes": "rice",
            "r1-title": "Reheat is not enough",
            "r1-text": "Counter rice stays Unsafe.",
            "r1-examples": "p1",
        },
    )
    assert response.status_code == 302
    version = GuideVersion.objects.get()
    assert Ruling.objects.get().guide_version == version
    page = client.get(response["Location"]).content.decode()
    assert "<h1>Rice</h1>" in page and "<script>alert(1)" not in page


def test_a_bad_example_reference_is_shown_next_to_its_ruling_and_writes_nothing(client):
    study, _ = labelled_study(n_prompts=2, raters=2)
    client.force_login(lead_of(study))
    response = client.post(
        reverse("guide-edit", args=[study.token]),
        {"body": "x", "r2-title": "T", "r2-text": "why", "r2-examples": "p7"},
    )
    assert response.status_code == 200
    assert "item 1 (&#x27;p7&#x27;) matches no item" in response.content.decode()
    assert not GuideVersion.objects.exists()


def test_the_version_page_shows_a_diff(client):
    study, _ = labelled_study(n_prompts=2, raters=2)
    guides.publish_version(study, body="alpha\nbeta")
    guides.publish_version(study, body="alpha\ngamma")
    client.force_login(lead_of(study))
    page = client.get(reverse("guide-version", args=[study.token, 2])).content.decode()
    assert 'class="tr-diff-removed"' in page and "beta" in page
    assert 'class="tr-diff-added"' in page and "gamma" in page


def test_the_builder_adds_a_proposed_boundary_item(client):
    study, _ = labelled_study(n_prompts=3, raters=3)
    client.force_login(lead_of(study))
    url = reverse("qualification-builder", args=[study.token])
    page = client.get(url).content.decode()
    assert "Proposed boundary items" in page and "Unsafe <strong>1</strong>" in page
    unit = unit_of(study, "p0")
    response = client.post(
        url, {"action": "add", "unit": unit.pk, "answer": "unsafe", "difficulty": "boundary"}
    )
    assert response.status_code == 302
    item = QualificationItem.objects.get()
    assert item.source_unit == unit and item.split == {"Safe": 2, "Unsafe": 1}
    refused = client.post(url, {"action": "add", "unit": unit.pk, "difficulty": "boundary"})
    assert "Choose the expert answer" in refused.content.decode()


def test_the_annotator_takes_the_test_in_the_task_ui_and_reaches_production(client):
    study, _ = labelled_study(n_prompts=3, raters=3, requires_qualification=True)
    qualification.add_item(study, unit_of(study, "p0"), answer="unsafe", difficulty="boundary")
    qualification.add_item(study, unit_of(study, "p2"), answer="safe", difficulty="easy")
    user = enrol(study).user
    client.force_login(user)
    start = reverse("qualification-start", args=[study.token])
    assert "Start the test" in client.get(start).content.decode()
    task_url = client.post(start)["Location"]
    for _ in range(2):
        page = client.get(task_url).content.decode()
        assert 'id="task-form"' in page and "Qualification test" in page
        submit = re.search(r'hx-post="([^"]+)"', page).group(1)
        assert "/training/" in submit
        fields = form_fields(page)
        text = re.search(r"Output of alpha for prompt (\d)", page).group(1)
        choice = "unsafe" if text == "0" else "safe"
        response = client.post(submit, {**fields, "choice": choice}, **HTMX)
    assert response.status_code == 204 and "/result/" in response["HX-Redirect"]
    result = client.get(response["HX-Redirect"]).content.decode()
    assert "You passed" in result and reverse("work-task", args=[study.token]) in result
    assert 'id="task-form"' in client.get(reverse("work-task", args=[study.token])).content.decode()


def test_another_annotators_batch_is_404(client):
    study, _ = labelled_study(n_prompts=3, raters=3)
    qualification.add_item(study, unit_of(study, "p0"), answer="unsafe", difficulty="boundary")
    owner = enrol(study).user
    batch = qualification.start_attempt(study, owner)
    client.force_login(enrol(study).user)
    for name in ("training-task", "training-result"):
        assert client.get(reverse(name, args=[study.token, batch.token])).status_code == 404
