"""Majority and weighted vote at their edges: ties (within float rounding, across more than 127
classes, items without weight), the tie rules and their seed, and ids that cannot be sorted.

References: hand-counted votes; `weighted_vote` with equal weights is `majority_vote`. No database.
"""

import numpy as np
import pytest

from analysis import labelmodels as lm


def tied_pairs(n_items=200):
    """Every item tied between "b" and "c" (two labels each), "a" given once elsewhere."""
    items = np.append(np.repeat(np.arange(n_items), 4), 10_000)
    labels = np.append(np.tile(["b", "c", "c", "b"], n_items), "a")
    return items, np.arange(items.size) % 4, labels


def test_sums_equal_up_to_float_rounding_are_a_tie():
    weights = {"a": 1000.1, "b": 1000.2, "c": 2000.3}
    assert 1000.1 + 1000.2 != 2000.3  # x's sum is one rounding step above y's
    r = lm.weighted_vote([1, 1, 1], ["a", "b", "c"], ["x", "x", "y"], weights, tie_break="lowest")
    assert r.tied.tolist() == [True] and r.labels == {1: "x"}
    clear = lm.weighted_vote([1, 1, 1], ["a", "b", "c"], ["y", "x", "y"], weights)
    assert not clear.tied.any() and clear.labels == {1: "y"}


def test_a_tie_across_more_than_127_classes_is_a_tie():
    # one label per class on item 0: all 130 classes tied (more than an int8 count holds)
    classes = [f"c{k:03d}" for k in range(130)]
    items = np.append(np.zeros(130, dtype=int), [1, 1])
    labels = np.append(classes, ["c005", "c005"])
    r = lm.majority_vote(items, np.arange(items.size), labels, tie_break="lowest")
    assert r.tied.tolist() == [True, False]
    assert r.labels == {0: "c000", 1: "c005"}
    drawn = lm.majority_vote(items, np.arange(items.size), labels, seed=4)
    assert drawn.tied.tolist() == [True, False]


def test_the_lowest_rule_never_draws():
    items, raters, labels = tied_pairs()
    r = lm.majority_vote(items, raters, labels, tie_break="lowest")
    assert r.tied[:-1].all() and set(r.item_labels[:-1].tolist()) == {"b"}


def test_an_item_without_weight_is_a_tie_among_all_classes():
    items = np.append(np.repeat(np.arange(300), 2), [300, 300])
    raters = np.append(np.tile(["mute", "mute2"], 300), ["loud", "loud"])
    labels = np.append(np.tile(["x", "y"], 300), ["z", "z"])
    weights = {"mute": 0.0, "mute2": 0.0, "loud": 1.0}
    r = lm.weighted_vote(items, raters, labels, weights, seed=2)
    assert r.no_weight[:300].all() and r.tied[:300].all() and not r.tied[300]
    # the label is drawn among all three classes, also z that nobody gave these items
    assert set(r.item_labels[:300].tolist()) == {"x", "y", "z"} and r.labels[300] == "z"
    lowest = lm.weighted_vote(items, raters, labels, weights, tie_break="lowest")
    assert set(lowest.item_labels[:300].tolist()) == {"x"} and lowest.tied[:300].all()


def test_the_default_seed_is_zero():
    items, raters, labels = tied_pairs()
    default = lm.majority_vote(items, raters, labels).item_labels
    assert np.array_equal(default, lm.majority_vote(items, raters, labels, seed=0).item_labels)
    assert not np.array_equal(default, lm.majority_vote(items, raters, labels, seed=1).item_labels)
    weights = dict.fromkeys(range(4), 1.0)
    w_default = lm.weighted_vote(items, raters, labels, weights).item_labels
    assert np.array_equal(w_default, default)


@pytest.mark.parametrize("seed", [0, 5])
def test_equal_weights_vote_as_the_majority_ties_and_draws_included(seed):
    items, raters, labels = tied_pairs()
    majority = lm.majority_vote(items, raters, labels, seed=seed)
    weighted = lm.weighted_vote(items, raters, labels, dict.fromkeys(range(4), 2.0), seed=seed)
    assert weighted.tie_break == majority.tie_break == "random"
    assert np.array_equal(weighted.item_labels, majority.item_labels)
    assert np.array_equal(weighted.tied, majority.tied)
    np.testing.assert_allclose(weighted.proportions, majority.proportions)


def test_the_raters_without_weight_are_named_five_at_most():
    raters = [f"r{j}" for j in range(8)]
    listed = r"\['r1', 'r2', 'r3', 'r4', 'r5'\]"  # of the seven without, in sorted order
    with pytest.raises(ValueError, match=rf"^weights: no weight for raters {listed}$"):
        lm.weighted_vote([1] * 8, raters, ["x"] * 8, {"r0": 1.0})


@pytest.mark.parametrize(
    ("call", "column"),
    [
        ("majority_vote", "items"),
        ("majority_vote", "labels"),
        ("weighted_vote", "items"),
        ("weighted_vote", "labels"),
        ("weighted_vote", "raters"),
        ("soft_labels", "items"),
        ("soft_labels", "labels"),
    ],
)
def test_ids_that_cannot_be_sorted_are_refused_naming_their_column(call, column):
    # results are in sorted order: a mix of numbers and strings has none
    data = {"items": [1, 2, 1, 2], "raters": ["a", "b", "b", "a"], "labels": ["x", "y", "x", "y"]}
    data[column] = np.array([1, "a", 1, "a"], dtype=object)
    extra = {"weights": {1: 1.0, "a": 1.0, "b": 1.0}} if call == "weighted_vote" else {}
    with pytest.raises(ValueError, match=rf"^{column}: values must be mutually comparable"):
        getattr(lm, call)(**data, **extra)
