"""A label scheme is saved only if the workbench can render it; every problem names its place."""

import pytest
from django.core.exceptions import ValidationError

from annotation.models import Study
from annotation.schemes import default_scheme, scheme_path, validate_scheme
from tests.factories import MembershipFactory, StudyFactory, UserFactory, enrol

KINDS = [k.value for k in Study.TaskKind]


def paths(problems):
    return [scheme_path(p.path) for p in problems]


@pytest.mark.parametrize("kind", KINDS)
def test_every_default_scheme_is_valid(kind):
    assert validate_scheme(kind, default_scheme(kind), collect_likert=True) == []


def test_an_empty_likert_scheme_is_refused_at_the_points():
    assert paths(validate_scheme("likert", {})) == ["points"]


def test_likert_points_must_be_numbers_rising_within_0_to_100():
    scheme = {
        "points": [
            {"value": 1, "text": "low"},
            {"value": "x", "text": "a"},
            {"value": 1, "text": "same"},
            {"value": 140, "text": "high"},
        ]
    }
    assert paths(validate_scheme("likert", scheme)) == [
        "points[1].value",
        "points[2].value",
        "points[3].value",
    ]


def test_likert_scale_has_between_two_and_nine_points():
    one = {"points": [{"value": 1, "text": "only"}]}
    ten = {"points": [{"value": v, "text": str(v)} for v in range(10)]}
    assert "at least 2" in validate_scheme("likert", one)[0].message
    assert "at most 9" in validate_scheme("likert", ten)[0].message


def test_categories_need_distinct_values_text_and_usable_keys():
    scheme = {
        "labels": [
            {"value": "safe", "text": "Safe", "key": "s"},
            {"value": "safe", "text": "Again", "key": "a"},
            {"value": "odd", "text": "", "key": "g"},
            {"value": "two", "text": "Two", "key": "S"},
            {"value": "three", "text": "Three", "key": "ab"},
        ]
    }
    assert paths(validate_scheme("categorical", scheme)) == [
        "labels[1].value",
        "labels[2].text",
        "labels[2].key",
        "labels[3].key",
        "labels[4].key",
    ]


def test_past_nine_labels_every_label_needs_a_key():
    labels = [{"value": f"v{i}", "text": f"V{i}"} for i in range(10)]
    problems = validate_scheme("ordinal", {"labels": labels})
    assert len(problems) == 10 and all(p.path[2] == "key" for p in problems)


def test_continuous_needs_both_ends_named():
    assert paths(validate_scheme("continuous", {"min_text": "Worst"})) == ["max_text"]


def test_unknown_settings_and_wrong_types_are_refused():
    assert paths(validate_scheme("pairwise", {"tie_allowed": "yes", "extra": 1})) == [
        "extra",
        "tie_allowed",
    ]
    assert paths(validate_scheme("likert", [1, 2])) == ["scheme"]


def test_spa_needs_likert_points_only_when_it_collects_likert():
    assert validate_scheme("spa", {}) == []
    assert paths(validate_scheme("spa", {}, collect_likert=True)) == ["likert_points"]


@pytest.mark.django_db
def test_model_full_clean_refuses_an_empty_likert_scheme_as_a_field_error():
    study = StudyFactory.build(
        task_kind="likert", label_scheme={}, workspace=StudyFactory().workspace
    )
    with pytest.raises(ValidationError) as caught:
        study.full_clean()
    assert "label_scheme" in caught.value.message_dict


@pytest.mark.django_db
def test_a_likert_study_stored_empty_before_validation_refuses_a_submit_without_a_500(client):
    """The reported bug: `{}` saved as a Likert scheme made the annotator's submit answer 500."""
    from tests.factories import make_study

    study = make_study("likert", n_prompts=1)
    Study.objects.filter(pk=study.pk).update(label_scheme={})
    user = UserFactory()
    MembershipFactory(workspace=study.workspace, user=user, role="annotator")
    enrol(study, user)
    client.force_login(user)
    client.get(f"/work/{study.token}/task/")
    a = user.assignments.get()
    response = client.post(
        f"/work/{study.token}/submit/",
        {"_assignment": a.token, "_key": "6a8e2f0e-3c4b-4d5e-8f90-1a2b3c4d5e6f", "score": "3"},
    )
    assert response.status_code < 500
    assert not a.unit.labels.exists()
