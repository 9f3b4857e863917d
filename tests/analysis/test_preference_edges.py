"""analysis.preference at its edges: Holm, the t-test rows, SPA's filter, Likert, the protocol
comparison, power and the position-bias binomial test.

References: statsmodels multipletests (Holm) and TTestPower, scipy's ttest_1samp / ttest_rel with
their confidence intervals, scipy's binomtest. No database.
"""

import warnings

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import TTestPower

from analysis import preference as pf

# --------------------------------------------------------------------------- Holm


def test_holm_equals_statsmodels_with_ties_and_a_p_above_the_cap():
    p = np.array([0.04, 0.01, 0.04, 0.55, 0.002, 0.6, 0.01])
    np.testing.assert_allclose(pf.holm(p), multipletests(p, method="holm")[1], atol=1e-15)
    assert pf.holm(p).max() == 1.0  # (m - k + 1) p above 1 is capped


def test_holm_of_one_p_value_is_that_p_value():
    assert pf.holm([0.03]).tolist() == [0.03]
    assert pf.holm([0.0, 1.0]).tolist() == [0.0, 1.0]


def test_holm_of_only_undefined_tests_is_all_nan():
    out = pf.holm([np.nan, np.nan])
    assert out.shape == (2,) and np.isnan(out).all()


@pytest.mark.parametrize("bad", [[0.1, -0.01], [1.01, 0.2]])
def test_holm_refuses_p_values_outside_zero_one(bad):
    with pytest.raises(ValueError, match=r"^pvalues: expected values in \[0, 1\] \(or NaN\)$"):
        pf.holm(bad)


def test_holm_names_the_argument_when_it_is_not_one_dimensional():
    with pytest.raises(ValueError, match="^pvalues: expected a one-dimensional"):
        pf.holm(np.zeros((2, 2)))


# --------------------------------------------------------------------------- SPA rows


def spa_rows(seed=0):
    rng = np.random.default_rng(seed)
    comps = np.repeat(["c0", "c1", "c2"], [12, 7, 20])
    ann = np.concatenate([np.arange(12), np.arange(7), np.arange(20)])
    means = {"c0": 0.6, "c1": 0.45, "c2": 0.52}
    p = np.clip([rng.normal(means[c], 0.12) for c in comps], 0, 1)
    return ann, comps, p


def test_every_field_of_a_spa_row_equals_scipys_one_sample_t_test():
    ann, comps, p = spa_rows()
    r = pf.spa(ann, comps, p, alpha=0.1)
    raw = [stats.ttest_1samp(p[comps == c], 0.5).pvalue for c in ("c0", "c1", "c2")]
    adjusted = multipletests(raw, method="holm")[1]
    assert (r.alpha, r.tau, r.null, r.n_annotators, r.n_dropped) == (0.1, None, 0.5, 20, 0)
    assert r.rows is r.unfiltered and r.dropped.size == 0
    for row, c, p_holm in zip(r.rows, ("c0", "c1", "c2"), adjusted, strict=True):
        values = p[comps == c]
        ref = stats.ttest_1samp(values, 0.5)
        ci = ref.confidence_interval(0.95)
        assert row.comparison == c and isinstance(row.comparison, str)
        assert row.n == values.size and row.df == values.size - 1
        assert row.mean == pytest.approx(values.mean(), rel=1e-12)
        assert (row.ci_low, row.ci_high) == pytest.approx((ci.low, ci.high), rel=1e-12)
        assert row.t == pytest.approx(ref.statistic, rel=1e-12)
        assert row.p == pytest.approx(ref.pvalue, rel=1e-10)
        assert row.p_holm == pytest.approx(p_holm, rel=1e-10)
        assert row.reason == ""
        expected = "no significant difference"
        if p_holm <= 0.1:
            expected = "X>Y" if values.mean() > 0.5 else "Y>X"
        assert row.verdict == expected
    assert r.by_comparison == {row.comparison: row for row in r.rows}


def test_the_verdict_is_significant_at_exactly_alpha():
    # two answers 0.6 and 0.8: t = 2 on 1 df, p = 2 * t.sf(2, 1); alpha set to that very p
    p = pf.spa([1, 2], ["c", "c"], [0.6, 0.8]).rows[0].p
    assert p == pytest.approx(2 * stats.t.sf(2.0, 1), rel=1e-12)
    assert pf.spa([1, 2], ["c", "c"], [0.6, 0.8], alpha=p).rows[0].verdict == "X>Y"
    assert pf.spa([1, 2], ["c", "c"], [0.4, 0.2], alpha=p).rows[0].verdict == "Y>X"
    below = pf.spa([1, 2], ["c", "c"], [0.6, 0.8], alpha=p * (1 - 1e-9)).rows[0]
    assert below.verdict == pf.NO_DIFFERENCE


def test_integer_comparison_keys_come_back_as_python_ints():
    r = pf.spa([1, 2, 1, 2], [7, 7, 9, 9], [0.6, 0.7, 0.2, 0.3])
    assert [row.comparison for row in r.rows] == [7, 9]
    assert all(type(row.comparison) is int for row in r.rows)
    assert set(r.by_comparison) == {7, 9}


def test_undefined_rows_say_why_and_carry_no_test():
    ann = np.array([1, 2, 3, 1, 2, 3, 1])
    comp = np.array(["same"] * 3 + ["spread"] * 3 + ["single"])
    p = np.array([0.7, 0.7, 0.7, 0.6, 0.8, 0.9, 0.9])
    rows = pf.spa(ann, comp, p).by_comparison
    same, single = rows["same"], rows["single"]
    assert same.reason == "no variance: every answer is the same, t is undefined"
    assert single.reason == "one answer: t is undefined"
    for row in (same, single):
        assert np.isnan([row.t, row.p, row.p_holm]).all() and row.verdict == pf.UNDEFINED
    assert same.mean == pytest.approx(0.7)
    assert (same.ci_low, same.ci_high) == pytest.approx((0.7, 0.7), abs=1e-12)
    assert single.n == 1 and single.df == 0.0 and single.mean == 0.9
    assert np.isnan(single.ci_low) and np.isnan(single.ci_high)
    assert rows["spread"].p_holm == rows["spread"].p  # the only defined test: a family of one


def test_near_constant_answers_with_real_spread_are_tested():
    # spread of 1e-6 around 0.5: far above the 1e-12 relative floor, so t is defined
    r = pf.spa([1, 2, 3], ["c"] * 3, [0.5, 0.5 + 1e-6, 0.5 + 2e-6]).rows[0]
    ref = stats.ttest_1samp([0.5, 0.5 + 1e-6, 0.5 + 2e-6], 0.5)
    assert r.reason == "" and r.t == pytest.approx(ref.statistic, rel=1e-6)


def test_a_comparison_whose_every_annotator_is_filtered_out_has_no_answers():
    ann = np.array(["a", "a", "b", "b"])
    comp = np.array(["c1", "c2", "c1", "c2"])
    p_xy = np.array([0.9, 0.6, 0.8, 0.3])
    p_yx = np.array([0.1, 0.4, 0.2, 0.9])  # b: 0.3 + 0.9 = 1.2 on c2
    r = pf.spa(ann, comp, p_xy, p_yx, tau=1.1)
    assert r.dropped.tolist() == ["b"] and r.n_dropped == 1
    assert [row.n for row in r.rows] == [1, 1]
    ann2, comp2 = np.array(["a", "b", "b"]), np.array(["c1", "c1", "c2"])
    only_b = pf.spa(ann2, comp2, [0.9, 0.6, 0.3], [0.1, 0.4, 0.9], tau=1.1).by_comparison
    assert only_b["c2"].n == 0 and only_b["c2"].reason == "no answers"
    assert only_b["c2"].verdict == pf.UNDEFINED and np.isnan(only_b["c2"].mean)


def test_the_filter_is_kept_with_its_threshold_even_when_nobody_fails_it():
    r = pf.spa([1, 2], ["c", "c"], [0.6, 0.7], [0.4, 0.3], tau=1.0)
    assert r.tau == 1.0 and r.n_dropped == 0 and r.rows is r.unfiltered


def test_tau_at_one_drops_a_sum_just_above_it_and_keeps_one_at_it():
    r = pf.spa([1, 2, 3], ["c"] * 3, [0.6, 0.7, 0.5], [0.4, 0.3 + 1e-6, 0.5], tau=1.0)
    assert r.dropped.tolist() == [2]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"p_xy": [0.5, -0.1]}, r"^p_xy: expected shares in \[0, 1\] \(divide percentages"),
        ({"p_xy": [0.5, 1.5]}, r"^p_xy: expected shares in \[0, 1\]"),
        ({"p_yx": [0.5, -0.1]}, r"^p_yx: expected shares in \[0, 1\] \(divide percentages"),
        ({"p_yx": [1.2, 0.5]}, r"^p_yx: expected shares in \[0, 1\]"),
        ({"p_yx": [0.5, 0.5], "tau": 0.9}, r"^tau: expected a number >= 1 \(the paper uses 1.1\)"),
        ({"p_yx": [0.5, 0.5], "tau": np.nan}, r"^tau: expected a number >= 1"),
        ({"tau": 1.1}, r"^tau: the filter needs p_yx \(the reverse question\)$"),
        ({"p_xy": ["a", "b"]}, r"^p_xy: expected numbers, got dtype"),
        ({"p_xy": [0.5, np.inf]}, r"^p_xy: contains NaN or infinite values; leave missing"),
        ({"p_xy": [0.5]}, r"^p_xy: length 1 differs from annotators length 2$"),
        ({"p_yx": [0.5, np.inf]}, r"^p_yx: contains NaN or infinite"),
        ({"alpha": 0.0}, r"^alpha: expected a number in \(0, 1\), got 0.0$"),
        ({"alpha": 1}, r"^alpha: expected a number in \(0, 1\), got 1$"),
        ({"alpha": "0.05"}, r"^alpha: expected a number in \(0, 1\)"),
    ],
)
def test_spa_refuses_bad_input_naming_the_argument(kwargs, message):
    args = {"p_xy": [0.5, 0.6]} | kwargs
    with pytest.raises(ValueError, match=message):
        pf.spa([1, 2], ["c", "c"], **args)


def test_spa_accepts_an_integer_alpha_free_numpy_float():
    r = pf.spa([1, 2, 3], ["c"] * 3, [0.6, 0.7, 0.9], alpha=np.float64(0.2))
    assert r.alpha == 0.2 and r.rows[0].verdict == "X>Y"


def test_no_answers_at_all_are_refused():
    with pytest.raises(ValueError, match="^annotators: no answers given$"):
        pf.spa([], [], [])


def test_the_repeated_answer_message_says_what_to_do():
    with pytest.raises(ValueError, match=r"more than once; give one answer per annotator"):
        pf.spa([1, 1, 2], ["c", "c", "c"], [0.6, 0.7, 0.5])
    # the same annotator on two comparisons is fine, and so is one comparison by two annotators
    pf.spa([1, 1, 2, 2], ["c", "d", "c", "d"], [0.6, 0.7, 0.5, 0.4])


def test_comparisons_of_another_length_are_refused():
    with pytest.raises(ValueError, match="^comparisons: length 1 differs from annotators"):
        pf.spa([1, 2], ["c"], [0.5, 0.6])


# --------------------------------------------------------------------------- Likert


def test_every_field_of_a_likert_row_equals_scipys_paired_t_test():
    rng = np.random.default_rng(7)
    ann, comp = np.repeat(np.arange(25), 2), np.tile(["a", "b"], 25)
    x = rng.integers(2, 6, 50)
    y = rng.integers(1, 5, 50)
    r = pf.likert_paired(ann, comp, x, y, alpha=0.01)
    assert (r.null, r.alpha, r.n_annotators) == (0.0, 0.01, 25)
    raw = [stats.ttest_rel(x[comp == c], y[comp == c]).pvalue for c in ("a", "b")]
    adjusted = multipletests(raw, method="holm")[1]
    for row, c, p_holm in zip(r.rows, ("a", "b"), adjusted, strict=True):
        ref = stats.ttest_rel(x[comp == c], y[comp == c])
        ci = ref.confidence_interval(0.95)
        assert row.comparison == c and row.n == 25 and row.df == 24
        assert row.mean == pytest.approx(np.mean(x[comp == c] - y[comp == c]))
        assert (row.ci_low, row.ci_high) == pytest.approx((ci.low, ci.high), rel=1e-12)
        assert row.p_holm == pytest.approx(p_holm, rel=1e-10)
        assert row.verdict == ("X>Y" if p_holm <= 0.01 else pf.NO_DIFFERENCE)
    assert set(r.by_comparison) == {"a", "b"}


@pytest.mark.parametrize("name", ["likert_x", "likert_y"])
def test_likert_refuses_missing_ratings_naming_the_column(name):
    cols = {"likert_x": [3.0, 4.0], "likert_y": [2.0, 5.0]}
    cols[name] = [3.0, np.inf]
    with pytest.raises(ValueError, match=rf"^{name}: contains NaN or infinite"):
        pf.likert_paired([1, 2], ["c", "c"], **cols)


def test_likert_refuses_a_bad_alpha():
    with pytest.raises(ValueError, match="^alpha"):
        pf.likert_paired([1, 2], ["c", "c"], [3, 4], [2, 2], alpha=1.5)


# --------------------------------------------------------------------------- compare_protocols


def test_protocol_comparison_carries_both_verdicts_and_skips_unshared_comparisons():
    ann = np.repeat(np.arange(20), 3)
    comp = np.tile(["up", "flat", "spa-only"], 20)
    rng = np.random.default_rng(2)
    p = np.clip(np.tile([0.8, 0.5, 0.7], 20) + rng.normal(0, 0.05, 60), 0, 1)
    spa_res = pf.spa(ann, comp, p)
    keep = comp != "spa-only"
    lx = np.tile([4, 3, 3], 20)[keep] + rng.integers(0, 2, 40)
    ly = np.tile([2, 3, 3], 20)[keep] + rng.integers(0, 2, 40)
    likert = pf.likert_paired(ann[keep], comp[keep], lx, ly)
    sides = {s.comparison: s for s in pf.compare_protocols(spa_res, likert)}
    assert set(sides) == {"up", "flat"}
    up = sides["up"]
    assert (up.spa_verdict, up.likert_verdict) == ("X>Y", "X>Y")
    assert up.spa_mean == spa_res.by_comparison["up"].mean
    assert up.likert_mean_difference == likert.by_comparison["up"].mean
    assert not up.reversal and not up.direction_disagrees
    assert type(up.direction_disagrees) is bool


def test_a_zero_mean_difference_is_no_disagreement_of_direction():
    ann, comp = np.arange(4), np.full(4, "c")
    spa_res = pf.spa(ann, comp, [0.9, 0.8, 0.7, 0.9])
    likert = pf.likert_paired(ann, comp, [3, 4, 3, 4], [4, 3, 4, 3])  # mean difference 0
    (side,) = pf.compare_protocols(spa_res, likert)
    assert side.likert_mean_difference == 0.0 and side.direction_disagrees is False


def test_spa_below_one_half_against_a_positive_likert_difference_disagrees_in_direction():
    ann, comp = np.arange(4), np.full(4, "c")
    spa_res = pf.spa(ann, comp, [0.1, 0.7, 0.3, 0.4])  # mean 0.375
    likert = pf.likert_paired(ann, comp, [4, 3, 3, 2], [3, 3, 2, 2])  # mean +0.5
    (side,) = pf.compare_protocols(spa_res, likert)
    assert side.direction_disagrees is True and side.reversal is False


def test_opposite_point_estimates_disagree_in_direction_without_a_reversal():
    ann, comp = np.arange(4), np.full(4, "c")
    spa_res = pf.spa(ann, comp, [0.9, 0.3, 0.7, 0.6])  # mean 0.625, not significant
    likert = pf.likert_paired(ann, comp, [3, 2, 3, 2], [4, 3, 3, 2])  # mean -0.5
    (side,) = pf.compare_protocols(spa_res, likert)
    assert side.direction_disagrees is True and side.reversal is False


# --------------------------------------------------------------------------- power


@pytest.mark.parametrize(
    ("effect", "n", "alpha", "target"),
    [(0.5, 20, 0.05, 0.8), (-0.3, 50, 0.01, 0.9), (1.2, 5, 0.05, 0.5), (0.8, 12, 0.2, 0.95)],
)
def test_power_and_the_n_for_the_target_equal_statsmodels(effect, n, alpha, target):
    r = pf.power(effect, n, alpha, target)
    assert r.power == pytest.approx(TTestPower().power(abs(effect), n, alpha), rel=1e-9)
    exact = TTestPower().solve_power(abs(effect), power=target, alpha=alpha)
    assert r.n_for_target == max(2.0, np.ceil(exact))
    m = int(r.n_for_target)
    assert TTestPower().power(abs(effect), m, alpha) >= target
    if m > 2:
        assert TTestPower().power(abs(effect), m - 1, alpha) < target
    assert (r.effect, r.n, r.alpha, r.target, r.reason) == (effect, n, alpha, target, "")
    assert isinstance(r.n_for_target, float)


def test_a_huge_effect_reaches_the_target_at_the_smallest_n():
    r = pf.power(20.0, 3, 0.05, 0.8)
    crit = stats.t.isf(0.025, 1)  # n = 2: one df (statsmodels returns NaN there)
    assert stats.nct.sf(crit, 1, 20.0 * np.sqrt(2)) >= 0.8
    assert r.n_for_target == 2.0


@pytest.mark.parametrize("effect", [0.9, 0.62, 0.45, 0.21])
def test_the_n_for_the_target_is_exact_across_the_doubling_steps(effect):
    r = pf.power(effect, 10)
    exact = TTestPower().solve_power(effect, power=0.8, alpha=0.05)
    assert r.n_for_target == np.ceil(exact)


def test_an_effect_too_small_for_any_practical_n_says_so():
    r = pf.power(1e-7, 10)
    assert np.isnan(r.n_for_target) and r.reason == "n too large"
    assert r.power == pytest.approx(0.05, abs=1e-6)


def test_zero_effect_says_why_there_is_no_n():
    r = pf.power(0.0, 30, 0.05)
    assert r.reason == "no effect: power = alpha" and r.effect == 0.0 and r.n == 30
    assert r.target == 0.8 and r.alpha == 0.05


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((0.5, 1), r"^n: expected an integer >= 2, got 1$"),
        ((0.5, 10.0), r"^n: expected an integer >= 2, got 10.0$"),
        ((np.inf, 10), r"^effect: expected a finite Cohen's d, got inf$"),
        ((0.5, 10, 0.05, 1.0), r"^target: expected a number in \(0, 1\), got 1.0$"),
        ((0.5, 10, 0.05, 0.0), r"^target: expected a number in \(0, 1\)"),
        ((0.5, 10, 0.0), r"^alpha: expected a number in \(0, 1\)"),
    ],
)
def test_power_refuses_bad_input_naming_the_argument(args, message):
    with pytest.raises(ValueError, match=message):
        pf.power(*args)


def test_power_takes_a_numpy_integer_n():
    assert pf.power(0.5, np.int64(2)).n == 2


# --------------------------------------------------------------------------- position bias


def test_position_bias_p_values_equal_scipys_exact_binomial_test():
    raters = np.repeat([0, 1, 2, 3, 4], [9, 14, 6, 3, 1])
    choice = np.array(
        ["left"] * 8
        + ["right"]  # rater 0: 8 of 9 left
        + ["left"] * 5
        + ["right"] * 7
        + ["tie"] * 2  # rater 1: 5 of 12
        + ["left"] * 3
        + ["right"] * 3  # rater 2: 3 of 6
        + ["tie"] * 3  # rater 3: only ties
        + ["left"]  # rater 4: one judgment
    )
    n = raters.size
    a = np.arange(n) % 3
    b = (a + 1) % 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a rater with only ties is a stated NaN, not a warning
        r = pf.bradley_terry(np.arange(n), raters, a, b, choice, n_boot=0)
    bias = r.position_bias
    assert bias.n.tolist() == [9, 12, 6, 0, 1] and bias.n.dtype == np.int64
    for j, k, m in [(0, 8, 9), (1, 5, 12), (2, 3, 6), (4, 1, 1)]:
        assert bias.share_left[j] == pytest.approx(k / m)
        assert bias.p[j] == pytest.approx(stats.binomtest(k, m, 0.5).pvalue, rel=1e-12)
    assert np.isnan(bias.share_left[3]) and np.isnan(bias.p[3])
    assert bias.overall_share_left == pytest.approx(17 / 28)
    assert bias.overall_p == pytest.approx(stats.binomtest(17, 28, 0.5).pvalue, rel=1e-12)
    assert bias.shares[0] == pytest.approx(8 / 9)


def test_position_bias_of_only_ties_is_undefined():
    a, b = np.array([0, 1, 2]), np.array([1, 2, 0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = pf.bradley_terry(np.arange(3), [0, 0, 0], a, b, ["tie"] * 3, n_boot=0)
    assert np.isnan(r.position_bias.overall_share_left) and np.isnan(r.position_bias.overall_p)


def test_shares_of_exactly_zero_and_one_are_accepted():
    r = pf.spa([1, 2, 3], ["c"] * 3, [0.0, 1.0, 0.5], [1.0, 0.0, 0.5], tau=1.0)
    assert r.rows[0].n == 3 and r.n_dropped == 0
    assert r.rows[0].mean == pytest.approx(0.5)


def test_the_filtered_table_tests_the_kept_answers_against_one_half():
    ann = np.repeat(np.arange(8), 2)
    comp = np.tile(["c1", "c2"], 8)
    p_xy = np.array(
        [0.7, 0.6, 0.8, 0.55, 0.6, 0.7, 0.9, 0.6, 0.75, 0.5, 0.65, 0.4, 0.7, 0.6, 0.2, 0.3]
    )
    p_yx = 1 - p_xy
    p_yx[[4, 15]] += 0.2  # annotators 2 and 7 fail the filter (sums 1.2)
    r = pf.spa(ann, comp, p_xy, p_yx, tau=1.1)
    assert r.dropped.tolist() == [2, 7]
    kept = ~np.isin(ann, [2, 7])
    for row, c in zip(r.rows, ("c1", "c2"), strict=True):
        ref = stats.ttest_1samp(p_xy[kept & (comp == c)], 0.5)
        assert row.n == 6 and row.t == pytest.approx(ref.statistic, rel=1e-12)
        assert row.p == pytest.approx(ref.pvalue, rel=1e-10)
