"""bootstrap's defaults and the options it passes on: weights and declared categories reach the
statistic (checked against scikit-learn), and are refused as the statistic refuses them."""

import warnings

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from analysis import agreement


def two_raters(seed=1, n_items=25):
    rng = np.random.default_rng(seed)
    items = np.tile(np.arange(n_items), 2)
    raters = np.repeat(["a", "b"], n_items)
    truth = rng.choice([1, 2, 5], n_items)
    labels = np.where(rng.random(2 * n_items) < 0.7, np.tile(truth, 2), rng.choice([1, 2, 5], 50))
    return items, raters, labels


def sklearn_weighted(items, raters, labels, draw, scale):
    a = [labels[(raters == "a") & (items == d)][0] for d in draw]
    b = [labels[(raters == "b") & (items == d)][0] for d in draw]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cohen_kappa_score(a, b, labels=scale, weights="linear")


def test_bootstrap_of_weighted_kappa_keeps_the_declared_scale():
    """Scale 1..5 with 3 and 4 unused: |1 - 5| is 4 steps, not 2; every replicate is scikit-learn's
    linear-weighted kappa on the drawn items with that scale."""
    items, raters, labels = two_raters()
    scale = [1, 2, 3, 4, 5]
    result = agreement.bootstrap(
        "cohen_kappa", items, raters, labels, n_boot=6, seed=2, weights="linear", categories=scale
    )
    assert result.value == pytest.approx(
        sklearn_weighted(items, raters, labels, np.arange(25), scale), abs=1e-12
    )
    draws = np.random.default_rng(2)
    for b in range(6):
        draw = draws.integers(0, 25, size=25)
        theirs = sklearn_weighted(items, raters, labels, draw, scale)
        assert result.replicates[b] == pytest.approx(theirs, abs=1e-12)


@pytest.mark.parametrize("statistic", ["cohen_kappa", "fleiss_kappa", "specific_agreement"])
def test_bootstrap_refuses_labels_outside_the_declared_categories(statistic):
    items, raters, labels = two_raters()
    with pytest.raises(
        ValueError, match="^labels: value .*5.* is not among the declared categories"
    ):
        agreement.bootstrap(statistic, items, raters, labels, n_boot=3, categories=[1, 2])


def test_bootstrap_refuses_unknown_kappa_weights_naming_them():
    items, raters, labels = two_raters()
    with pytest.raises(ValueError, match=r"^weights: expected one of \(None, 'linear', "):
        agreement.bootstrap("cohen_kappa", items, raters, labels, n_boot=3, weights="cubic")


def test_bootstrap_draws_a_thousand_replicates_from_seed_zero_by_default():
    items, raters, labels = two_raters()
    default = agreement.bootstrap("percent_agreement", items, raters, labels)
    seeded = agreement.bootstrap("percent_agreement", items, raters, labels, n_boot=1000, seed=0)
    assert (default.n_boot, default.seed, default.replicates.size) == (1000, 0, 1000)
    np.testing.assert_array_equal(default.replicates, seeded.replicates)


def test_bootstrap_of_preference_agreement_counts_ties_by_default():
    items = np.repeat(np.arange(12), 3)
    raters = np.tile([0, 1, 2], 12)
    choices = np.array(["sysA", "sysB", "tie"])[np.random.default_rng(3).integers(0, 3, 36)]
    default = agreement.bootstrap("preference_agreement", items, raters, choices, n_boot=5)
    included = agreement.bootstrap(
        "preference_agreement", items, raters, choices, n_boot=5, ties="include"
    )
    assert default.value == agreement.preference_agreement(items, raters, choices).value
    np.testing.assert_array_equal(default.replicates, included.replicates)


@pytest.mark.parametrize("ci", [0.5, 0.95])
def test_bootstrap_interval_is_the_percentiles_of_the_replicates(ci):
    """Efron & Tibshirani's percentile interval: the (1 - ci)/2 and (1 + ci)/2 quantiles."""
    items, raters, labels = two_raters()
    result = agreement.bootstrap("krippendorff_alpha", items, raters, labels, n_boot=200, ci=ci)
    low, high = np.percentile(result.replicates, [50 * (1 - ci), 50 * (1 + ci)])
    assert (result.ci_low, result.ci_high) == pytest.approx((low, high), abs=1e-12)
    assert (result.confidence, result.n_boot, result.seed) == (ci, 200, 0)
