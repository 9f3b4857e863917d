"""Agreement statistics at their edges: Cohen's refusals and reasons, bootstrap reasons, the sparse
count table's bootstrap, replicates where the statistic is undefined.

Replicates are checked against the krippendorff package and statsmodels on the items each
replicate draws (the same seeded stream `bootstrap` documents), not against Concord's output.
"""

import math
import warnings

import krippendorff
import numpy as np
import pytest
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from analysis import agreement


def drawn_wide(items, raters, labels, draw, eligible_ids):
    """Raters x drawn-items matrix (NaN where missing) of the items a replicate drew, in order."""
    n_raters = int(raters.max()) + 1
    matrix = np.full((n_raters, len(draw)), np.nan)
    for column, d in enumerate(draw):
        rows = items == eligible_ids[d]
        matrix[raters[rows], column] = labels[rows]
    return matrix


def package_alpha(matrix, level="nominal"):
    """krippendorff.alpha, NaN where it refuses a one-value domain (alpha undefined: 0/0)."""
    try:
        return krippendorff.alpha(reliability_data=matrix, level_of_measurement=level)
    except ValueError:
        return np.nan


def statsmodels_fleiss(matrix, n_cats):
    table = np.stack([(matrix == c).sum(axis=0) for c in range(n_cats)], axis=1)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sm_fleiss_kappa(table)


# -- Cohen's kappa ------------------------------------------------------------------------------


def test_cohen_kappa_names_the_rater_and_the_item_labelled_twice():
    items = ["i0", "i0", "i1", "i2", "i2", "i2"]
    raters = ["a", "b", "a", "a", "b", "b"]
    labels = ["x", "x", "y", "x", "y", "x"]
    # ids are shown as their repr (np.str_('b') under NumPy 2)
    message = r"^raters: rater \S*'b'\S* labelled item \S*'i2'\S* more than once$"
    with pytest.raises(ValueError, match=message):
        agreement.cohen_kappa(items, raters, labels)


def test_cohen_kappa_without_a_shared_item_is_nan_saying_so():
    result = agreement.cohen_kappa([0, 1, 2], ["a", "b", "b"], [1, 2, 1])
    assert math.isnan(result.value) and result.reason == "no item was labelled by both raters"
    assert math.isnan(result.observed_agreement) and math.isnan(result.expected_agreement)
    assert (result.n_items, result.n_dropped_items, result.n_raters) == (0, 3, 2)


def test_cohen_kappa_of_a_single_shared_item_is_defined():
    """One item, two different labels: p_o = 0, p_e = 0 (each rater used one category), kappa 0,
    as scikit-learn's cohen_kappa_score gives for ([1], [2])."""
    from sklearn.metrics import cohen_kappa_score

    result = agreement.cohen_kappa([0, 0, 1], ["a", "b", "a"], [1, 2, 1])
    assert result.reason is None and result.n_items == 1
    assert result.value == pytest.approx(cohen_kappa_score([1], [2]))


def test_cohen_kappa_counts_two_raters():
    result = agreement.cohen_kappa([0, 0, 1, 1], ["a", "b", "a", "b"], [1, 1, 2, 1])
    assert (result.n_raters, result.raters, result.n_labels) == (2, ("a", "b"), 4)


# -- Bootstrap: reasons and undefined replicates --------------------------------------------------


@pytest.mark.parametrize(
    ("statistic", "items", "raters", "labels", "reason"),
    [
        (
            "krippendorff_alpha",
            [0, 0, 1, 1],
            ["r", "r", "r", "r"],
            [1, 2, 1, 1],
            "only one rater: agreement needs at least two",
        ),
        (
            "cohen_kappa",
            [0, 1, 2],
            ["a", "b", "b"],
            [1, 2, 1],
            "no item was labelled by both raters",
        ),
    ],
)
def test_bootstrap_of_an_undefined_statistic_gives_the_statistics_own_reason(
    statistic, items, raters, labels, reason
):
    result = agreement.bootstrap(statistic, items, raters, labels, n_boot=5)
    assert math.isnan(result.value) and result.reason == reason
    assert result.n_valid == 0 and math.isnan(result.ci_low)


def test_bootstrap_alpha_is_nan_in_replicates_that_drew_one_value_only():
    """Items 0-2 agree on 1, item 3 does not: a replicate without item 3 has a single value, where
    alpha is 0/0 (the package refuses it); the others match the package on the drawn items."""
    items = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    raters = np.array([0, 1, 0, 1, 0, 1, 0, 1])
    labels = np.array([1, 1, 1, 1, 1, 1, 1, 2])
    result = agreement.bootstrap("krippendorff_alpha", items, raters, labels, n_boot=30, seed=4)
    draws = np.random.default_rng(4)
    undefined = 0
    for b in range(30):
        draw = draws.integers(0, 4, size=4)
        theirs = package_alpha(drawn_wide(items, raters, labels, draw, np.arange(4)))
        assert result.replicates[b] == pytest.approx(theirs, abs=1e-12, nan_ok=True)
        undefined += int(3 not in draw)
    assert 0 < undefined < 30
    assert result.n_valid == 30 - undefined


# -- The sparse items x categories table ----------------------------------------------------------


def three_raters_five_categories(seed=6, n_items=30):
    rng = np.random.default_rng(seed)
    items = np.repeat(np.arange(n_items), 3)
    raters = np.tile([0, 1, 2], n_items)
    labels = np.where(rng.random(items.size) < 0.6, items % 5, rng.integers(0, 5, items.size))
    return items, raters, labels


def test_bootstrap_on_the_sparse_count_table_matches_the_packages_on_the_drawn_items(monkeypatch):
    """With the CSR table forced (as for many items x categories), the replicates of alpha and
    Fleiss' kappa are the krippendorff package's and statsmodels' values on the drawn items."""
    monkeypatch.setattr(agreement, "_DENSE_MAX_CATEGORIES", 0)
    items, raters, labels = three_raters_five_categories()
    alpha, fleiss = agreement.bootstrap_many(
        [("krippendorff_alpha", {}), ("fleiss_kappa", {})], items, raters, labels, n_boot=8, seed=3
    )
    draws = np.random.default_rng(3)
    for b in range(8):
        matrix = drawn_wide(items, raters, labels, draws.integers(0, 30, size=30), np.arange(30))
        assert alpha.replicates[b] == pytest.approx(package_alpha(matrix), abs=1e-12)
        assert fleiss.replicates[b] == pytest.approx(statsmodels_fleiss(matrix, 5), abs=1e-12)


# -- Krippendorff's alpha: which values each level accepts ----------------------------------------


def test_interval_alpha_takes_negative_values_and_ratio_alpha_takes_zero_like_the_package():
    items = np.array([0, 0, 1, 1, 2, 2, 3, 3, 3])
    raters = np.array([0, 1, 0, 1, 0, 1, 0, 1, 2])
    for level, shift in (("interval", -3), ("ratio", 0)):
        labels = np.array([0, 1, 2, 2, 4, 3, 1, 1, 0]) + shift
        ours = agreement.krippendorff_alpha(items, raters, labels, level=level)
        matrix = np.full((3, 4), np.nan)
        matrix[raters, items] = labels
        assert ours.value == pytest.approx(package_alpha(matrix, level), abs=1e-12)


@pytest.mark.parametrize("level", agreement.LEVELS)
def test_alpha_of_no_labels_says_so_at_every_level(level):
    result = agreement.krippendorff_alpha([], [], [], level=level)
    assert math.isnan(result.value) and result.reason == "no labels"
    assert (result.n_items, result.n_pairable_values, result.level) == (0, 0, level)


@pytest.mark.parametrize("level", agreement.LEVELS)
def test_alpha_summed_in_small_blocks_matches_the_package(level, monkeypatch):
    """Large scales and many units are summed in blocks (category rows for D_e, units for the
    coincidences); blocks of 3 categories and 7 units that divide neither count change nothing."""
    rng = np.random.default_rng(8)
    n_items, n_cats = 40, 11
    items = np.repeat(np.arange(n_items), 3)
    raters = np.tile([0, 1, 2], n_items)
    labels = np.clip(items % n_cats + rng.integers(-1, 2, items.size), 0, n_cats - 1) + 1
    monkeypatch.setattr(agreement, "_BLOCK_CELLS", 3 * n_cats)
    monkeypatch.setattr(agreement, "_COINCIDENCE_BLOCK", 7 * n_cats)
    ours = agreement.krippendorff_alpha(items, raters, labels, level=level)
    matrix = np.full((3, n_items), np.nan)
    matrix[raters, items] = labels
    assert ours.value == pytest.approx(package_alpha(matrix, level), abs=1e-12)


# -- Label distribution ---------------------------------------------------------------------------


def test_label_distribution_on_a_declared_scale_matches_pandas_crosstab():
    """Four raters, a declared scale with an unused category last (and one in the middle), the last
    rater never using the last category it used: counts and shares as pandas tabulates them."""
    import pandas as pd

    items = [0, 0, 0, 0, 1, 1, 1, 2, 2, 3]
    raters = ["r1", "r2", "r3", "r4", "r1", "r2", "r4", "r1", "r3", "r4"]
    labels = ["lo", "lo", "hi", "lo", "hi", "hi", "lo", "lo", "lo", "lo"]
    scale = ["lo", "mid", "hi", "max"]
    result = agreement.label_distribution(items, raters, labels, categories=scale)
    frame = pd.DataFrame({"rater": raters, "label": pd.Categorical(labels, categories=scale)})
    table = pd.crosstab(frame["rater"], frame["label"], dropna=False)
    assert result.categories == tuple(scale) and result.raters == ("r1", "r2", "r3", "r4")
    np.testing.assert_array_equal(result.rater_counts, table.to_numpy())
    np.testing.assert_allclose(result.rater_shares, table.div(table.sum(axis=1), axis=0))
    np.testing.assert_array_equal(result.counts, table.sum(axis=0).to_numpy())
    np.testing.assert_allclose(result.shares, table.sum(axis=0) / len(labels))
    assert result.value == pytest.approx(7 / 10) and result.reason is None
    assert (result.n_items, result.n_dropped_items, result.n_labels, result.n_raters) == (
        4,
        0,
        10,
        4,
    )
