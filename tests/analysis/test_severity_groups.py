"""analysis.severity.group_means: raw and adjusted means per system, and their difference."""

import numpy as np
import pytest

from analysis import severity


def design(seed=0, n_items=80, strict=-1.0, confounded=True, truth=0.3):
    """Items of groups 0 and 1; rater 4 is strict and (confounded) rates mostly group 1."""
    rng = np.random.default_rng(seed)
    b = np.array([0, 0, 0, 0, strict], dtype=float)
    group = np.arange(n_items) % 2
    q = rng.normal(0, 0.5, n_items) + truth * (group == 0)
    rows = []
    for i in range(n_items):
        if confounded and group[i] == 1:
            who = [4] + ([int(rng.integers(4))] if rng.random() < 0.5 else [])
        elif confounded:
            who = list(rng.choice(4, 3, replace=False))
            if rng.random() < 0.2:
                who[0] = 4
        else:
            who = list(rng.choice(5, 3, replace=False))
        rows += [(i, j, 3 + q[i] + b[j] + rng.normal(0, 0.3), group[i]) for j in who]
    items, raters, y, g = map(np.array, zip(*rows, strict=True))
    return items, raters, y, g


def test_raw_minus_adjusted_is_the_weighted_mean_offset_of_the_raters_of_the_group():
    items, raters, y, g = design()
    fit = severity.rater_offsets(items, raters, y)
    gm = severity.group_means(fit, items, raters, y, g)
    np.testing.assert_allclose(gm.raw - gm.adjusted, gm.weights @ fit.offset_values, atol=1e-9)
    np.testing.assert_allclose(gm.weights.sum(axis=1), 1.0)


def test_offset_covariance_diagonal_is_the_squared_standard_error():
    items, raters, y, _ = design(seed=1)
    fit = severity.rater_offsets(items, raters, y)
    np.testing.assert_allclose(np.sqrt(np.diag(fit.offset_cov)), fit.se, rtol=1e-9)
    np.testing.assert_allclose(fit.offset_cov.sum(axis=0), 0.0, atol=1e-9)  # sum-zero offsets


def test_complete_design_adjusted_equals_raw():
    rng = np.random.default_rng(2)
    items = np.repeat(np.arange(30), 4)
    raters = np.tile(np.arange(4), 30)
    y = (
        rng.normal(0, 1, 30)[items]
        + np.array([0.5, 0, -0.5, 0.2])[raters]
        + rng.normal(0, 0.2, 120)
    )
    g = items % 3
    fit = severity.rater_offsets(items, raters, y)
    gm = severity.group_means(fit, items, raters, y, g)
    np.testing.assert_allclose(gm.adjusted, gm.raw, atol=1e-9)


def test_adjusted_difference_covers_the_truth_in_most_confounded_replications():
    covered_adj, covered_raw = 0, 0
    for seed in range(40):
        items, raters, y, g = design(seed=seed)
        fit = severity.rater_offsets(items, raters, y)
        d = severity.group_means(fit, items, raters, y, g).difference(0, 1)
        covered_adj += d.adjusted_ci_low < 0.3 < d.adjusted_ci_high
        covered_raw += d.raw_ci_low < 0.3 < d.raw_ci_high
    assert covered_adj >= 34  # nominal 95%: at least 85% of 40
    assert covered_raw <= 4  # the raw interval is centred on the bias


def test_an_item_in_two_groups_is_refused():
    items, raters, y, g = design(seed=3)
    fit = severity.rater_offsets(items, raters, y)
    g = g.copy()
    g[0] = 1 - g[0]
    with pytest.raises(ValueError, match="more than one group"):
        severity.group_means(fit, items, raters, y, g)


def test_a_group_of_one_item_gives_no_interval_and_says_why():
    items = np.array([0, 0, 1, 1, 2, 2])
    raters = np.array([0, 1, 0, 1, 0, 1])
    y = np.array([1.0, 2.0, 2.0, 3.5, 3.0, 3.0])
    g = np.array([0, 0, 0, 0, 1, 1])
    fit = severity.rater_offsets(items, raters, y)
    d = severity.group_means(fit, items, raters, y, g).difference(0, 1)
    assert np.isnan(d.adjusted_ci_low) and "fewer than two items" in d.reason
