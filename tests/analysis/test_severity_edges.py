"""analysis.severity at its edges: every field of the fit, the group means and their differences.

References: statsmodels OLS with sum contrasts (offsets, item effects, the full covariance of the
offsets), scipy's one-sample and Welch t-tests on the item means, pandas for counts and weights.
No database.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from scipy import stats

from analysis import severity


def unbalanced(seed=0, n_items=30, n_raters=5, confidence=None):
    """Items rated by 2-4 raters each (one rater twice on a few items), in three groups."""
    rng = np.random.default_rng(seed)
    b = np.array([0.8, -0.6, 0.1, -0.9, 0.6])[:n_raters]
    rows = []
    for i in range(n_items):
        who = rng.choice(n_raters, int(rng.integers(2, 5)), replace=False).tolist()
        if i % 7 == 0:
            who.append(who[0])  # a repeated rating
        q = rng.normal(0, 1)
        rows += [(i, j, 3 + q + b[j] + rng.normal(0, 0.4)) for j in who]
    items, raters, y = map(np.array, zip(*rows, strict=True))
    groups = items % 3
    return items, raters, y, groups


def ols(items, raters, y, alpha=0.05):
    """Full offsets, item effects, mu, Cov(offsets) and CIs from statsmodels (sum contrasts)."""
    frame = pd.DataFrame({"i": items, "j": raters, "y": y})
    fit = smf.ols("y ~ C(j, Sum) + C(i, Sum)", frame).fit()
    n_r, n_i = np.unique(raters).size, np.unique(items).size
    bj = fit.params.filter(like="C(j").to_numpy()
    qi = fit.params.filter(like="C(i").to_numpy()
    names = [n for n in fit.params.index if n.startswith("C(j")]
    # b = T beta with T = [I; -1'] (the last level is minus the sum of the others)
    t = np.vstack([np.eye(n_r - 1), -np.ones(n_r - 1)])
    cov = t @ fit.cov_params().loc[names, names].to_numpy() @ t.T
    ci = fit.conf_int(alpha=alpha).loc[names].to_numpy()
    return {
        "b": np.append(bj, -bj.sum()),
        "q": np.append(qi, -qi.sum()),
        "mu": fit.params["Intercept"],
        "cov": cov,
        "ci": ci,
        "sd": np.sqrt(fit.mse_resid),
        "df": fit.df_resid,
        "n_items": n_i,
    }


# --------------------------------------------------------------------------- rater_offsets


def test_every_field_of_the_fit_equals_ols_with_sum_contrasts_on_a_ragged_design():
    items, raters, y, _ = unbalanced()
    r = severity.rater_offsets(items, raters, y)
    ref = ols(items, raters, y)
    np.testing.assert_allclose(r.offset_values, ref["b"], atol=1e-9)
    np.testing.assert_allclose(r.item_effects, ref["q"], atol=1e-9)
    np.testing.assert_allclose(r.offset_cov, ref["cov"], atol=1e-12)
    np.testing.assert_allclose(r.se, np.sqrt(np.diag(ref["cov"])), rtol=1e-9)
    np.testing.assert_allclose(np.c_[r.ci_low, r.ci_high][:-1], ref["ci"], rtol=1e-9)
    assert r.mu == pytest.approx(ref["mu"])
    assert r.residual_sd == pytest.approx(ref["sd"])
    assert r.df_resid == ref["df"] and isinstance(r.df_resid, int)
    assert r.raters.tolist() == [0, 1, 2, 3, 4] and r.items.tolist() == list(range(30))
    assert r.n_per_rater.tolist() == np.bincount(raters).tolist()
    assert r.n == y.size and r.n_dropped == 0
    assert r.identifiable and r.reason == ""
    assert [(c[0].tolist(), c[1].tolist()) for c in r.components] == [
        (r.raters.tolist(), r.items.tolist())
    ]


def test_the_dict_views_are_keyed_by_rater():
    items, raters, y, _ = unbalanced(seed=1)
    r = severity.rater_offsets(items, raters, y)
    assert r.offsets == dict(enumerate(r.offset_values.tolist()))
    assert r.standard_errors == dict(enumerate(r.se.tolist()))
    assert r.intervals == {j: (r.ci_low[j], r.ci_high[j]) for j in range(5)}


def test_the_confidence_level_sets_the_t_quantile_of_the_intervals():
    items, raters, y, _ = unbalanced(seed=2)
    r = severity.rater_offsets(items, raters, y, confidence=0.80)
    ref = ols(items, raters, y, alpha=0.20)
    np.testing.assert_allclose(np.c_[r.ci_low, r.ci_high][:-1], ref["ci"], rtol=1e-9)


@pytest.mark.parametrize("confidence", [0, 1, 1.5, -0.1])
def test_a_confidence_outside_zero_one_is_refused(confidence):
    with pytest.raises(ValueError, match=r"^confidence: expected a number in \(0, 1\)"):
        severity.rater_offsets([1, 1, 2, 2], ["a", "b", "a", "b"], [1.0, 2.0, 2.0, 4.0], confidence)


def test_scores_that_are_not_numbers_are_refused_naming_the_dtype():
    with pytest.raises(ValueError, match=r"^scores: expected numbers, got dtype <U"):
        severity.rater_offsets([1, 2], ["a", "b"], ["x", "y"])


def test_integer_and_boolean_scores_are_numbers():
    r = severity.rater_offsets([1, 1, 2, 2, 3, 3], [0, 1, 0, 1, 0, 1], [1, 3, 2, 3, 1, 2])
    assert r.offsets == pytest.approx({0: -0.5 - 1 / 6, 1: 0.5 + 1 / 6})
    flags = severity.rater_offsets([1, 1, 2, 2], [0, 1, 0, 1], [True, False, True, True])
    assert flags.offsets == pytest.approx({0: 0.25, 1: -0.25})


def test_no_finite_score_at_all_is_refused():
    with pytest.raises(ValueError, match=r"^scores: no finite scores$"):
        severity.rater_offsets([1, 2], ["a", "b"], [np.nan, np.inf])


def test_infinite_scores_are_dropped_and_counted_like_nan():
    items, raters, y, _ = unbalanced(seed=3)
    full = severity.rater_offsets(items, raters, y)
    r = severity.rater_offsets(np.r_[items, 0, 1], np.r_[raters, 0, 1], np.r_[y, np.inf, -np.inf])
    assert r.n_dropped == 2 and r.n == full.n
    np.testing.assert_allclose(r.offset_values, full.offset_values)
    np.testing.assert_allclose(r.n_per_rater, full.n_per_rater)


def test_a_disconnected_design_reports_counts_and_nan_everywhere_else():
    # three parts: raters a,b on items 1-2; c,d on 3-4; e alone on 5 (item 6 is rated by f only)
    items = np.array([1, 1, 2, 2, 3, 3, 4, 4, 4, 5, 6, 2])
    raters = np.array(["a", "b", "a", "b", "c", "d", "c", "d", "d", "e", "f", "a"])
    y = np.arange(12.0)
    y[3] = np.nan
    r = severity.rater_offsets(items, raters, y)
    assert not r.identifiable
    assert r.reason.startswith("the rater-item graph has 4 connected components;")
    assert "fit each component separately" in r.reason
    assert r.n == 11 and r.n_dropped == 1
    assert r.df_resid == 11 - 6 - 6 + 4
    assert r.n_per_rater.tolist() == [3, 1, 2, 3, 1, 1]
    assert r.raters.tolist() == list("abcdef") and r.items.tolist() == [1, 2, 3, 4, 5, 6]
    for values in (r.offset_values, r.se, r.ci_low, r.ci_high, r.item_effects):
        assert np.isnan(values).all()
    assert r.offset_values.shape == (6,) and r.item_effects.shape == (6,)
    assert np.isnan(r.mu) and np.isnan(r.residual_sd) and r.offset_cov is None
    parts = [(p[0].tolist(), p[1].tolist()) for p in r.components]
    assert parts == [(["a", "b"], [1, 2]), (["c", "d"], [3, 4]), (["e"], [5]), (["f"], [6])]


def test_no_residual_df_reports_the_offsets_without_errors_or_covariance():
    r = severity.rater_offsets([1, 1, 2], ["a", "b", "a"], [1.0, 2.0, 3.0])
    assert r.offsets == pytest.approx({"a": -0.5, "b": 0.5})
    assert r.reason == "no residual degrees of freedom (df=0); SEs and CIs undefined"
    assert np.isnan(r.residual_sd) and r.offset_cov is None
    assert np.isnan(r.ci_low).all() and np.isnan(r.ci_high).all()


def test_one_rater_has_offset_zero_and_says_why():
    r = severity.rater_offsets([1, 2, 3, 3], ["a", "a", "a", "a"], [1.0, 2.0, 4.0, 6.0])
    assert r.offset_values.tolist() == [0.0]
    assert r.reason == "one rater: the offset is 0 by the sum-to-zero constraint"
    assert r.se.tolist() == [0.0]
    # item means 1, 2, 5: mu is their mean, q_i the deviations (sum_i q_i = 0)
    assert r.item_effects == pytest.approx([-5 / 3, -2 / 3, 7 / 3])
    assert r.mu == pytest.approx(8 / 3)


@pytest.mark.parametrize("name", ["items", "raters", "scores"])
def test_the_fit_names_the_argument_that_is_not_one_dimensional(name):
    items, raters, y, _ = unbalanced(seed=14)
    columns = {"items": items, "raters": raters, "scores": y}
    columns[name] = np.c_[columns[name], columns[name]]
    with pytest.raises(ValueError, match=rf"^{name}: expected a one-dimensional sequence"):
        severity.rater_offsets(**columns)


@pytest.mark.parametrize("name", ["items", "raters", "scores"])
def test_the_fit_names_the_column_of_another_length(name):
    items, raters, y, _ = unbalanced(seed=15)
    columns = {"items": items, "raters": raters, "scores": y}
    columns[name] = columns[name][:-1]
    other = "raters" if name == "items" else name  # the first column sets the length
    with pytest.raises(ValueError, match=rf"^{other}: length \d+ differs from items length"):
        severity.rater_offsets(**columns)


def test_the_counts_per_rater_are_integers_whether_or_not_the_design_is_connected():
    items, raters, y, _ = unbalanced(seed=16)
    connected = severity.rater_offsets(items, raters, y)
    apart = severity.rater_offsets(np.r_[items, 99], np.r_[raters, 9], np.r_[y, 1.0])
    assert not apart.identifiable
    for r in (connected, apart):
        assert r.n_per_rater.dtype == np.int64


def test_a_disconnected_design_says_why_word_for_word():
    r = severity.rater_offsets([1, 1, 2, 2], ["a", "b", "c", "d"], [1.0, 2.0, 3.0, 5.0])
    assert r.reason == (
        "the rater-item graph has 2 connected components; offsets are not comparable across "
        "components (fit each component separately)"
    )


def test_the_identifiable_flag_is_true_or_false_never_none():
    # a bool either way: None would read as false but print as null in a report
    items, raters, y, _ = unbalanced(seed=18)
    connected = severity.rater_offsets(items, raters, y)
    apart = severity.rater_offsets(np.r_[items, 99], np.r_[raters, 9], np.r_[y, 1.0])
    assert connected.identifiable is True and apart.identifiable is False


def test_each_component_lists_its_raters_and_items_in_sorted_order():
    # two interleaved components of 20 raters and 20 items each (each a cycle: item t is rated
    # by the t-th and (t+1)-th rater of its part), rows shuffled: more rows than a sort keeps
    # in order without being asked for a stable one
    rows = []
    for part in (0, 1):
        part_raters = list(range(part, 40, 2))
        for t in range(20):
            rows += [(2 * t + part, part_raters[t]), (2 * t + part, part_raters[(t + 1) % 20])]
    rows = [rows[k] for k in np.random.default_rng(17).permutation(len(rows))]
    items, raters = map(np.array, zip(*rows, strict=True))
    r = severity.rater_offsets(items, raters, np.arange(items.size, dtype=float))
    parts = [(p[0].tolist(), p[1].tolist()) for p in r.components]
    assert parts == [
        (list(range(0, 40, 2)), list(range(0, 40, 2))),
        (list(range(1, 40, 2)), list(range(1, 40, 2))),
    ]


def test_one_residual_degree_of_freedom_is_enough_for_errors_and_intervals():
    items, raters, y = [1, 1, 2, 2], ["a", "b", "a", "b"], [1.0, 2.5, 2.0, 4.5]
    r = severity.rater_offsets(items, raters, y)
    ref = ols(items, raters, y)
    assert r.df_resid == 1 == ref["df"] and r.reason == ""
    np.testing.assert_allclose(r.se, np.sqrt(np.diag(ref["cov"])), rtol=1e-9)
    np.testing.assert_allclose(np.c_[r.ci_low, r.ci_high][:-1], ref["ci"], rtol=1e-9)


def test_a_single_score_is_fitted_with_an_offset_of_zero_and_no_errors():
    r = severity.rater_offsets([1], ["a"], [4.0])
    assert r.offsets == {"a": 0.0} and r.mu == 4.0 and r.n == 1
    assert r.reason == "no residual degrees of freedom (df=0); SEs and CIs undefined"


# --------------------------------------------------------------------------- group_means


def group_reference(items, raters, y, groups, alpha=0.05):
    """Per group from pandas/scipy/statsmodels: raw and adjusted means, SEs, CIs and weights."""
    ref = ols(items, raters, y)
    frame = pd.DataFrame({"i": items, "j": raters, "y": y, "g": groups})
    item_mean = frame.groupby("i")["y"].mean()
    adjusted_item = pd.Series(ref["mu"] + ref["q"], index=np.unique(items))
    group_of = frame.groupby("i")["g"].first()
    n_ij = frame.groupby(["i", "j"]).size().unstack(fill_value=0)
    share = n_ij.div(n_ij.sum(axis=1), axis=0)  # n_ij / n_i
    out = {}
    for g in np.unique(groups):
        members = group_of.index[group_of == g]
        raw_vals, adj_vals = item_mean[members].to_numpy(), adjusted_item[members].to_numpy()
        w = share.loc[members].mean(axis=0).reindex(np.unique(raters), fill_value=0).to_numpy()
        m = members.size
        adj_se = np.sqrt(adj_vals.var(ddof=1) / m + w @ ref["cov"] @ w)
        t = stats.t.ppf(1 - alpha / 2, m - 1)
        raw_test = stats.ttest_1samp(raw_vals, 0.0)
        out[g] = {
            "raw_vals": raw_vals,
            "adj_vals": adj_vals,
            "raw": raw_vals.mean(),
            "raw_ci": raw_test.confidence_interval(1 - alpha),
            "raw_se": raw_vals.std(ddof=1) / np.sqrt(m),
            "adjusted": adj_vals.mean(),
            "adj_se": adj_se,
            "adj_ci": (adj_vals.mean() - t * adj_se, adj_vals.mean() + t * adj_se),
            "weights": w,
            "m": m,
            "n_labels": int(np.count_nonzero(groups == g)),
        }
    return out, ref


def test_group_means_equal_pandas_scipy_and_statsmodels_field_by_field():
    items, raters, y, groups = unbalanced(seed=4)
    fit = severity.rater_offsets(items, raters, y)
    gm = severity.group_means(fit, items, raters, y, groups)
    ref, _ = group_reference(items, raters, y, groups)
    assert gm.groups.tolist() == [0, 1, 2] and gm.confidence == 0.95 and gm.reason == ""
    for k, g in enumerate(gm.groups.tolist()):
        e = ref[g]
        assert gm.n_items[k] == e["m"] and gm.n_labels[k] == e["n_labels"]
        assert gm.raw[k] == pytest.approx(e["raw"], rel=1e-12)
        assert gm.raw_se[k] == pytest.approx(e["raw_se"], rel=1e-12)
        assert (gm.raw_ci_low[k], gm.raw_ci_high[k]) == pytest.approx(tuple(e["raw_ci"]))
        assert gm.item_var_raw[k] == pytest.approx(e["raw_vals"].var(ddof=1))
        assert gm.adjusted[k] == pytest.approx(e["adjusted"], rel=1e-10)
        assert gm.item_var_adjusted[k] == pytest.approx(e["adj_vals"].var(ddof=1))
        assert gm.adjusted_se[k] == pytest.approx(e["adj_se"], rel=1e-9)
        assert (gm.adjusted_ci_low[k], gm.adjusted_ci_high[k]) == pytest.approx(e["adj_ci"])
        np.testing.assert_allclose(gm.weights[k], e["weights"], atol=1e-12)
    np.testing.assert_allclose(gm.offset_cov, fit.offset_cov)
    assert gm.n_items.dtype == np.int64 and gm.n_labels.dtype == np.int64


def test_group_means_drop_the_rows_the_fit_dropped():
    items, raters, y, groups = unbalanced(seed=5)
    y_nan = np.r_[y, np.nan, np.inf]
    items2, raters2, groups2 = np.r_[items, 0, 1], np.r_[raters, 1, 2], np.r_[groups, 1, 2]
    fit = severity.rater_offsets(items2, raters2, y_nan)
    gm = severity.group_means(fit, items2, raters2, y_nan, groups2)
    plain = severity.group_means(fit, items, raters, y, groups)
    np.testing.assert_allclose(gm.adjusted_se, plain.adjusted_se)
    assert gm.n_labels.tolist() == plain.n_labels.tolist()


def test_group_means_refuse_rows_that_are_not_the_fits():
    items, raters, y, groups = unbalanced(seed=6)
    fit = severity.rater_offsets(items, raters, y)
    with pytest.raises(ValueError, match=rf"^scores: {y.size - 1} finite rows, but the fit used"):
        severity.group_means(fit, items[1:], raters[1:], y[1:], groups[1:])
    with pytest.raises(ValueError, match="^groups: length"):
        severity.group_means(fit, items, raters, y, groups[1:])


def test_an_item_in_two_groups_is_named():
    items, raters, y, groups = unbalanced(seed=7)
    fit = severity.rater_offsets(items, raters, y)
    groups = groups.copy()
    last = np.flatnonzero(items == 29)[-1]
    groups[last] = (groups[last] + 1) % 3
    # the message shows the item as numpy's repr, np.int64(29)
    with pytest.raises(
        ValueError, match=r"^groups: item \S*\b29\b\S* belongs to more than one group$"
    ):
        severity.group_means(fit, items, raters, y, groups)


def test_a_group_of_one_item_has_a_mean_but_no_spread():
    items = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    raters = np.array([0, 1, 0, 1, 0, 1, 1, 0])
    y = np.array([1.0, 2.0, 2.0, 3.5, 3.0, 3.0, 5.0, 4.5])
    groups = np.array(["x", "x", "x", "x", "x", "x", "y", "y"])
    fit = severity.rater_offsets(items, raters, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a group of one item is a stated NaN, not a warning
        gm = severity.group_means(fit, items, raters, y, groups)
    assert gm.n_items.tolist() == [3, 1]
    assert gm.raw[1] == pytest.approx(4.75)
    for values in (gm.raw_se, gm.raw_ci_low, gm.item_var_raw, gm.adjusted_ci_high):
        assert np.isfinite(values[0]) and np.isnan(values[1])


def test_without_residual_df_the_adjusted_intervals_say_they_omit_the_offsets_error():
    items, raters, y = [1, 1, 2, 3], ["a", "b", "a", "b"], [1.0, 2.0, 3.0, 5.0]
    fit = severity.rater_offsets(items, raters, y)
    assert fit.offset_cov is None and fit.identifiable
    gm = severity.group_means(fit, items, raters, y, [0, 0, 0, 0])
    assert gm.reason == (
        "offsets have no residual degrees of freedom: adjusted intervals omit their error"
    )
    np.testing.assert_allclose(gm.adjusted_se, np.sqrt(gm.item_var_adjusted / 3))


def test_without_residual_df_a_difference_uses_the_item_spread_alone():
    # df = 5 rows - 4 items - 2 raters + 1 = 0: no Cov(offsets), so no offsets' error to add
    items, raters = [1, 1, 2, 3, 4], ["a", "b", "a", "b", "a"]
    y = [1.0, 2.0, 3.0, 5.0, 4.0]
    fit = severity.rater_offsets(items, raters, y)
    assert fit.offset_cov is None
    gm = severity.group_means(fit, items, raters, y, [0, 0, 0, 1, 1])
    d = gm.difference(0, 1)
    sa, sb = gm.item_var_adjusted / 2
    assert d.df_adjusted == pytest.approx((sa + sb) ** 2 / (sa**2 + sb**2))
    half = stats.t.ppf(0.975, d.df_adjusted) * np.sqrt(sa + sb)
    assert (d.adjusted_ci_low, d.adjusted_ci_high) == pytest.approx(
        (d.adjusted - half, d.adjusted + half)
    )


def test_a_disconnected_fit_gives_raw_means_and_its_reason():
    items = np.array([1, 1, 2, 2, 3, 3, 4, 4])
    raters = np.array(["a", "b", "a", "b", "c", "d", "c", "d"])
    y = np.array([1.0, 2.0, 2.0, 2.5, 5.0, 6.0, 4.0, 4.5])
    fit = severity.rater_offsets(items, raters, y)
    gm = severity.group_means(fit, items, raters, y, [0, 0, 0, 0, 1, 1, 1, 1])
    assert gm.reason == fit.reason and "connected components" in gm.reason
    assert gm.raw.tolist() == pytest.approx([1.875, 4.875])
    assert np.isnan(gm.adjusted).all() and gm.offset_cov is None


# --------------------------------------------------------------------------- difference


def test_the_raw_difference_is_welchs_t_interval_on_the_item_means():
    items, raters, y, groups = unbalanced(seed=8, n_items=45)
    fit = severity.rater_offsets(items, raters, y)
    gm = severity.group_means(fit, items, raters, y, groups)
    ref, _ = group_reference(items, raters, y, groups)
    for a, b in ((0, 1), (2, 0), (1, 2)):
        d = gm.difference(a, b)
        welch = stats.ttest_ind(ref[a]["raw_vals"], ref[b]["raw_vals"], equal_var=False)
        ci = welch.confidence_interval(0.95)
        assert (d.a, d.b, d.reason) == (a, b, "")
        assert d.raw == pytest.approx(ref[a]["raw"] - ref[b]["raw"], rel=1e-12)
        assert d.df_raw == pytest.approx(welch.df, rel=1e-12)
        assert (d.raw_ci_low, d.raw_ci_high) == pytest.approx((ci.low, ci.high), rel=1e-12)


def test_the_adjusted_difference_adds_the_offsets_error_to_welchs_variance():
    items, raters, y, groups = unbalanced(seed=9, n_items=45)
    fit = severity.rater_offsets(items, raters, y)
    gm = severity.group_means(fit, items, raters, y, groups)
    ref, ols_ref = group_reference(items, raters, y, groups)
    ea, eb = ref[1], ref[2]
    sa = ea["adj_vals"].var(ddof=1) / ea["m"]
    sb = eb["adj_vals"].var(ddof=1) / eb["m"]
    w = ea["weights"] - eb["weights"]
    se2 = sa + sb + w @ ols_ref["cov"] @ w  # Welch-Satterthwaite df from the item parts
    df = se2**2 / (sa**2 / (ea["m"] - 1) + sb**2 / (eb["m"] - 1))
    half = stats.t.ppf(0.975, df) * np.sqrt(se2)
    d = gm.difference(1, 2)
    assert d.adjusted == pytest.approx(ea["adjusted"] - eb["adjusted"], rel=1e-10)
    assert d.df_adjusted == pytest.approx(df, rel=1e-9)
    assert d.adjusted_ci_low == pytest.approx(d.adjusted - half, rel=1e-9)
    assert d.adjusted_ci_high == pytest.approx(d.adjusted + half, rel=1e-9)
    assert isinstance(d.df_raw, float) and isinstance(d.raw_ci_low, float)


def test_a_difference_with_exactly_two_items_a_side_has_an_interval():
    items = np.repeat(np.arange(6), 2)
    raters = np.tile([0, 1], 6)
    y = np.array([1.0, 1.5, 2.0, 2.2, 3.0, 3.9, 1.0, 2.0, 4.0, 4.1, 2.5, 3.0])
    groups = np.repeat(["a", "a", "b", "b", "c", "c"], 2)
    fit = severity.rater_offsets(items, raters, y)
    gm = severity.group_means(fit, items, raters, y, groups)
    for a, b in (("a", "b"), ("b", "c"), ("c", "a")):
        d = gm.difference(a, b)
        assert d.reason == "" and np.isfinite(d.raw_ci_low) and np.isfinite(d.adjusted_ci_high)
    item_means = y.reshape(6, 2).mean(axis=1)
    for k in range(3):  # two items a group: the t interval on 1 df
        ci = stats.ttest_1samp(item_means[2 * k : 2 * k + 2], 0.0).confidence_interval(0.95)
        assert (gm.raw_ci_low[k], gm.raw_ci_high[k]) == pytest.approx((ci.low, ci.high))


def test_a_difference_with_a_one_item_group_keeps_both_estimates_and_says_why():
    items = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    raters = np.array([0, 1, 0, 1, 0, 1, 1, 0])
    y = np.array([1.0, 2.0, 2.0, 3.5, 3.0, 3.0, 5.0, 4.5])
    groups = np.array(["x", "x", "x", "x", "x", "x", "y", "y"])
    fit = severity.rater_offsets(items, raters, y)
    gm = severity.group_means(fit, items, raters, y, groups)
    for a, b in (("x", "y"), ("y", "x")):
        d = gm.difference(a, b)
        ia, ib = gm.groups.tolist().index(a), gm.groups.tolist().index(b)
        assert (d.a, d.b) == (a, b)
        assert d.raw == pytest.approx(gm.raw[ia] - gm.raw[ib])
        assert d.adjusted == pytest.approx(gm.adjusted[ia] - gm.adjusted[ib])
        assert isinstance(d.raw, float) and isinstance(d.adjusted, float)
        assert d.reason == "fewer than two items in a group: no interval"
        undefined = (d.raw_ci_low, d.raw_ci_high, d.adjusted_ci_low, d.adjusted_ci_high)
        assert np.isnan(undefined + (d.df_raw, d.df_adjusted)).all()


def test_groups_without_spread_get_a_zero_width_raw_interval():
    items = np.repeat(np.arange(4), 2)
    raters = np.tile([0, 1], 4)
    y = np.array([1.0, 3.0, 2.0, 2.0, 4.0, 4.0, 3.0, 5.0])  # item means 2, 2 | 4, 4
    fit = severity.rater_offsets(items, raters, y)
    gm = severity.group_means(fit, items, raters, y, [0, 0, 0, 0, 1, 1, 1, 1])
    d = gm.difference(1, 0)
    assert d.raw == 2.0 and d.raw_ci_low == 2.0 and d.raw_ci_high == 2.0
    assert d.df_raw == 2.0  # no variance: the pooled df, na + nb - 2


@pytest.mark.parametrize(("a", "b"), [("x", "nope"), ("nope", "x"), ("nope", "none")])
def test_an_unknown_group_is_refused_naming_both(a, b):
    items, raters, y = [0, 0, 1, 1], [0, 1, 0, 1], [1.0, 2.0, 2.0, 2.5]
    fit = severity.rater_offsets(items, raters, y)
    gm = severity.group_means(fit, items, raters, y, ["x", "x", "y", "y"])
    with pytest.raises(ValueError, match=rf"^groups: '{a}' or '{b}' not among \['x', 'y'\]$"):
        gm.difference(a, b)


@pytest.mark.parametrize("name", ["items", "raters", "scores", "groups"])
def test_group_means_name_the_argument_that_is_not_one_dimensional(name):
    items, raters, y, groups = unbalanced(seed=10)
    fit = severity.rater_offsets(items, raters, y)
    columns = {"items": items, "raters": raters, "scores": y, "groups": groups}
    columns[name] = np.c_[columns[name], columns[name]]
    with pytest.raises(ValueError, match=rf"^{name}: expected a one-dimensional sequence"):
        severity.group_means(fit, **columns)


@pytest.mark.parametrize("name", ["items", "raters", "scores", "groups"])
def test_group_means_name_the_column_of_another_length(name):
    items, raters, y, groups = unbalanced(seed=11)
    fit = severity.rater_offsets(items, raters, y)
    columns = {"items": items, "raters": raters, "scores": y, "groups": groups}
    columns[name] = columns[name][:-1]
    other = "raters" if name == "items" else name
    with pytest.raises(ValueError, match=rf"^{other}: length"):
        severity.group_means(fit, **columns)


def test_groups_that_cannot_be_sorted_are_refused():
    items, raters, y, groups = unbalanced(seed=12)
    fit = severity.rater_offsets(items, raters, y)
    mixed = np.where(groups == 0, "zero", groups.astype(object))
    with pytest.raises(ValueError, match="^groups: values must be mutually comparable"):
        severity.group_means(fit, items, raters, y, mixed)


@pytest.mark.parametrize("name", ["items", "raters"])
def test_items_or_raters_that_cannot_be_sorted_are_refused(name):
    items, raters, y, _ = unbalanced(seed=13)
    columns = {"items": items.astype(object), "raters": raters.astype(object)}
    columns[name][0] = "first"
    with pytest.raises(ValueError, match=rf"^{name}: values must be mutually comparable"):
        severity.rater_offsets(columns["items"], columns["raters"], y)


def test_one_rater_group_means_carry_no_reason_of_their_own():
    items, raters, y = [1, 2, 3, 3, 4], ["a"] * 5, [1.0, 2.0, 4.0, 6.0, 2.0]
    fit = severity.rater_offsets(items, raters, y)
    assert fit.reason.startswith("one rater") and fit.offset_cov is not None
    gm = severity.group_means(fit, items, raters, y, [0, 0, 1, 1, 1])
    assert gm.reason == ""
    np.testing.assert_allclose(gm.adjusted, gm.raw)
