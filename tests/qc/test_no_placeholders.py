"""No rendered page shows an unfilled template placeholder such as "Writer {x}": every page kind
an annotator or a lead opens, for every task kind, on the demo studies and on simulated ones."""

import re

import pytest
from django.urls import reverse

from annotation.demo import load_demo
from annotation.models import Membership, Study
from qc import services
from tests.factories import MembershipFactory, enrol, make_study
from tests.qc import simulate

pytestmark = pytest.mark.django_db

PLACEHOLDER = re.compile(r"\{\s*[A-Za-z_][A-Za-z0-9_]*\s*\}|\{\{|\{%")


def visible_text(html: str) -> str:
    """The page without its data blocks (chart specs are JSON, not text people read)."""
    html = re.sub(r'<script[^>]*type="application/json"[^>]*>.*?</script>', "", html, flags=re.S)
    return html


def assert_filled(response, what):
    assert response.status_code == 200, (what, response.status_code)
    found = PLACEHOLDER.findall(visible_text(response.content.decode()))
    assert not found, (what, found)


def annotator_pages(client, study, user):
    client.force_login(user)
    yield "home", client.get(reverse("home"))
    yield "start", client.get(reverse("work-start", args=[study.token]))
    yield "task", client.get(reverse("work-task", args=[study.token]))
    yield "guide", client.get(reverse("work-guide", args=[study.token]))


def lead_pages(client, study):
    lead = MembershipFactory(workspace=study.workspace, role=Membership.Role.LEAD).user
    client.force_login(lead)
    yield "home", client.get(reverse("home"))
    yield "overview", client.get(reverse("study-overview", args=[study.token]))
    yield "dashboard", client.get(reverse("study-dashboard", args=[study.token]))


def test_the_demo_story_question_is_a_template_and_is_filled_everywhere(client):
    studies = load_demo()
    story = studies["story"]
    assert "{x}" in story.question  # the premise: the lead wrote placeholders
    for study in studies.values():
        user = enrol(study).user
        for what, response in annotator_pages(client, study, user):
            assert_filled(response, (study.name, what))
        for what, response in lead_pages(client, study):
            assert_filled(response, (study.name, what))


@pytest.mark.parametrize("kind", [k for k, _ in Study.TaskKind.choices])
def test_no_page_of_any_task_kind_shows_a_placeholder(client, settings, kind):
    settings.CONCORD_QC_BOOTSTRAP = 30
    if kind == "spa":
        study, _ = simulate.spa_study([(0.7, "x")], n_annotators=6, likert={"s0": 3, "s1": 4})
        study.question = "Is Writer {x} better than Writer { y }?"
        study.save(update_fields=["question"])
    elif kind in ("categorical", "ordinal"):
        study, _ = simulate.categorical_study(n_prompts=6, task_kind=kind)
    elif kind == "pairwise":
        study = simulate.pairwise_study(n_prompts=6)
    elif kind == "likert":
        study = simulate.likert_study(n_prompts=6)
    else:
        study = make_study(kind, n_prompts=4)
    services.recompute(study.pk)
    user = enrol(study).user
    for what, response in annotator_pages(client, study, user):
        assert_filled(response, (kind, what))
    for what, response in lead_pages(client, study):
        assert_filled(response, (kind, what))
