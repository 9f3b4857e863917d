"""Tests for analysis.severity: additive rater offsets on incomplete designs.

References: Montgomery's catalyst BIBD (Example 4.5) and statsmodels OLS with sum contrasts.
"""

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

from analysis import severity

# Montgomery, Design and Analysis of Experiments, Example 4.5 (catalyst experiment):
# 4 catalysts (raters) x 4 batches (items), a BIBD with k = 3, lambda = 2.
CATALYST = {
    1: {1: 73, 2: 74, 4: 71},
    2: {2: 75, 3: 67, 4: 72},
    3: {1: 73, 2: 75, 3: 68},
    4: {1: 75, 3: 72, 4: 75},
}


def catalyst_long():
    rows = [(batch, cat, y) for cat, d in CATALYST.items() for batch, y in d.items()]
    items, raters, scores = map(np.array, zip(*rows, strict=True))
    return items, raters, scores


def random_design(seed, n_items=60, n_raters=8, per_item=3, offsets=None, sigma=1.0):
    rng = np.random.default_rng(seed)
    b = rng.normal(0, 1, n_raters) if offsets is None else np.asarray(offsets, dtype=float)
    b = b - b.mean()
    q = rng.normal(0, 2, n_items)
    picks = np.argsort(rng.random((n_items, n_raters)), axis=1)[:, :per_item]
    items = np.repeat(np.arange(n_items), per_item)
    raters = picks.ravel()
    y = 3.0 + q[items] + b[raters] + rng.normal(0, sigma, items.size)
    return items, raters, y, b


def test_textbook_bibd_treatment_effects_are_reproduced():
    r = severity.rater_offsets(*catalyst_long())
    np.testing.assert_allclose(r.offset_values, np.array([-9, -7, -4, 20]) / 8, atol=1e-12)
    assert r.offsets[4] == pytest.approx(2.5)


def test_textbook_bibd_error_mean_square_and_df():
    r = severity.rater_offsets(*catalyst_long())
    assert r.df_resid == 5
    assert r.residual_sd**2 == pytest.approx(0.65)


def test_textbook_bibd_offset_variance_is_k_a_minus_1_sigma2_over_lambda_a_squared():
    r = severity.rater_offsets(*catalyst_long())
    # Var(tau_i) = k (a - 1) sigma^2 / (lambda a^2) = 3 * 3 * 0.65 / (2 * 16)
    np.testing.assert_allclose(r.se**2, 9 * 0.65 / 32)


def test_offsets_ses_and_item_effects_equal_ols_with_sum_contrasts():
    items, raters, y, _ = random_design(3)
    r = severity.rater_offsets(items, raters, y)
    df = pd.DataFrame({"i": items, "j": raters, "y": y})
    fit = smf.ols("y ~ C(j, Sum) + C(i, Sum)", df).fit()
    b = fit.params.filter(like="C(j").to_numpy()
    np.testing.assert_allclose(r.offset_values[:-1], b, atol=1e-9)
    np.testing.assert_allclose(r.se[:-1], fit.bse.filter(like="C(j").to_numpy(), rtol=1e-8)
    np.testing.assert_allclose(r.item_effects[:-1], fit.params.filter(like="C(i").to_numpy())
    assert r.mu == pytest.approx(fit.params["Intercept"])
    assert r.residual_sd == pytest.approx(np.sqrt(fit.mse_resid))
    assert r.df_resid == fit.df_resid


def test_simulated_offsets_are_recovered():
    true = np.linspace(-1, 1, 10)
    items, raters, y, b = random_design(1, n_items=4000, n_raters=10, offsets=true, sigma=0.5)
    r = severity.rater_offsets(items, raters, y)
    assert np.all(np.abs(r.offset_values - b) < 4 * r.se)
    assert np.max(np.abs(r.offset_values - b)) < 0.05


def test_confidence_intervals_cover_at_the_nominal_rate():
    hits = []
    for seed in range(150):
        items, raters, y, b = random_design(seed, n_items=40, n_raters=10)
        r = severity.rater_offsets(items, raters, y)
        hits.append((r.ci_low <= b) & (b <= r.ci_high))
    coverage = np.mean(hits)  # 1500 intervals: binomial SD about 0.006
    assert 0.93 <= coverage <= 0.97


def test_a_disconnected_design_is_reported_not_estimated():
    items = np.array([1, 1, 2, 2, 3, 3, 4, 4])
    raters = np.array(["a", "b", "a", "b", "c", "d", "c", "d"])
    r = severity.rater_offsets(items, raters, np.arange(8.0))
    assert not r.identifiable
    assert np.isnan(r.offset_values).all()
    assert "connected components" in r.reason
    parts = sorted((p[0].tolist(), p[1].tolist()) for p in r.components)
    assert parts == [(["a", "b"], [1, 2]), (["c", "d"], [3, 4])]


def test_a_connected_design_lists_one_component():
    r = severity.rater_offsets(*catalyst_long())
    assert r.identifiable and len(r.components) == 1


def test_non_finite_scores_are_dropped_and_counted():
    items, raters, y = catalyst_long()
    y = y.astype(float)
    full = severity.rater_offsets(items, raters, y)
    r = severity.rater_offsets(np.append(items, 1), np.append(raters, 2), np.append(y, np.nan))
    assert r.n_dropped == 1
    np.testing.assert_allclose(r.offset_values, full.offset_values)


def test_no_residual_degrees_of_freedom_leaves_ses_undefined_with_a_reason():
    r = severity.rater_offsets([1, 1, 2], ["a", "b", "a"], [1.0, 2.0, 3.0])
    assert r.df_resid == 0
    assert np.isnan(r.se).all() and "degrees of freedom" in r.reason
    assert np.isfinite(r.offset_values).all()


def test_scores_of_the_wrong_length_are_rejected_naming_the_argument():
    with pytest.raises(ValueError, match="scores"):
        severity.rater_offsets([1, 2], ["a", "b"], [1.0])
