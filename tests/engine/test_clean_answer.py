"""What counts as an answer (annotation.schemes.clean_answer), refusal by refusal: which field is
named, what the annotator is told, and where each limit lies.

The annotator reads the message (the workbench shows it; the API returns it as "message"), so a
message that names the value, the scale or the limit is part of the answer; the case of its words
is not asserted. Unsaved studies, no database except for the pairwise winner.
"""

import pytest

from annotation.models import Study
from annotation.schemes import (
    MAX_FIELDS,
    MAX_NAME_CHARS,
    MAX_VALUE_CHARS,
    AnswerError,
    CleanAnswer,
    answer_field_names,
    check_fields,
    clean_answer,
    parse_number,
)
from tests.factories import make_study

LABELS = {
    "labels": [
        {"value": "safe", "text": "Safe", "key": "s"},
        {"value": "unsafe", "text": "Unsafe", "key": "u"},
    ]
}
POINTS = [{"value": v, "text": str(v)} for v in (1, 2, 4, 5)]
OUTPUT = {"kind": "output", "output": 1}
SPA = {
    "kind": "spa_batch",
    "outputs": [31, 32, 33],
    "questions": [
        {"comparison": 7, "reverse": False, "x": "A", "y": "B"},
        {"comparison": 7, "reverse": True, "x": "B", "y": "A"},
    ],
}


def study(kind, scheme=None, collect_likert=False) -> Study:
    return Study(task_kind=kind, label_scheme=scheme or {}, spa_collect_likert=collect_likert)


def refusal(call, *args) -> tuple[str, str]:
    with pytest.raises(AnswerError) as caught:
        call(*args)
    err = caught.value
    assert str(err) == f"{err.field}: {err.message}"
    return err.field, err.message.lower()


# parse_number ------------------------------------------------------------------------------


@pytest.mark.parametrize("raw", [None, "", "   "])
def test_a_missing_number_is_required(raw):
    assert refusal(parse_number, "score", raw, 0, 100) == ("score", "an answer is required")


def test_a_number_is_read_from_text_with_spaces_and_its_ends_are_inclusive():
    assert parse_number("p_0", " 42.5 ", 0, 100) == 42.5
    assert parse_number("p_0", "0", 0, 100) == 0.0
    assert parse_number("p_0", "100", 0, 100) == 100.0
    assert parse_number("p_0", 7, 1, 7) == 7.0


def test_a_non_number_is_refused_quoting_it():
    assert refusal(parse_number, "p_1", "lots", 0, 100) == ("p_1", "'lots' is not a number")


@pytest.mark.parametrize("raw", ["nan", "inf", "-Infinity"])
def test_a_non_finite_number_is_refused(raw):
    assert refusal(parse_number, "p_0", raw, 0, 100) == ("p_0", "must be a finite number")


@pytest.mark.parametrize(
    "raw, said",
    [("100.5", "100.5 is outside 0 to 100"), ("-1", "-1 is outside 0 to 100")],
)
def test_a_number_outside_the_range_is_refused_naming_the_range(raw, said):
    assert refusal(parse_number, "score", raw, 0, 100) == ("score", said)


# check_fields -------------------------------------------------------------------------------


def test_at_most_max_fields_answer_fields_and_csrf_or_underscore_fields_do_not_count():
    fields = {f"f{i}": "1" for i in range(MAX_FIELDS)}
    check_fields({**fields, "csrfmiddlewaretoken": "x", "_extra": "y"})
    too_many = {**fields, "one_more": "1"}
    assert refusal(check_fields, too_many) == (
        "body",
        f"has {MAX_FIELDS + 1} fields; an answer has at most {MAX_FIELDS}",
    )


def test_fields_the_client_keeps_for_itself_are_not_checked():
    check_fields({"csrfmiddlewaretoken": "\x00" * 500, "_ts": "x" * 1000, "choice": "safe"})


def test_a_field_name_has_at_most_max_name_chars_characters():
    check_fields({"n" * MAX_NAME_CHARS: "1"})
    long = "n" * (MAX_NAME_CHARS + 1)
    field, message = refusal(check_fields, {long: "1"})
    assert field == "n" * MAX_NAME_CHARS + "..."
    assert message == f"a field name has at most {MAX_NAME_CHARS} characters"


def test_a_control_character_in_a_field_name_is_refused_showing_it_escaped():
    assert refusal(check_fields, {"p_\x07": "1"}) == (
        "p_\\x07",
        "the field name contains a control character u+0007",
    )


def test_a_field_name_shown_in_a_message_is_printable_and_short():
    # An escaped name can grow past the limit although the name itself does not.
    name = "\x01" * 20
    field, _ = refusal(check_fields, {name: "1"})
    assert field == ("\\x01" * 20)[:MAX_NAME_CHARS] + "..."
    field, _ = refusal(check_fields, {"\x01" * 16: "1"})
    assert field == "\\x01" * 16  # exactly MAX_NAME_CHARS once escaped: shown whole


def test_a_value_has_at_most_max_value_chars_characters():
    check_fields({"choice": "v" * MAX_VALUE_CHARS})
    assert refusal(check_fields, {"choice": "v" * (MAX_VALUE_CHARS + 1)}) == (
        "choice",
        f"is {MAX_VALUE_CHARS + 1} characters long; an answer has at most {MAX_VALUE_CHARS}",
    )


@pytest.mark.parametrize(
    "char, shown", [("\x00", "U+0000"), ("\x7f", "U+007F"), ("\ud800", "U+D800")]
)
def test_a_control_character_or_lone_surrogate_in_a_value_is_refused_naming_it(char, shown):
    assert refusal(check_fields, {"p_0": "4" + char, "choice": "ok"}) == (
        "p_0",
        f"contains a control character ({shown.lower()}); answers are plain",
    )


def test_values_that_are_not_text_are_checked_as_text_and_missing_ones_skipped():
    check_fields({"choice": None, "score": 5})
    # A missing value ends nothing: the fields after it are checked too.
    assert refusal(check_fields, {"choice": None, "note": "a\x00"})[0] == "note"
    assert refusal(check_fields, {"score": 10 ** (MAX_VALUE_CHARS + 1)})[0] == "score"


def test_printable_unicode_and_formatting_characters_are_allowed():
    check_fields({"choice": "ça va \u200d \u00a0 日本"})


# answer_field_names -------------------------------------------------------------------------


def test_each_task_kind_names_its_answer_fields():
    assert answer_field_names(study("likert"), OUTPUT) == ["score"]
    assert answer_field_names(study("continuous"), OUTPUT) == ["score"]
    assert answer_field_names(study("categorical"), OUTPUT) == ["choice"]
    assert answer_field_names(study("ordinal"), OUTPUT) == ["choice"]
    assert answer_field_names(study("pairwise"), {"kind": "pair"}) == ["choice"]
    assert answer_field_names(study("spa"), SPA) == ["p_0", "p_1"]
    assert answer_field_names(study("spa", collect_likert=True), SPA) == [
        "p_0",
        "p_1",
        "likert_0",
        "likert_1",
        "likert_2",
    ]
    assert answer_field_names(study("spa", collect_likert=True), {"kind": "spa_batch"}) == []


# clean_answer: categorical, ordinal, likert, continuous -------------------------------------


@pytest.mark.parametrize("kind", ["categorical", "ordinal"])
def test_a_label_is_kept_stripped_with_only_the_schemes_field_as_text(kind):
    answer = clean_answer(study(kind, LABELS), OUTPUT, {"choice": " unsafe ", "note": "hi"})
    assert answer == CleanAnswer(choice="unsafe", raw={"choice": " unsafe "})


@pytest.mark.parametrize("data", [{}, {"choice": ""}, {"choice": "  "}, {"choice": None}])
def test_no_label_is_refused_asking_for_one(data):
    assert refusal(clean_answer, study("categorical", LABELS), OUTPUT, data) == (
        "choice",
        "choose a label",
    )


def test_an_unknown_label_is_refused_listing_the_labels():
    assert refusal(clean_answer, study("ordinal", LABELS), OUTPUT, {"choice": "meh"}) == (
        "choice",
        "'meh' is not one of safe, unsafe",
    )


def test_a_likert_answer_is_a_point_of_the_scale():
    scheme = {"points": POINTS}
    answer = clean_answer(study("likert", scheme), OUTPUT, {"score": "4", "choice": "x"})
    assert answer == CleanAnswer(score=4.0, raw={"score": "4"})
    assert clean_answer(study("likert", scheme), OUTPUT, {"score": "1"}).score == 1.0
    assert clean_answer(study("likert", scheme), OUTPUT, {"score": "5"}).score == 5.0
    assert refusal(clean_answer, study("likert", scheme), OUTPUT, {"score": "3"}) == (
        "score",
        "3 is not a point on the scale",
    )
    assert refusal(clean_answer, study("likert", scheme), OUTPUT, {"score": "6"}) == (
        "score",
        "6 is outside 1 to 5",
    )
    assert refusal(clean_answer, study("likert", scheme), OUTPUT, {"score": "0"})[0] == "score"


def test_a_likert_study_without_points_refuses_every_answer_without_failing():
    assert refusal(clean_answer, study("likert", {}), OUTPUT, {"score": "1"}) == (
        "score",
        "this study's scale has no points; tell its lead",
    )


def test_a_continuous_score_is_any_number_from_0_to_100():
    assert clean_answer(study("continuous"), OUTPUT, {"score": "37.25"}) == CleanAnswer(
        score=37.25, raw={"score": "37.25"}
    )
    assert clean_answer(study("continuous"), OUTPUT, {"score": "0"}).score == 0.0
    assert clean_answer(study("continuous"), OUTPUT, {"score": "100"}).score == 100.0
    assert refusal(clean_answer, study("continuous"), OUTPUT, {"score": "100.1"}) == (
        "score",
        "100.1 is outside 0 to 100",
    )
    assert refusal(clean_answer, study("continuous"), OUTPUT, {}) == (
        "score",
        "an answer is required",
    )


def test_an_unknown_task_kind_is_refused_not_a_server_error():
    assert refusal(clean_answer, study("ranking"), OUTPUT, {"choice": "1"}) == (
        "task",
        "unknown task kind 'ranking'",
    )


def test_fields_are_checked_before_the_scheme():
    refused = refusal(clean_answer, study("categorical", LABELS), OUTPUT, {"choice": "safe\x00"})
    assert refused == ("choice", "contains a control character (u+0000); answers are plain")


# clean_answer: pairwise ---------------------------------------------------------------------


@pytest.mark.django_db
def test_a_pairwise_answer_names_the_winning_system_of_the_side_chosen():
    pair_study = make_study(Study.TaskKind.PAIRWISE, n_prompts=1)
    first, second = pair_study.prompts.get().outputs.order_by("id")
    presentation = {"kind": "pair", "left": second.id, "right": first.id}
    left = clean_answer(pair_study, presentation, {"choice": " left "})
    assert left == CleanAnswer(
        choice="left", winner_system_id=second.system_id, raw={"choice": " left "}
    )
    right = clean_answer(pair_study, presentation, {"choice": "right"})
    assert right.winner_system_id == first.system_id
    tie = clean_answer(pair_study, presentation, {"choice": "tie"})
    assert (tie.choice, tie.winner_system_id) == ("tie", None)


def test_a_tie_is_allowed_unless_the_scheme_says_otherwise():
    presentation = {"kind": "pair", "left": 1, "right": 2}
    assert clean_answer(study("pairwise", {}), presentation, {"choice": "tie"}).choice == "tie"
    no_tie = study("pairwise", {"tie_allowed": False})
    assert refusal(clean_answer, no_tie, presentation, {"choice": "tie"}) == (
        "choice",
        "choose one of left, right",
    )
    assert refusal(clean_answer, study("pairwise", {}), presentation, {}) == (
        "choice",
        "choose one of left, right, tie",
    )


# clean_answer: SPA --------------------------------------------------------------------------


def test_an_spa_answer_keeps_each_percent_with_its_comparison_direction_and_position():
    data = {"p_0": "70", "p_1": " 25.5", "likert_0": "5", "p_2": "1"}
    answer = clean_answer(study("spa"), SPA, data)
    assert answer == CleanAnswer(
        spa_answers=((7, False, 70.0, 0), (7, True, 25.5, 1)),
        raw={"p_0": "70", "p_1": " 25.5"},
    )


def test_an_spa_percent_is_required_for_every_question_and_named():
    assert refusal(clean_answer, study("spa"), SPA, {"p_0": "70"}) == (
        "p_1",
        "an answer is required",
    )
    assert refusal(clean_answer, study("spa"), SPA, {"p_0": "70", "p_1": "101"}) == (
        "p_1",
        "101 is outside 0 to 100",
    )


def test_spa_ratings_are_points_of_the_likert_scale_named_by_display_index():
    likert = study("spa", {"likert_points": POINTS}, collect_likert=True)
    data = {"p_0": "50", "p_1": "50", "likert_0": "1", "likert_1": "5", "likert_2": "4"}
    answer = clean_answer(likert, SPA, data)
    assert answer.output_ratings == ((31, 1.0), (32, 5.0), (33, 4.0))
    assert answer.raw == data
    assert refusal(clean_answer, likert, SPA, {**data, "likert_1": "3"}) == (
        "likert_1",
        "3 is not a point on the scale",
    )
    assert refusal(clean_answer, likert, SPA, {**data, "likert_2": "6"}) == (
        "likert_2",
        "6 is outside 1 to 5",
    )
    assert refusal(clean_answer, likert, SPA, {**data, "likert_0": ""}) == (
        "likert_0",
        "an answer is required",
    )


def test_spa_ratings_are_ignored_when_the_study_does_not_collect_them():
    not_collecting = study("spa", {"likert_points": POINTS})
    answer = clean_answer(not_collecting, SPA, {"p_0": "1", "p_1": "2", "likert_0": "3"})
    assert answer.output_ratings == ()


def test_an_spa_study_collecting_ratings_without_points_refuses_without_failing():
    no_points = study("spa", {}, collect_likert=True)
    assert refusal(clean_answer, no_points, SPA, {"p_0": "1", "p_1": "2", "likert_0": "3"}) == (
        "likert_0",
        "this study's scale has no points; tell its lead",
    )
    # Nothing to rate: nothing to refuse.
    no_outputs = dict(SPA, outputs=[])
    assert clean_answer(no_points, no_outputs, {"p_0": "1", "p_1": "2"}).output_ratings == ()


def test_a_categorical_study_without_labels_refuses_every_answer_without_failing():
    assert refusal(clean_answer, study("categorical", {}), OUTPUT, {"choice": "safe"}) == (
        "choice",
        "'safe' is not one of ",
    )


def test_an_spa_presentation_without_questions_or_outputs_asks_for_nothing():
    likert = study("spa", {"likert_points": POINTS}, collect_likert=True)
    answer = clean_answer(likert, {"kind": "spa_batch"}, {"p_0": "5", "likert_0": "1"})
    assert answer == CleanAnswer(raw={})
