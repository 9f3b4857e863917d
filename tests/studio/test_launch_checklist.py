"""The launch checklist item by item: what it counts (this study's units and answers only), its
limits (one of each is enough; exactly `overlap` annotators are enough) and what it tells the lead.

test_services.py checks which items fail; these were added after the mutation run of
annotation/services/studies.py (bench/MUTATION.md), where another study's units, gold answers
or qualification items made a bare draft pass.
"""

import pytest

from annotation.models import GuideVersion, Study, Unit
from annotation.services import setup, studies
from tests.factories import UserFactory, WorkspaceFactory, enrol, make_study

pytestmark = pytest.mark.django_db


def checklist(study):
    return {i.key: (i.ok, i.title, i.detail) for i in studies.launch_checklist(study)}


def a_full_study_elsewhere():
    """Another study with production, gold, attention and qualification units."""
    other = make_study("categorical", n_prompts=4, systems=("alpha",))
    gold, attention, qualification, _ = Unit.objects.filter(study=other).order_by("id")
    setup.mark_gold(gold, {"choice": "safe"})
    setup.mark_gold(attention, {"choice": "safe"}, role=Unit.Role.ATTENTION)
    Unit.objects.filter(pk=qualification.pk).update(role=Unit.Role.QUALIFICATION)
    return other


def test_a_bare_draft_fails_each_item_whatever_other_studies_have():
    a_full_study_elsewhere()
    study = studies.create_study(
        workspace=WorkspaceFactory(),
        created_by=UserFactory(),
        name="S",
        task_kind="categorical",
        gold_rate=0.1,
        attention_rate=0.05,
        requires_qualification=True,
    )
    enrol(study)
    assert checklist(study) == {
        "scheme": (True, "Label scheme is complete", "The workbench can show every option."),
        "units": (
            False,
            "Units built",
            "Import the prompts and outputs, then build the units from them.",
        ),
        "gold": (
            False,
            "Gold answers exist",
            "The gold rate is 10% but no unit has a gold answer: import gold answers, or set "
            "the gold rate to 0.",
        ),
        "attention": (
            False,
            "Attention checks exist",
            "The attention rate is 5% but there is no attention unit: add some, or set the "
            "attention rate to 0.",
        ),
        "annotators": (
            False,
            "Enough annotators",
            "1 enrolled, but each unit needs 3 different people: invite or add at least 2 more "
            "(People page).",
        ),
        "guide": (
            False,
            "A guide is published",
            "Annotators need written guidance: publish a first version of the guide.",
        ),
        "qualification": (
            False,
            "Qualification test has items",
            "Qualification is required but the test has no items: build it, or turn "
            "qualification off.",
        ),
    }


def test_one_of_each_and_exactly_overlap_annotators_are_enough():
    a_full_study_elsewhere()
    study = make_study(
        "categorical",
        n_prompts=4,
        systems=("alpha",),
        status="draft",
        gold_rate=0.1,
        attention_rate=0.05,
        requires_qualification=True,
        overlap=2,
    )
    gold, attention, qualification, _ = Unit.objects.filter(study=study).order_by("id")
    setup.mark_gold(gold, {"choice": "safe"})
    setup.mark_gold(attention, {"choice": "safe"}, role=Unit.Role.ATTENTION)
    Unit.objects.filter(pk=qualification.pk).update(role=Unit.Role.QUALIFICATION)
    enrol(study)
    enrol(study)
    GuideVersion.objects.create(study=study, number=1, body="Guide")
    assert checklist(study) == {
        "scheme": (True, "Label scheme is complete", "The workbench can show every option."),
        "units": (True, "Units built", "1 unit(s) to label."),
        "gold": (True, "Gold answers exist", "1 gold unit(s) with expert answers."),
        "attention": (True, "Attention checks exist", "1 attention unit(s)."),
        "annotators": (
            True,
            "Enough annotators",
            "2 enrolled, and each unit needs 2 different people.",
        ),
        "guide": (True, "A guide is published", "Version 1 is current."),
        "qualification": (True, "Qualification test has items", "1 qualification item(s)."),
    }


def test_a_crowd_study_needs_no_enrolled_annotators_and_an_spa_study_needs_comparisons():
    study = make_study("categorical", n_prompts=1, status="draft", crowd_platform="prolific")
    ok, _, detail = checklist(study)["annotators"]
    assert ok and detail == "0 enrolled; crowd workers join through the platform link."
    spa = make_study("spa", n_prompts=2, status="draft", spa_exposure_m=2)
    assert checklist(spa)["comparisons"] == (
        True,
        "Comparisons chosen",
        "1 comparison(s) of systems X vs Y.",
    )
    spa.comparisons.all().delete()
    assert checklist(spa)["comparisons"][:2] == (False, "Comparisons chosen")


def test_a_refused_launch_lists_the_failed_items_under_status():
    study = make_study("categorical", n_prompts=2, status="draft")
    with pytest.raises(studies.LaunchRefused) as caught:
        studies.set_status(study, "live")
    assert caught.value.message_dict == {
        "status": [
            "Enough annotators: 0 enrolled, but each unit needs 3 different people: invite or "
            "add at least 3 more (People page).",
            "A guide is published: Annotators need written guidance: publish a first version "
            "of the guide.",
        ]
    }


def test_a_broken_scheme_fails_the_checklist_with_its_problems():
    study = make_study("categorical", n_prompts=1, status="draft")
    Study.objects.filter(pk=study.pk).update(label_scheme={"labels": []})
    study.refresh_from_db()
    assert checklist(study)["scheme"] == (
        False,
        "Label scheme is complete",
        "labels: add at least 2 labels (there are 0)",
    )
    # An SPA study that collects Likert ratings needs their points.
    spa = make_study("spa", n_prompts=2, status="draft", spa_exposure_m=2)
    Study.objects.filter(pk=spa.pk).update(label_scheme={}, spa_collect_likert=True)
    spa.refresh_from_db()
    assert checklist(spa)["scheme"] == (
        False,
        "Label scheme is complete",
        "likert_points: add at least 2 points",
    )
