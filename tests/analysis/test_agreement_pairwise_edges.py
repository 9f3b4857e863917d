"""pairwise_kappas at its edges: many raters (rater pairs looked up among the pairs present), the
fields of each pair, and the reasons when no pair gives a kappa.

Every pair's kappa is scikit-learn's cohen_kappa_score on the items the pair shares.
"""

import math
import warnings

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from analysis import agreement


def sklearn_pair(items, raters, labels, a, b, weights=None, scale=None):
    ia = dict(zip(items[raters == a].tolist(), labels[raters == a].tolist(), strict=True))
    ib = dict(zip(items[raters == b].tolist(), labels[raters == b].tolist(), strict=True))
    shared = sorted(set(ia) & set(ib))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kappa = cohen_kappa_score(
            [ia[i] for i in shared], [ib[i] for i in shared], labels=scale, weights=weights
        )
    return kappa, len(shared)


def many_raters(seed=2):
    """1,100 raters: raters 5, 9 and 40 label items 0-29 (three pairs, 30 items each), every other
    rater one item of its own. 1,100^2 rater pairs are far more than the 90 pairs of labels."""
    rng = np.random.default_rng(seed)
    core_items = np.tile(np.arange(30), 3)
    core_raters = np.repeat([5, 9, 40], 30)
    truth = rng.integers(0, 4, 30)
    core_labels = np.where(rng.random(90) < 0.7, np.tile(truth, 3), rng.integers(0, 4, 90))
    lone = np.setdiff1d(np.arange(1100), [5, 9, 40])
    items = np.concatenate([core_items, 1000 + lone])
    raters = np.concatenate([core_raters, lone])
    labels = np.concatenate([core_labels, lone % 4])
    return items, raters, labels


@pytest.mark.parametrize("weights", [None, "quadratic"])
def test_pairwise_kappas_among_many_raters_match_scikit_learn_for_each_pair(weights):
    items, raters, labels = many_raters()
    result = agreement.pairwise_kappas(items, raters, labels, weights=weights)
    assert list(zip(result.rater_a.tolist(), result.rater_b.tolist(), strict=True)) == [
        (5, 9),
        (5, 40),
        (9, 40),
    ]
    for a, b, kappa, n_shared in zip(
        result.rater_a, result.rater_b, result.kappa, result.n_shared, strict=True
    ):
        theirs, shared = sklearn_pair(items, raters, labels, a, b, weights, [0, 1, 2, 3])
        assert kappa == pytest.approx(theirs, abs=1e-12)
        assert n_shared == shared == 30
    assert result.value == pytest.approx(np.mean(result.kappa), abs=1e-12)
    assert (result.n_items, result.n_dropped_items, result.n_labels) == (30, 1097, 90)
    assert result.n_raters == 1100 and result.reason is None


@pytest.mark.parametrize(
    ("items", "raters", "labels", "reason"),
    [
        ([], [], [], "no labels"),
        ([0, 1, 2], ["r", "r", "r"], [1, 2, 1], "only one rater: agreement needs at least two"),
        ([0, 1, 2], ["a", "b", "c"], [1, 2, 1], "no two raters share an item"),
        (
            [0, 0, 1, 1],
            ["a", "b", "a", "b"],
            [3, 3, 3, 3],
            "kappa is undefined for every rater pair (chance disagreement is zero: both raters "
            "used one and the same category)",
        ),
    ],
)
def test_pairwise_kappas_say_why_there_is_no_mean_kappa(items, raters, labels, reason):
    result = agreement.pairwise_kappas(items, raters, labels)
    assert math.isnan(result.value) and result.reason == reason
