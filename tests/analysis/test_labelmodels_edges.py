"""analysis.labelmodels at its edges: the report's iteration cap, the refusals and their messages,
the vote results' fields, and how far a capped Dawid-Skene fit says its labels still moved.

References: hand-counted votes on tiny designs; a fit's own checkpoints (the same EM path cut
earlier) for `labels_moved`. No database.
"""

from pathlib import Path

import numpy as np
import pytest

from analysis import labelmodels as lm
from tests.analysis.test_labelmodels import _striped

DATA = Path(__file__).parent / "data" / "dawid_skene_1979.csv"

# --------------------------------------------------------------------------- iteration_cap


def test_the_iteration_cap_divides_the_budget_it_is_given():
    assert lm.iteration_cap(10, budget=50_000) == 5_000
    assert lm.iteration_cap(1, budget=5_000) == 5_000
    assert lm.iteration_cap(0, budget=5_000) == 5_000  # no labels: one label's worth
    assert lm.iteration_cap(1_000, budget=50_000) == 100  # never under crowd-kit's 100
    assert lm.iteration_cap(1, budget=10**12) == lm.DS_MAX_ITER
    assert lm.iteration_cap(3, budget=1_000) == 333
    assert type(lm.iteration_cap(np.int64(7), budget=700)) is int


def test_the_default_budget_is_ds_budget():
    assert lm.iteration_cap(2_500_000) == lm.DS_BUDGET // 2_500_000 == 400
    assert lm.iteration_cap(99_999) == lm.DS_MAX_ITER
    assert lm.iteration_cap(100_001) == lm.DS_BUDGET // 100_001


# --------------------------------------------------------------------------- votes


def test_a_vote_result_carries_its_counts_and_options():
    r = lm.majority_vote([2, 2, 2, 1, 1], ["a", "b", "c", "a", "b"], ["y", "y", "x", "x", "z"])
    assert r.items.tolist() == [1, 2] and r.classes.tolist() == ["x", "y", "z"]
    assert r.scores.tolist() == [[1, 0, 1], [1, 2, 0]]
    assert (r.n_labels, r.n_items, r.tie_break) == (5, 2, "random")
    assert r.tied.tolist() == [True, False] and r.no_weight.tolist() == [False, False]
    assert r.labels[2] == "y" and r.labels[1] in ("x", "z")


def test_lowest_tie_break_takes_the_first_tied_class_not_the_first_class():
    r = lm.majority_vote([1, 1, 1, 1], [0, 1, 2, 3], ["c", "b", "c", "b"], tie_break="lowest")
    assert r.item_labels.tolist() == ["b"]
    three = lm.majority_vote([1] * 5, range(5), ["a", "b", "b", "c", "c"], tie_break="lowest")
    assert three.item_labels.tolist() == ["b"] and three.tied.tolist() == [True]


def test_random_tie_break_draws_only_among_the_tied_classes():
    items = np.repeat(np.arange(300), 5)
    labels = np.tile(["a", "b", "b", "c", "c"], 300)  # b and c tied, a behind
    r = lm.majority_vote(items, np.zeros(items.size), labels, seed=1)
    assert set(r.item_labels.tolist()) == {"b", "c"}
    assert 100 < np.count_nonzero(r.item_labels == "b") < 200


def test_a_clear_winner_is_not_tied_whatever_the_tie_break():
    r = lm.majority_vote([1, 1, 1], [0, 1, 2], ["b", "a", "b"], seed=5)
    assert r.item_labels.tolist() == ["b"] and not r.tied.any()


def test_an_unknown_tie_break_is_refused_with_the_choices():
    with pytest.raises(ValueError, match=r"^tie_break: expected one of \('random', 'lowest'\)"):
        lm.majority_vote([1], [1], ["a"], tie_break="first")
    with pytest.raises(ValueError, match=r"^tie_break: expected one of"):
        lm.weighted_vote([1], [1], ["a"], {1: 1.0}, tie_break="highest")


def test_no_labels_at_all_are_refused():
    with pytest.raises(ValueError, match="^items: no labels given$"):
        lm.majority_vote([], [], [])


def test_weighted_vote_sums_the_weights_per_class():
    r = lm.weighted_vote(
        [1, 1, 1, 2, 2],
        ["a", "b", "c", "a", "c"],
        ["x", "y", "y", "x", "y"],
        {"a": 2.5, "b": 1.0, "c": 1.0, "unused": 9.0},
    )
    assert r.scores.tolist() == [[2.5, 2.0], [2.5, 1.0]]
    assert r.labels == {1: "x", 2: "x"} and not r.tied.any()
    np.testing.assert_allclose(r.proportions, [[2.5 / 4.5, 2 / 4.5], [2.5 / 3.5, 1 / 3.5]])
    assert r.shares[2] == pytest.approx({"x": 2.5 / 3.5, "y": 1 / 3.5})


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        ([("a", 1.0)], r"^weights: expected a mapping rater -> float$"),
        ({}, r"^weights: empty mapping$"),
        ({"a": -0.5, "b": 1.0}, r"^weights: every weight must be finite and >= 0$"),
        ({"a": np.inf, "b": 1.0}, r"^weights: every weight must be finite and >= 0$"),
        ({None: 1.0, "a": 1.0}, r"^weights: keys not comparable with raters"),
        ({"a": 1.0, "c": 1.0}, r"^weights: no weight for raters \['b'\]$"),
    ],
)
def test_weighted_vote_refuses_bad_weights_with_the_reason(weights, message):
    with pytest.raises(ValueError, match=message):
        lm.weighted_vote([1, 1], ["a", "b"], ["x", "y"], weights)


def test_a_weight_of_zero_is_allowed():
    r = lm.weighted_vote([1, 1], ["a", "b"], ["x", "y"], {"a": 0.0, "b": 1.0})
    assert r.labels == {1: "y"}


def test_soft_labels_count_every_response():
    r = lm.soft_labels([1, 1, 1, 2], ["a", "a", "b", "a"], ["x", "x", "y", "y"])
    assert r.counts.tolist() == [[2, 1], [0, 1]] and r.n_labels == 4
    assert r.items.tolist() == [1, 2] and r.classes.tolist() == ["x", "y"]
    assert r.distributions[1] == pytest.approx({"x": 2 / 3, "y": 1 / 3})


# --------------------------------------------------------------------------- Dawid-Skene input


def small():
    return [1, 1, 2, 2, 3, 3], ["a", "b", "a", "b", "a", "b"], ["x", "x", "y", "y", "x", "y"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_iter": 0}, r"^max_iter: expected an integer >= 1, got 0$"),
        ({"max_iter": 5.0}, r"^max_iter: expected an integer >= 1, got 5.0$"),
        ({"tol": -1e-9}, r"^tol: expected a finite number >= 0, got -1e-09$"),
        ({"tol": np.nan}, r"^tol: expected a finite number >= 0"),
        ({"smoothing": -1}, r"^smoothing: expected a finite number >= 0, got -1$"),
        ({"smoothing": np.inf}, r"^smoothing: expected a finite number >= 0"),
        ({"init": "uniform"}, r"^init: expected one of \('proportions', 'majority'\) or an array"),
        ({"init": np.full((3, 2), -0.5)}, r"^init: expected a non-negative finite array of shape"),
        ({"init": np.full((3, 2), np.nan)}, r"^init: expected a non-negative finite array"),
        ({"init": np.zeros((3, 2))}, r"^init: every row needs positive mass$"),
        ({"classes": []}, r"^classes: empty$"),
        ({"classes": ["x", "y", "x"]}, r"^classes: contains duplicates$"),
        ({"classes": np.array([1, "x"], dtype=object)}, r"^classes: not comparable with labels"),
        ({"classes": ["x"]}, r"^classes: does not contain the observed labels \['y'\]$"),
        ({"clamp": [1, 2, 3]}, r"^clamp: expected an \(items, labels\) pair$"),
        ({"clamp": ([1, 2], ["x"])}, r"^clamp: items and labels must be 1-d and of equal"),
        ({"clamp": (np.array([None]), ["x"])}, r"^clamp: items not comparable with the data's"),
        ({"clamp": ([1], np.array([None]))}, r"^clamp: labels not comparable with the classes"),
        ({"clamp": ([1, 2], ["x", "w"])}, r"^clamp: labels not among the classes: \['w'\]$"),
    ],
)
def test_dawid_skene_refuses_bad_options_naming_them(kwargs, message):
    with pytest.raises(ValueError, match=message):
        lm.dawid_skene(*small(), **kwargs)


def test_the_init_options_are_recorded_and_an_array_is_normalised():
    assert lm.dawid_skene(*small(), max_iter=1).init == "proportions"
    assert lm.dawid_skene(*small(), init="majority", max_iter=1).init == "majority"
    start = np.array([[3.0, 1.0], [1.0, 1.0], [0.0, 2.0]])
    a = lm.dawid_skene(*small(), init=start, max_iter=1, tol=0.0)
    b = lm.dawid_skene(*small(), init=start / start.sum(axis=1, keepdims=True), max_iter=1)
    assert a.init == "array"
    np.testing.assert_allclose(a.posteriors, b.posteriors)


def test_majority_init_splits_a_tie_equally():
    # item 3 tied x/y: the majority start gives it (1/2, 1/2), the same as its proportions
    a = lm.dawid_skene(*small(), init="majority", max_iter=1, tol=0.0)
    b = lm.dawid_skene(*small(), init="proportions", max_iter=1, tol=0.0)
    np.testing.assert_allclose(a.posteriors, b.posteriors)


def test_clamped_items_are_counted_held_and_unknown_ones_ignored():
    r = lm.dawid_skene(*small(), clamp=([3, 99], ["y", "x"]), max_iter=20)
    assert r.n_clamped == 1
    assert r.posteriors[2].tolist() == [0.0, 1.0]
    assert lm.dawid_skene(*small(), clamp=([], [])).n_clamped == 0


def test_the_fit_records_its_options_and_counts():
    r = lm.dawid_skene(*small(), tol=1e-3, max_iter=50)
    assert (r.tol, r.max_iter, r.n_labels) == (1e-3, 50, 6)
    assert r.items.tolist() == [1, 2, 3] and r.raters.tolist() == ["a", "b"]
    assert r.log_likelihood == r.log_likelihood_trace[-1]
    assert r.log_likelihood_trace.size == r.n_iter
    assert set(r.confusion) == {"a", "b"} and r.labels == dict(
        zip([1, 2, 3], r.item_labels.tolist(), strict=True)
    )


def test_one_e_step_has_no_likelihood_change_and_moved_nothing_over_nothing():
    r = lm.dawid_skene(*small(), max_iter=1, tol=0.0)
    assert np.isnan(r.log_likelihood_change)
    assert (r.labels_moved, r.moved_over) == (0, 0)
    assert r.reason.endswith("0 item labels changed over the last 0 iterations")


def test_a_converged_fit_has_an_empty_reason():
    rows = [row for row in DATA.read_text().splitlines() if not row.startswith("#")]
    table = np.array([row.split(",") for row in rows[1:]], dtype=int)  # 1979's patients
    r = lm.dawid_skene(table[:, 0], table[:, 1], table[:, 2], max_iter=1000)
    assert r.converged and r.reason == "" and r.n_iter >= 2
    assert r.log_likelihood_change == pytest.approx(
        r.log_likelihood_trace[-1] - r.log_likelihood_trace[-2]
    )


def test_labels_moved_counts_against_the_latest_checkpoint():
    items, raters, labels = _striped(600, 40)
    fits = {m: lm.dawid_skene(items, raters, labels, tol=0.0, max_iter=m) for m in (1, 2, 7)}
    # checkpoint after E-step 1: the labels of the 7-step fit against those of the 1-step fit
    moved = int(np.count_nonzero(fits[7].item_labels != fits[1].item_labels))
    assert fits[7].moved_over == 6 and fits[7].labels_moved == moved
    one = int(np.count_nonzero(fits[2].item_labels != fits[1].item_labels))
    assert fits[2].moved_over == 1 and fits[2].labels_moved == one
    word = "label" if one == 1 else "labels"
    assert fits[2].reason == (
        f"no convergence within max_iter=2 (tol=0.0); {one} item {word} changed over the last "
        "1 iterations"
    )


def test_a_single_moved_label_is_singular():
    items, raters, labels = _striped(200, 12, seed=1)
    r = lm.dawid_skene(items, raters, labels, tol=0.0, max_iter=2)
    assert r.labels_moved == 1 and r.moved_over == 1
    assert r.reason.endswith("; 1 item label changed over the last 1 iterations")
