"""Every agreement statistic refuses bad input by naming the argument and the row at fault, and
the bootstrap takes exactly the replicate counts and levels it documents.

(The mutation run of analysis/agreement.py found that swapping the names of two columns in these
messages, or moving a bootstrap bound by one, failed no test.)
"""

import math

import numpy as np
import pytest

from analysis import agreement

ITEMS = ["a", "a", "b", "b", "c", "c"]
RATERS = ["r1", "r2", "r1", "r2", "r1", "r2"]
LABELS = ["x", "y", "x", "x", "y", "y"]

STATISTICS = [
    agreement.percent_agreement,
    agreement.fleiss_kappa,
    agreement.specific_agreement,
    agreement.krippendorff_alpha,
    agreement.cohen_kappa,
    agreement.pairwise_kappas,
    agreement.label_distribution,
]


def refusal(call) -> str:
    with pytest.raises(ValueError) as raised:
        call()
    return str(raised.value)


@pytest.mark.parametrize("statistic", STATISTICS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("column", ["items", "raters", "labels"])
def test_a_missing_value_is_refused_naming_its_column_and_row(statistic, column):
    columns = {"items": list(ITEMS), "raters": list(RATERS), "labels": list(LABELS)}
    columns[column][3] = None
    message = refusal(lambda: statistic(columns["items"], columns["raters"], columns["labels"]))
    assert message.startswith(f"{column}: contains None at row 3"), message


@pytest.mark.parametrize("statistic", STATISTICS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("column", ["raters", "labels"])
def test_a_column_of_another_length_is_named_against_items(statistic, column):
    columns = {"items": list(ITEMS), "raters": list(RATERS), "labels": list(LABELS)}
    columns[column] = columns[column][:-1]
    message = refusal(lambda: statistic(columns["items"], columns["raters"], columns["labels"]))
    assert message == f"{column}: length 5 differs from items length 6", message


def test_preference_agreement_names_its_choices():
    choices = ["A", "B", "A", None, "tie", "A"]
    message = refusal(lambda: agreement.preference_agreement(ITEMS, RATERS, choices))
    assert message.startswith("choices: contains None at row 3"), message
    fine = ["A", "B", "A", "A", "tie", "A"]
    message = refusal(lambda: agreement.preference_agreement(ITEMS, RATERS, fine[:-1]))
    assert message == "choices: length 5 differs from items length 6", message


def test_two_dimensional_items_are_refused_naming_items():
    message = refusal(lambda: agreement.fleiss_kappa(np.zeros((2, 3)), RATERS[:2], LABELS[:2]))
    assert message.startswith("items: expected a one-dimensional sequence"), message


@pytest.mark.parametrize(
    "statistic", [agreement.fleiss_kappa, agreement.cohen_kappa, agreement.label_distribution]
)
def test_declared_categories_are_checked_by_name(statistic):
    message = refusal(lambda: statistic(ITEMS, RATERS, LABELS, categories=["x"]))
    assert message == "labels: value 'y' is not among the declared categories", message
    message = refusal(lambda: statistic(ITEMS, RATERS, LABELS, categories=["x", "y", "x"]))
    assert message == "categories: 'x' appears more than once", message
    message = refusal(lambda: statistic(ITEMS, RATERS, LABELS, categories=np.array([["x"]])))
    assert message.startswith("categories: expected a one-dimensional sequence"), message
    message = refusal(lambda: statistic(ITEMS, RATERS, LABELS, categories=[["x", "y"], ["z"]]))
    assert message == "categories: ['x', 'y'] at position 0 is not a single category", message


@pytest.mark.parametrize("n_boot", [1, 2, np.int64(3)])
def test_the_bootstrap_takes_any_positive_whole_number_of_replicates(n_boot):
    result = agreement.bootstrap("percent_agreement", ITEMS, RATERS, LABELS, n_boot=n_boot)
    assert result.n_boot == int(n_boot)


@pytest.mark.parametrize("n_boot", [0, -5, True, False, 2.5, 2.0, "10", None])
def test_the_bootstrap_refuses_any_other_replicate_count(n_boot):
    message = refusal(
        lambda: agreement.bootstrap("percent_agreement", ITEMS, RATERS, LABELS, n_boot=n_boot)
    )
    assert message == f"n_boot: expected a positive integer, got {n_boot!r}", message


@pytest.mark.parametrize("ci", [0.0, 1.0, -0.1, 1.5, math.nan])
def test_the_bootstrap_refuses_levels_outside_zero_to_one(ci):
    message = refusal(
        lambda: agreement.bootstrap("percent_agreement", ITEMS, RATERS, LABELS, n_boot=5, ci=ci)
    )
    assert message == f"ci: expected a level in (0, 1), got {ci!r}", message


@pytest.mark.parametrize("ci", [1e-9, 0.5, 1 - 1e-9])
def test_the_bootstrap_takes_levels_just_inside_zero_to_one(ci):
    result = agreement.bootstrap("percent_agreement", ITEMS, RATERS, LABELS, n_boot=5, ci=ci)
    assert result.confidence == ci


def test_a_statistic_that_is_not_one_is_refused_by_name_whatever_it_is():
    for statistic in ["fleiss", len, object(), agreement.icc]:
        message = refusal(lambda s=statistic: agreement.bootstrap(s, ITEMS, RATERS, LABELS))
        assert message.startswith("statistic: expected one of ["), message


def test_a_statistic_defined_on_the_labels_but_in_no_replicate_says_so():
    # Two items, each labelled alike by both raters, one "x" and one "y": kappa is 1. A replicate
    # that draws the same item twice sees one category only, where kappa is undefined (0/0).
    items, raters, labels = ["a", "a", "b", "b"], ["r1", "r2"] * 2, ["x", "x", "y", "y"]
    results = [
        agreement.bootstrap("cohen_kappa", items, raters, labels, n_boot=1, seed=seed)
        for seed in range(40)
    ]
    none = [r for r in results if r.n_valid == 0]
    some = [r for r in results if r.n_valid == 1]
    assert none and some  # both kinds of draw occur among these seeds
    for r in none:
        assert r.value == 1.0 and math.isnan(r.ci_low) and math.isnan(r.ci_high)
        assert r.reason == "the statistic was undefined in every bootstrap replicate"
    for r in some:
        assert r.value == 1.0 and r.reason is None and r.ci_low == r.ci_high == 1.0


@pytest.mark.parametrize("statistic", STATISTICS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("row", [0, 2])
def test_a_list_where_a_label_belongs_is_refused_naming_its_row(statistic, row):
    labels = list(LABELS)
    labels[row] = ["y", "z"]  # of another length than the labels' strings: no 2-D array forms
    message = refusal(lambda: statistic(ITEMS, RATERS, labels))
    assert message == f"labels: row {row} holds ['y', 'z'], not a single value", message
