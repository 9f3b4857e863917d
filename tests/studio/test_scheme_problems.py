"""Each refused scheme says where and why, exactly at its limits (the mutation run of
annotation/schemes.py found that the tests checked that a problem was found, not which)."""

from annotation.schemes import (
    MAX_LABELS,
    MAX_LIKERT_POINTS,
    MAX_REFERENCE_CHARS,
    MAX_TEXT_CHARS,
    MAX_VALUE_CHARS,
    default_scheme,
    validate_scheme,
)


def said(kind, scheme, **kwargs) -> list[str]:
    return [str(p) for p in validate_scheme(kind, scheme, **kwargs)]


def points(*values, text="t"):
    return [{"value": v, "text": f"{text}{i}"} for i, v in enumerate(values)]


def labels(n, keys=False):
    return [
        {
            "value": f"v{i}",
            "text": f"Label {i}",
            **({"key": "abcdefhijklmnopqrstu"[i]} if keys else {}),
        }
        for i in range(n)
    ]


def test_the_default_schemes_start_where_a_lead_expects():
    likert = default_scheme("likert")["points"]
    assert [p["value"] for p in likert] == [1, 2, 3, 4, 5]
    assert len({p["text"] for p in likert}) == 5
    assert default_scheme("spa")["likert_points"] == likert
    assert default_scheme("pairwise") == {"tie_allowed": True}
    # The values are what a new study stores as labels; the keys are what annotators press.
    assert [(x["value"], x["key"]) for x in default_scheme("categorical")["labels"]] == [
        ("yes", "y"),
        ("no", "n"),
    ]
    assert [(x["value"], x["key"]) for x in default_scheme("ordinal")["labels"]] == [
        ("low", "l"),
        ("medium", "m"),
        ("high", "h"),
    ]


def test_an_unknown_kind_a_non_object_and_unknown_settings_are_named():
    assert said("nope", {}) == ["task_kind: unknown task kind 'nope'"]
    assert said("likert", []) == ["scheme: must be an object"]
    assert said("pairwise", {"tie_allowed": "yes", "extra": 1}) == [
        "extra: is not a setting of a pairwise scheme",
        "tie_allowed: must be true or false",
    ]
    # Unknown settings and the kind's own problems are reported together.
    assert said("likert", {"points": [], "colour": "red"}) == [
        "colour: is not a setting of a likert scheme",
        "points: add at least 2 points (there are 0)",
    ]
    assert said("categorical", {"labels": None, "x": 1}) == [
        "x: is not a setting of a categorical scheme",
        "labels: add at least 2 labels",
    ]


def test_likert_points_at_their_limits():
    assert said("likert", {"points": points(0, 100)}) == []
    assert said("likert", {"points": points(-0.5, 100.5)}) == [
        "points[0].value: -0.5 is outside 0 to 100",
        "points[1].value: 100.5 is outside 0 to 100",
    ]
    assert said("likert", {"points": points(*range(1, MAX_LIKERT_POINTS + 1))}) == []
    assert said("likert", {"points": points(*range(1, MAX_LIKERT_POINTS + 2))}) == [
        f"points: at most {MAX_LIKERT_POINTS} points (there are {MAX_LIKERT_POINTS + 1})"
    ]
    assert said("likert", {"points": points(1)}) == ["points: add at least 2 points (there are 1)"]
    assert said("likert", {"points": "1-5"}) == ["points: add at least 2 points"]
    assert said("likert", {"points": [{"value": 1, "text": "a"}, 2]}) == [
        "points[1]: must be an object"
    ]
    assert said("likert", {"points": points(3, 2)}) == [
        "points[1].value: must be above the point before (3)"
    ]
    assert said(
        "likert", {"points": [{"value": True, "text": "a"}, {"value": 2, "text": "b"}]}
    ) == ["points[0].value: must be a number"]
    extra = [{"value": 1, "text": "a", "colour": "red"}, {"value": 2, "text": "b"}]
    assert said("likert", {"points": extra}) == ["points[0].colour: is not a setting of a point"]


def test_texts_at_their_limits():
    fits = [{"value": 1, "text": "x" * MAX_TEXT_CHARS}, {"value": 2, "text": "b"}]
    assert said("likert", {"points": fits}) == []
    over = [{"value": 1, "text": "x" * (MAX_TEXT_CHARS + 1)}, {"value": 2, "text": 7}]
    assert said("likert", {"points": over}) == [
        f"points[0].text: is longer than {MAX_TEXT_CHARS} characters",
        "points[1].text: must be text",
    ]
    scheme = {"min_text": "  ", "best_reference": "r" * MAX_REFERENCE_CHARS}
    assert said("continuous", scheme) == ["min_text: is required", "max_text: is required"]
    scheme = {"min_text": "a", "max_text": 5, "worst_reference": "r" * (MAX_REFERENCE_CHARS + 1)}
    assert said("continuous", scheme) == [
        "max_text: must be text",
        f"worst_reference: is longer than {MAX_REFERENCE_CHARS} characters",
    ]


def test_labels_at_their_limits():
    assert said("categorical", {"labels": labels(MAX_LABELS, keys=True)}) == []
    assert said(
        "categorical", {"labels": labels(MAX_LABELS, keys=True) + [{"value": "x", "text": "X"}]}
    ) == [f"labels: at most {MAX_LABELS} labels (there are {MAX_LABELS + 1})"]
    # Up to 9 labels get number keys; from the 10th on each needs its own.
    assert said("ordinal", {"labels": labels(9)}) == []
    assert said("ordinal", {"labels": labels(10)}) == [
        f"labels[{i}].key: past 9 labels every label needs a key" for i in range(10)
    ]


def test_each_label_problem_is_named():
    def one(label):
        return said("categorical", {"labels": [label, {"value": "other", "text": "Other"}]})

    assert one({"value": "v" * MAX_VALUE_CHARS, "text": "a"}) == []
    assert one({"value": "v" * (MAX_VALUE_CHARS + 1), "text": "a"}) == [
        f"labels[0].value: is longer than {MAX_VALUE_CHARS} characters"
    ]
    assert one({"value": "", "text": "a"}) == ["labels[0].value: is required"]
    assert one({"value": 3, "text": "a"}) == ["labels[0].value: is required"]
    assert one({"value": " yes", "text": "a"}) == [
        "labels[0].value: must not start or end with a space"
    ]
    assert said(
        "categorical", {"labels": [{"value": "a", "text": "A"}, {"value": "a", "text": "B"}]}
    ) == ["labels[1].value: 'a' is used twice"]
    assert one({"value": "v", "text": "a", "key": "ab"}) == [
        "labels[0].key: must be one letter or digit"
    ]
    assert one({"value": "v", "text": "a", "key": "é"}) == [
        "labels[0].key: must be one letter or digit"
    ]
    assert one({"value": "v", "text": "a", "key": "G"}) == ["labels[0].key: 'G' opens the guide"]
    assert one({"value": "v", "text": "a", "shade": 1}) == [
        "labels[0].shade: is not a setting of a label"
    ]
    both = [{"value": "a", "text": "A", "key": "y"}, {"value": "b", "text": "B", "key": "Y"}]
    assert said("categorical", {"labels": both}) == ["labels[1].key: 'Y' is used twice"]


def test_an_spa_scheme_needs_points_only_when_it_asks_for_ratings():
    assert said("spa", {}) == []
    assert said("spa", {}, collect_likert=True) == ["likert_points: add at least 2 points"]
    assert said("spa", {"likert_points": []}) == [
        "likert_points: add at least 2 points (there are 0)"
    ]


def test_each_reference_text_of_a_continuous_scale_is_bounded():
    long = "r" * (MAX_REFERENCE_CHARS + 1)
    base = {"min_text": "a", "max_text": "b"}
    assert said("continuous", {**base, "best_reference": long}) == [
        f"best_reference: is longer than {MAX_REFERENCE_CHARS} characters"
    ]
    assert said("continuous", {**base, "best_reference": 3}) == ["best_reference: must be text"]


def test_an_spa_scheme_with_ratings_names_its_unknown_settings_too():
    scheme = {"likert_points": points(1, 2, 3), "colour": "blue"}
    assert said("spa", scheme) == ["colour: is not a setting of a spa scheme"]
    assert said("spa", {"likert_points": points(1), "colour": "blue"}) == [
        "colour: is not a setting of a spa scheme",
        "likert_points: add at least 2 points (there are 1)",
    ]
