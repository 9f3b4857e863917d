"""What qualification, calibration and the guide share, field by field: the answers a lead can
give as a key for each task kind, how a key is stored, shown and matched (scores within the
continuous tolerance, Likert exactly), a label in the key's terms, item references and texts.

Added after the mutation run of annotation/services/training_items.py (bench/MUTATION.md): the
tests of main reach these only through categorical studies, so the score and pairwise paths could
change without any test noticing.
"""

import pytest

from annotation.models import Label, Study, Unit, UnitOutput
from annotation.services.training_items import (
    CONTINUOUS_TOLERANCE,
    TrainingError,
    answer_matches,
    answer_options,
    answer_text,
    answer_value,
    first_systems,
    item_texts,
    label_key,
    normalise_key,
    resolve_items,
    shared_output_units,
    training_copy,
)
from tests.factories import make_study

LIKERT = {
    "points": [
        {"value": 1, "text": "Very poor"},
        {"value": 2.5, "text": "Middling"},
        {"value": 4},
    ]
}


def study_of(kind: str, scheme: dict) -> Study:
    return Study(task_kind=kind, label_scheme=scheme)


likert = study_of(Study.TaskKind.LIKERT, LIKERT)
continuous = study_of(Study.TaskKind.CONTINUOUS, {"min_text": "Worst", "max_text": "Best"})
categorical = study_of(
    Study.TaskKind.CATEGORICAL,
    {"labels": [{"value": "safe", "text": "Safe"}, {"value": "unsafe"}]},
)
pairwise = study_of(Study.TaskKind.PAIRWISE, {"tie_allowed": True})


# --- the answers a lead can give -----------------------------------------------------------------


def test_each_task_kind_offers_its_own_answers_with_their_texts():
    assert answer_options(categorical) == [("safe", "Safe"), ("unsafe", "unsafe")]
    ordinal = study_of(Study.TaskKind.ORDINAL, {"labels": [{"value": 1, "text": "Low"}]})
    assert answer_options(ordinal) == [("1", "Low")]
    assert answer_options(likert) == [("1", "1 Very poor"), ("2.5", "2.5 Middling"), ("4", "4")]
    assert answer_options(pairwise) == [
        ("first", "The first response is better"),
        ("second", "The second is better"),
        ("tie", "Tie"),
    ]
    assert answer_options(continuous) == [(str(v), str(v)) for v in range(0, 101, 10)]
    assert answer_options(study_of(Study.TaskKind.SPA, {"likert_points": []})) == []


def test_a_likert_study_without_points_yet_offers_no_answers():
    assert answer_options(study_of(Study.TaskKind.LIKERT, None)) == []
    assert answer_options(study_of(Study.TaskKind.LIKERT, {})) == []


def test_a_pairwise_study_without_ties_offers_no_tie_and_one_without_the_setting_does():
    no_ties = study_of(Study.TaskKind.PAIRWISE, {"tie_allowed": False})
    assert [value for value, _ in answer_options(no_ties)] == ["first", "second"]
    unset = study_of(Study.TaskKind.PAIRWISE, {})
    assert [value for value, _ in answer_options(unset)] == ["first", "second", "tie"]


def test_a_likert_or_continuous_key_is_stored_as_a_score_and_others_as_a_choice():
    assert answer_value(likert, "2.5") == {"score": 2.5}
    assert answer_value(continuous, "70") == {"score": 70.0}
    assert answer_value(categorical, "unsafe") == {"choice": "unsafe"}
    assert answer_value(pairwise, "tie") == {"choice": "tie"}


def test_a_key_outside_the_answers_is_refused_naming_it():
    with pytest.raises(TrainingError) as refused:
        answer_value(likert, "3")
    assert refused.value.field == "answer"
    assert refused.value.message == "'3' is not one of this study's answers"


def test_an_older_bare_key_reads_as_a_score_or_a_choice():
    assert normalise_key(4) == {"score": 4.0}
    assert normalise_key(2.5) == {"score": 2.5}
    assert normalise_key("safe") == {"choice": "safe"}
    assert normalise_key({"choice": "tie"}) == {"choice": "tie"}


# --- showing and matching keys -------------------------------------------------------------------


def test_a_key_is_shown_as_its_answer_text_and_one_no_longer_offered_as_itself():
    assert answer_text(likert, {"score": 2.5}) == "2.5 Middling"
    assert answer_text(likert, 1) == "1 Very poor"  # an older bare key
    assert answer_text(likert, {"score": 3.0}) == "3"  # not a point of the scale (any more)
    assert answer_text(likert, {"score": 3.25}) == "3.25"
    assert answer_text(categorical, {"choice": "safe"}) == "Safe"
    assert answer_text(categorical, "safe") == "Safe"
    assert answer_text(categorical, {"choice": "harmful"}) == "harmful"


def test_a_continuous_answer_matches_within_the_tolerance_either_side():
    assert CONTINUOUS_TOLERANCE == 10.0
    key = {"score": 50.0}
    assert answer_matches(continuous, key, {"score": 60.0})
    assert answer_matches(continuous, key, {"score": 40})
    assert not answer_matches(continuous, key, {"score": 60.5})
    assert not answer_matches(continuous, key, {"score": 39.0})
    assert not answer_matches(continuous, {"score": 0.0}, {"score": 0.0 + 2 * 50.0})


def test_a_likert_answer_matches_only_the_same_point():
    assert answer_matches(likert, {"score": 4.0}, {"score": 4})
    assert answer_matches(likert, 4, {"score": 4.0})  # an older bare key
    assert not answer_matches(likert, {"score": 4.0}, {"score": 2.5})
    assert not answer_matches(likert, {"score": 2.5}, {"score": 2.0})


def test_an_answer_without_a_score_never_matches_a_score_key():
    assert not answer_matches(likert, {"score": 4.0}, {"choice": "4"})
    assert not answer_matches(continuous, {"score": 50.0}, {"score": None})


def test_a_choice_matches_the_same_choice_only():
    assert answer_matches(categorical, "safe", {"choice": "safe"})
    assert not answer_matches(categorical, {"choice": "safe"}, {"choice": "unsafe"})
    assert answer_matches(pairwise, {"choice": "tie"}, {"choice": "tie"})


def test_a_pairwise_label_names_the_canonical_side_that_won_or_a_tie():
    assert label_key(pairwise, Label(winner_id=None), first_system_id=7) == {"choice": "tie"}
    assert label_key(pairwise, Label(winner_id=7), first_system_id=7) == {"choice": "first"}
    assert label_key(pairwise, Label(winner_id=8), first_system_id=7) == {"choice": "second"}


def test_a_scored_label_gives_its_score_and_another_its_choice():
    assert label_key(likert, Label(score=4, choice="")) == {"score": 4.0}
    assert label_key(continuous, Label(score=0.0, choice="")) == {"score": 0.0}
    assert label_key(categorical, Label(score=None, choice="unsafe")) == {"choice": "unsafe"}


# --- items: references, texts, outputs -----------------------------------------------------------


@pytest.mark.django_db
def test_the_first_system_of_a_pair_is_the_one_shown_first():
    study = make_study(Study.TaskKind.PAIRWISE, n_prompts=3, systems=("alpha", "beta"))
    units = list(Unit.objects.filter(study=study, role=Unit.Role.PRODUCTION).order_by("id"))
    asked = units[:2]
    assert first_systems(u.pk for u in asked) == {
        u.pk: UnitOutput.objects.get(unit=u, position=0).output.system_id for u in asked
    }


@pytest.mark.django_db
def test_item_texts_show_a_pair_in_canonical_order_under_its_reference():
    study = make_study(Study.TaskKind.PAIRWISE, n_prompts=2, systems=("alpha", "beta"))
    unit = Unit.objects.get(study=study, role=Unit.Role.PRODUCTION, prompt__external_id="p1")
    members = list(unit.members.order_by("position").select_related("output__system"))
    texts = item_texts([unit])
    assert list(texts) == [unit.pk]
    text = texts[unit.pk]
    systems = "+".join(m.output.system.name for m in members)
    assert text.unit_id == unit.pk
    assert text.reference == f"p1:{systems}"
    assert text.prompt == "Prompt number 1"
    assert text.outputs == tuple(m.output.text for m in members)
    assert item_texts([str(unit.pk)]) == texts  # ids as the forms give them


@pytest.mark.django_db
def test_an_item_of_one_output_shows_its_prompt_and_output():
    study = make_study(n_prompts=1, systems=("alpha",))
    unit = Unit.objects.get(study=study)
    text = item_texts([unit])[unit.pk]
    assert (text.reference, text.prompt) == ("p0:alpha", "Prompt number 0")
    assert text.outputs == ("Output of alpha for prompt 0",)


@pytest.mark.django_db
def test_an_item_of_several_prompts_is_referred_to_by_their_number_and_shows_no_prompt():
    study = make_study(n_prompts=2, systems=("alpha",))
    outputs = [u.members.get().output for u in Unit.objects.filter(study=study).order_by("id")]
    unit = Unit.objects.create(
        study=study, kind=Unit.Kind.SPA_BATCH, role=Unit.Role.CALIBRATION, overlap=1, open_slots=0
    )
    for position, output in reversed(list(enumerate(outputs))):  # stored last position first
        UnitOutput.objects.create(unit=unit, output=output, position=position)
    text = item_texts([unit.pk])[unit.pk]
    assert text.reference == "2 prompts"
    assert text.prompt == ""
    assert text.outputs == ("Output of alpha for prompt 0", "Output of alpha for prompt 1")


@pytest.mark.django_db
def test_units_showing_the_same_outputs_are_found_by_role():
    study = make_study(Study.TaskKind.PAIRWISE, n_prompts=2, systems=("alpha", "beta"))
    unit = Unit.objects.get(study=study, prompt__external_id="p0")
    copy = training_copy(unit, Unit.Role.QUALIFICATION)
    assert shared_output_units([unit]) == {unit.pk, copy.pk}
    assert shared_output_units([unit], roles=[Unit.Role.QUALIFICATION]) == {copy.pk}
    assert shared_output_units([copy], roles=[Unit.Role.PRODUCTION]) == {unit.pk}


@pytest.mark.django_db
def test_references_on_separate_lines_name_this_studys_production_items_only():
    study = make_study(n_prompts=3, systems=("alpha", "beta"))
    make_study(n_prompts=3, systems=("alpha", "beta"))  # the same references in another study
    p0 = list(Unit.objects.filter(study=study, prompt__external_id="p0").order_by("id"))
    training_copy(p0[0], Unit.Role.CALIBRATION)  # shows p0 too, but is no production item
    p2_beta = Unit.objects.get(
        study=study, prompt__external_id="p2", members__output__system__name="beta"
    )
    assert resolve_items(study, "p0\n p2:beta ,\np0:alpha") == [*p0, p2_beta]


@pytest.mark.django_db
def test_a_reference_that_matches_nothing_is_refused_by_its_position_in_the_field():
    study = make_study(n_prompts=2, systems=("alpha",))
    with pytest.raises(TrainingError) as refused:
        resolve_items(study, "p0\np1:alpha\np1:gamma", field="items")
    assert refused.value.field == "items"
    assert refused.value.message == "item 3 ('p1:gamma') matches no item of this study"
    with pytest.raises(TrainingError) as refused:
        resolve_items(study, "p9")
    assert refused.value.field == "examples"  # the guide's rulings, by default
