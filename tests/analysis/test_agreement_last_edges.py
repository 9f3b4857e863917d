"""bootstrap_many on its own: its defaults, and statistics that resample different items in one
call (each checked against scikit-learn, the krippendorff package or a count of rater pairs)."""

import itertools
import warnings

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from analysis import agreement


def two_raters(seed=11, n_items=20):
    rng = np.random.default_rng(seed)
    items = np.tile(np.arange(n_items), 2)
    raters = np.repeat(["a", "b"], n_items)
    truth = rng.integers(0, 3, n_items)
    labels = np.where(rng.random(2 * n_items) < 0.7, np.tile(truth, 2), rng.integers(0, 3, 40))
    return items, raters, labels


def test_bootstrap_many_draws_a_thousand_replicates_from_seed_zero_by_default():
    """Every replicate is scikit-learn's kappa on the items np.random.default_rng(0) draws."""
    items, raters, labels = two_raters()
    (kappa,) = agreement.bootstrap_many([("cohen_kappa", {})], items, raters, labels)
    assert (kappa.n_boot, kappa.seed, kappa.replicates.size) == (1000, 0, 1000)
    a, b = labels[:20], labels[20:]
    draws = np.random.default_rng(0)
    theirs = np.empty(1000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a draw of one category: kappa 0/0, NaN in both
        for r in range(1000):
            draw = draws.integers(0, 20, size=20)
            theirs[r] = cohen_kappa_score(a[draw], b[draw])
    np.testing.assert_allclose(kappa.replicates, theirs, rtol=0, atol=1e-12)


def three_raters_with_ties():
    """Items 0-5: three choices; 6-9: a system and a tie (alpha pairs them, preference agreement
    without ties has one choice left); 10-11: a single choice (neither statistic pairs them)."""
    items = np.array([*np.repeat(np.arange(6), 3), *np.repeat(np.arange(6, 10), 2), 10, 11])
    raters = np.array([*np.tile(["r1", "r2", "r3"], 6), *np.tile(["r1", "r2"], 4), "r3", "r1"])
    choices = np.array(
        ["sysA", "sysA", "sysB", "sysB", "sysB", "sysB", "sysA", "tie", "sysA"]
        + ["sysA", "sysB", "sysA", "sysB", "sysA", "tie", "tie", "sysB", "sysB"]
        + ["sysA", "tie", "tie", "sysB", "sysB", "tie", "tie", "sysA", "sysA", "sysB"]
    )
    return items, raters, choices


def pooled_agreement_without_ties(items, choices, draw, eligible):
    """Agreeing ordered rater pairs over all ordered pairs of the drawn items' non-tie choices."""
    agree = pairs = 0
    for item in eligible[draw]:
        picked = [c for c in choices[items == item] if c != "tie"]
        for x, y in itertools.permutations(picked, 2):
            pairs += 1
            agree += x == y
    return agree / pairs


def test_bootstrap_many_resamples_each_statistic_over_its_own_items():
    """Preference agreement without ties pairs items 0-5, alpha items 0-9: one call draws each
    statistic's own items from the seed, as `bootstrap` of that statistic alone would."""
    items, raters, choices = three_raters_with_ties()
    statistics = [("preference_agreement", {"ties": "exclude"}), ("krippendorff_alpha", {})]
    preference, alpha = agreement.bootstrap_many(
        statistics, items, raters, choices, n_boot=12, seed=4
    )
    assert (preference.n_items, alpha.n_items) == (6, 10)
    codes = {"sysA": 0, "sysB": 1, "tie": 2}
    matrix = np.full((3, 12), np.nan)
    matrix[[int(r[1]) - 1 for r in raters], items] = [codes[c] for c in choices]
    preference_draws, alpha_draws = np.random.default_rng(4), np.random.default_rng(4)
    for r in range(12):
        draw = preference_draws.integers(0, 6, size=6)
        theirs = pooled_agreement_without_ties(items, choices, draw, np.arange(6))
        assert preference.replicates[r] == pytest.approx(theirs, abs=1e-12)
        draw = alpha_draws.integers(0, 10, size=10)
        theirs = krippendorff.alpha(matrix[:, draw], level_of_measurement="nominal")
        assert alpha.replicates[r] == pytest.approx(theirs, abs=1e-12)
    for (name, kwargs), got in zip(statistics, (preference, alpha), strict=True):
        alone = agreement.bootstrap(name, items, raters, choices, n_boot=12, seed=4, **kwargs)
        np.testing.assert_array_equal(got.replicates, alone.replicates)
