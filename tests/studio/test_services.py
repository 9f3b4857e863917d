"""The study services the pages and the REST API share: create, lock rules, checklist, status."""

import pytest
from django.core.exceptions import ValidationError

from annotation.models import GuideVersion, Study
from annotation.services import setup, studies
from tests.factories import UserFactory, WorkspaceFactory, enrol, make_study

pytestmark = pytest.mark.django_db


def new(kind="likert", **settings):
    return studies.create_study(
        workspace=WorkspaceFactory(), created_by=UserFactory(), name="S", task_kind=kind, **settings
    )


@pytest.mark.parametrize("kind", [k.value for k in Study.TaskKind])
def test_a_new_study_is_a_draft_with_a_renderable_default_scheme(kind):
    study = new(kind)
    assert study.status == "draft" and study.task_kind == kind
    assert study.label_scheme  # never {}
    study.full_clean()


def test_create_refuses_an_empty_likert_scheme_and_saves_nothing():
    with pytest.raises(ValidationError) as caught:
        new("likert", label_scheme={})
    assert "label_scheme" in caught.value.message_dict
    assert not Study.objects.exists()


def test_create_refuses_bad_values_each_as_a_field_error():
    with pytest.raises(ValidationError) as caught:
        new("categorical", overlap=0, gold_rate=1.5, spa_tau=3.0, allowed_pools=["aliens"])
    assert {"overlap", "gold_rate", "spa_tau", "allowed_pools"} <= set(caught.value.message_dict)


def test_rates_that_leave_no_production_are_refused():
    with pytest.raises(ValidationError) as caught:
        new("categorical", gold_rate=0.5, repeat_rate=0.3, attention_rate=0.2)
    assert "production" in caught.value.message_dict["gold_rate"][0]


def test_a_crowd_study_needs_a_completion_and_the_open_crowd_pool():
    with pytest.raises(ValidationError) as caught:
        new("categorical", crowd_platform="prolific", allowed_pools=["expert"])
    assert {"crowd_platform", "crowd_completion_code"} <= set(caught.value.message_dict)


def test_create_refuses_engine_fields():
    with pytest.raises(ValidationError) as caught:
        new("likert", status="live")
    assert "status" in caught.value.message_dict


def test_draft_settings_change_freely_until_units_are_built():
    study = new("categorical")
    studies.update_study(
        study,
        task_kind="ordinal",
        label_scheme={"labels": [{"value": "a", "text": "A"}, {"value": "b", "text": "B"}]},
    )
    study.refresh_from_db()
    assert study.task_kind == "ordinal"


def test_once_live_the_scheme_kind_and_overlap_are_locked_with_a_reason():
    study = make_study("likert", n_prompts=2)  # live
    before = dict(study.label_scheme)
    for change in (
        {"label_scheme": {"points": [{"value": 1, "text": "a"}, {"value": 2, "text": "b"}]}},
        {"task_kind": "continuous"},
        {"overlap": 5},
    ):
        with pytest.raises(ValidationError) as caught:
            studies.update_study(study, **change)
        (field,) = change
        assert caught.value.message_dict[field][0] == studies.LOCKED_ONCE_LAUNCHED[field]
    study.refresh_from_db()
    assert study.label_scheme == before and study.overlap == 3


def test_once_live_wording_and_rates_can_change_and_unchanged_locked_values_pass():
    study = make_study("likert", n_prompts=2)
    studies.update_study(
        study, question="New wording", gold_rate=0.1, label_scheme=study.label_scheme, overlap=3
    )
    study.refresh_from_db()
    assert study.question == "New wording" and study.gold_rate == 0.1


def test_a_draft_with_units_cannot_change_its_kind():
    study = make_study("categorical", n_prompts=2, status="draft")
    with pytest.raises(ValidationError) as caught:
        studies.update_study(study, task_kind="likert")
    assert "rebuild" in caught.value.message_dict["task_kind"][0]


def test_the_pre_registered_tau_is_locked_once_live():
    study = make_study("spa", n_prompts=2, spa_exposure_m=2, spa_tau=1.1)
    with pytest.raises(ValidationError):
        studies.update_study(study, spa_tau=1.5)


def failed(study):
    return {item.key for item in studies.launch_checklist(study) if not item.ok}


def test_checklist_explains_each_missing_piece_of_a_bare_draft():
    study = new("categorical", gold_rate=0.1, attention_rate=0.05, requires_qualification=True)
    assert failed(study) == {"units", "gold", "attention", "annotators", "guide", "qualification"}
    details = {i.key: i.detail for i in studies.launch_checklist(study)}
    assert "gold rate is 10%" in details["gold"]
    assert "needs 3 different people" in details["annotators"]


def test_checklist_passes_for_a_study_with_units_people_guide_and_gold():
    study = make_study("categorical", n_prompts=4, status="draft", gold_rate=0.1)
    setup.mark_gold(study.units.first(), {"choice": "safe"})
    for _ in range(3):
        enrol(study)
    GuideVersion.objects.create(study=study, number=1, body="Guide")
    assert failed(study) == set()
    studies.set_status(study, "live")
    study.refresh_from_db()
    assert study.status == "live"


def test_going_live_is_refused_with_the_failed_items_and_changes_nothing():
    study = make_study("categorical", n_prompts=2, status="draft")
    with pytest.raises(studies.LaunchRefused) as caught:
        studies.set_status(study, "live")
    assert {i.key for i in caught.value.items} == {"annotators", "guide"}
    study.refresh_from_db()
    assert study.status == "draft"


def test_spa_checklist_needs_comparisons():
    study = new("spa")
    assert "comparisons" in failed(study)


def test_status_moves_follow_the_lifecycle_and_closed_is_final():
    study = make_study("categorical", n_prompts=2)  # live
    studies.set_status(study, "paused")
    studies.set_status(study, "closed")
    for target in ("live", "paused", "draft"):
        with pytest.raises(ValidationError):
            studies.set_status(study, target)
    study.refresh_from_db()
    assert study.status == "closed"


def test_qualifying_needs_a_study_that_requires_qualification():
    study = new("categorical")
    with pytest.raises(ValidationError):
        studies.set_status(study, "qualifying")
    studies.update_study(study, requires_qualification=True)
    studies.set_status(study, "qualifying")


def test_comparisons_name_the_bad_row_and_replace_all_or_nothing():
    study = make_study("spa", n_prompts=2, status="draft", systems=("a", "b", "c"))
    with pytest.raises(ValidationError) as caught:
        studies.set_comparisons(study, [("a", "b", "x"), ("a", "zz", ""), ("b", "b", "")])
    assert caught.value.message_dict["comparisons"] == [
        "row 2: no system named 'zz' in this study",
        "row 3: a system cannot be compared with itself",
    ]
    assert study.comparisons.count() == 2  # the factory's, untouched
    studies.set_comparisons(study, [("c", "a", "y")])
    assert [(c.system_x.name, c.system_y.name) for c in study.comparisons.all()] == [("c", "a")]
