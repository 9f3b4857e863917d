"""The demo loader builds a study of every task kind, and loading twice changes nothing."""

import io

import pytest
from django.test import Client

from annotation.demo import DEMO_PASSWORD, load_demo
from annotation.models import Comparison, GoldAnswer, Study, Unit

pytestmark = pytest.mark.django_db


def test_demo_offers_one_study_of_every_task_kind():
    load_demo()
    kinds = sorted(Study.objects.values_list("task_kind", flat=True))
    assert kinds == sorted(k.value for k in Study.TaskKind)


def test_every_demo_study_passes_the_builders_checks():
    from annotation.services.studies import launch_checklist

    load_demo()
    for study in Study.objects.all():
        study.full_clean()
        # Some studies want more people than the three demo annotators (the simulated crowd of
        # `load_demo --simulate` joins them): the only item allowed to fail.
        failed = {i.key for i in launch_checklist(study) if not i.ok}
        assert failed <= {"annotators"}, study.name


def test_demo_spa_study_is_shaped_like_the_papers_story_study():
    load_demo()
    story = Study.objects.get(task_kind="spa")
    assert story.systems.count() == 5
    assert story.prompts.count() == 5
    assert Comparison.objects.filter(study=story).count() == 5
    batch = Unit.objects.get(study=story)
    assert batch.kind == Unit.Kind.SPA_BATCH
    assert batch.members.count() == 25  # 5 prompts x 5 writers, one fixed sample


def test_demo_food_safety_study_has_rare_unsafe_items_and_hidden_gold():
    load_demo()
    food = Study.objects.get(task_kind="categorical")
    assert GoldAnswer.objects.filter(unit__study=food).count() >= 1
    from annotation.demo import UNSAFE_ADVICE

    texts = [o.text for p in food.prompts.all() for o in p.outputs.all()]
    unsafe = sum(text in UNSAFE_ADVICE for text in texts)
    assert 0 < unsafe < len(texts) / 3


def test_loading_the_demo_twice_changes_nothing():
    load_demo()
    counts = (Study.objects.count(), Unit.objects.count())
    load_demo()
    assert (Study.objects.count(), Unit.objects.count()) == counts


def test_demo_lead_and_annotator_can_sign_in_and_see_their_studies():
    load_demo()
    n_studies = Study.objects.count()
    for username, expected in [("lead", n_studies), ("annotator1", n_studies)]:
        client = Client()
        response = client.post(
            "/accounts/login/", {"username": username, "password": DEMO_PASSWORD}, follow=True
        )
        page = response.content.decode()
        assert response.status_code == 200
        assert sum(s.name in page for s in Study.objects.all()) == expected


def test_simulated_demo_has_reports_and_leaves_work_for_the_demo_annotators():
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from annotation.models import Label
    from annotation.services.assignment import next_assignment
    from qc.models import QualityReport

    call_command("load_demo", "--simulate", stdout=io.StringIO())

    for study in Study.objects.all():
        assert Label.objects.filter(study=study).count() > 0
        assert QualityReport.objects.filter(study=study).exists()
        annotator = get_user_model().objects.get(username="annotator1")
        assert next_assignment(annotator, study) is not None, study.name
