"""analysis.preference: the edges the mutation runs of Holm, the t rows, Likert, the protocol
comparison and power found untested.

References: scipy's ttest_1samp / ttest_rel, statsmodels' multipletests (Holm) and TTestPower.
No database.
"""

import warnings

import numpy as np
import pytest
from scipy import integrate, stats
from statsmodels.stats.power import TTestPower

from analysis import preference as pf

# --------------------------------------------------------------------------- the input columns


@pytest.mark.parametrize(
    ("annotators", "comparisons", "message"),
    [
        (np.zeros((2, 1)), ["c", "c"], r"^annotators: expected a one-dimensional sequence"),
        ([1, 2], np.array([["c"], ["c"]]), r"^comparisons: expected a one-dimensional sequence"),
        ([1, 2], ["c", None], r"^comparisons: contains None at row 1"),
        ([1, None], ["c", "c"], r"^annotators: contains None at row 1"),
    ],
)
def test_a_bad_annotator_or_comparison_column_is_named(annotators, comparisons, message):
    with pytest.raises(ValueError, match=message):
        pf.spa(annotators, comparisons, [0.5, 0.6])


def test_annotator_and_comparison_ids_that_cannot_be_sorted_are_refused():
    # the rows come back in sorted order, so a mix of numbers and strings cannot be ordered
    mixed = np.array([1, "a"], dtype=object)
    with pytest.raises(ValueError, match=r"^annotators: values must be mutually comparable"):
        pf.spa(mixed, ["c", "c"], [0.5, 0.6])
    with pytest.raises(ValueError, match=r"^comparisons: values must be mutually comparable"):
        pf.likert_paired([1, 2], mixed, [3, 4], [2, 2])


def test_a_two_dimensional_answer_column_is_named():
    with pytest.raises(ValueError, match=r"^p_xy: expected a one-dimensional sequence"):
        pf.spa([1, 2], ["c", "c"], np.zeros((2, 1)))


# --------------------------------------------------------------------------- the t rows


def test_undefined_rows_raise_no_numpy_warning():
    # no answers (0/0), one answer (0/0 variance) and no variance with a mean off 0.5 (x/0)
    ann = np.array(["a", "a", "a", "b", "b", "c", "c"])
    comp = np.array(["c1", "c2", "c3", "c2", "c3", "c2", "c3"])
    p_xy = np.array([0.9, 0.7, 0.2, 0.7, 0.4, 0.7, 0.5])
    p_yx = np.array([0.1, 0.3, 0.8, 0.3, 0.6, 0.3, 0.9])  # c fails the filter on c3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = pf.spa(ann, comp, p_xy, p_yx, tau=1.1)
        only = pf.spa(["a", "b"], ["c1", "c2"], [0.9, 0.7], [0.1, 0.9], tau=1.1)
    rows = r.by_comparison
    assert rows["c2"].reason == "no variance: every answer is the same, t is undefined"
    assert rows["c1"].reason == "one answer: t is undefined"
    assert only.by_comparison["c2"].reason == "no answers"


def test_the_last_comparison_losing_every_answer_to_the_filter_has_no_answers():
    ann = np.repeat(["a", "b", "c"], 3)
    comp = np.tile(["c1", "c2", "c3"], 3)
    p_xy = np.array([0.6, 0.7, 0.8, 0.55, 0.75, 0.8, 0.65, 0.9, 0.8])
    p_yx = 1 - p_xy
    r = pf.spa(ann[:6], comp[:6], p_xy[:6], p_yx[:6], tau=1.1)
    assert [row.n for row in r.rows] == [2, 2, 2]
    p_yx[[2, 5]] += 0.3  # a and b fail on c3; c answers c1 and c2 only
    keep = np.arange(9) != 8
    r = pf.spa(ann[keep], comp[keep], p_xy[keep], p_yx[keep], tau=1.1)
    assert [row.n for row in r.rows] == [1, 1, 0] and r.rows[2].reason == "no answers"


def test_two_answers_have_scipys_confidence_interval():
    row = pf.spa([1, 2], ["c", "c"], [0.6, 0.8]).rows[0]
    ci = stats.ttest_1samp([0.6, 0.8], 0.5).confidence_interval(0.95)
    assert (row.ci_low, row.ci_high) == pytest.approx((ci.low, ci.high), rel=1e-12)


def test_the_no_variance_floor_is_relative_to_a_mean_difference_above_one():
    # Likert differences 3, 3, 3 + 4e-12: a spread below 1e-12 * 3 is rounding, not variance
    row = pf.likert_paired([1, 2, 3], ["c"] * 3, [5.0, 5.0, 5.0 + 4e-12], [2, 2, 2]).rows[0]
    assert row.reason == "no variance: every answer is the same, t is undefined"


def test_a_spread_just_above_the_floor_is_tested():
    values = [0.5, 0.5, 0.5 + 3e-12]  # sd about 1.7e-12, above 1e-12 * max(0.5, 1)
    row = pf.spa([1, 2, 3], ["c"] * 3, values).rows[0]
    assert row.reason == "" and np.isfinite(row.t)


def test_tuple_comparison_keys_come_back_as_the_tuples():
    comps = [("x", "y"), ("x", "z"), ("x", "y"), ("x", "z")]
    r = pf.spa([1, 1, 2, 2], comps, [0.6, 0.2, 0.7, 0.3])
    assert [row.comparison for row in r.rows] == [("x", "y"), ("x", "z")]
    assert r.by_comparison[("x", "z")].mean == pytest.approx(0.25)


# --------------------------------------------------------------------------- compare_protocols


def test_spa_below_one_half_against_a_zero_likert_difference_is_no_disagreement():
    ann, comp = np.arange(4), np.full(4, "c")
    spa_res = pf.spa(ann, comp, [0.1, 0.3, 0.2, 0.4])  # mean 0.25: Y preferred
    likert = pf.likert_paired(ann, comp, [3, 4, 3, 4], [4, 3, 4, 3])  # mean difference 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (side,) = pf.compare_protocols(spa_res, likert)
    assert side.spa_mean < 0.5 and side.likert_mean_difference == 0.0
    assert side.direction_disagrees is False


# --------------------------------------------------------------------------- power


def normal_approximation_n(d, alpha=0.05, target=0.8):
    """(z_{1-alpha/2} + z_target)^2 / d^2: the t-test's n when n is huge (df -> infinity)."""
    return (stats.norm.isf(alpha / 2) + stats.norm.isf(1 - target)) ** 2 / d**2


# 3.13e-6: an n just above 2**39; 2.7e-6: just below 2**40, past 3 * 2**38 (a doubling search
# from 3 instead of 2 gives up at 3 * 2**39 without trying 2**40's range)
@pytest.mark.parametrize("effect", [3.13e-6, 2.7e-6])
def test_the_search_for_n_reaches_two_to_the_fortieth(effect):
    r = pf.power(effect, 10)
    assert 2**39 < r.n_for_target <= 2**40 and r.reason == ""
    assert r.n_for_target == pytest.approx(normal_approximation_n(effect), rel=1e-5)


def test_an_n_beyond_two_to_the_fortieth_is_too_large_and_the_rest_is_kept():
    assert 2**40 < normal_approximation_n(2.2e-6) <= 2**41
    r = pf.power(-2.2e-6, np.int64(40), 0.05, 0.8)
    assert np.isnan(r.n_for_target) and r.reason == "n too large"
    assert (r.effect, r.n, r.alpha, r.target) == (-2.2e-6, 40, 0.05, 0.8)
    assert type(r.effect) is float and type(r.n) is int
    assert r.power == pytest.approx(TTestPower().power(2.2e-6, 40, 0.05), rel=1e-9)


def t_test_power_by_integration(d, n, alpha=0.05):
    """P(|T'| > c) with T' = (Z + d sqrt(n)) / sqrt(V / df), integrated over V ~ chi2(df)."""
    df = n - 1
    c = stats.t.isf(alpha / 2, df)
    nc = d * np.sqrt(n)

    def density(v):
        scaled = c * np.sqrt(v / df)
        return (stats.norm.cdf(nc - scaled) + stats.norm.cdf(-nc - scaled)) * stats.chi2.pdf(v, df)

    return integrate.quad(density, 0, np.inf, epsabs=1e-13, epsrel=1e-12, limit=200)[0]


@pytest.mark.parametrize(("effect", "n"), [(8.0, 2), (20.0, 2), (6.0, 3), (8.0, 10)])
def test_power_is_defined_where_scipys_noncentral_t_cdf_is_nan(effect, n):
    # scipy's nct.cdf(-crit, 1, 8 sqrt 2) is NaN (statsmodels' TTestPower too): a bug found by
    # the mutation run, where a NaN power ended the search for n at 2
    r = pf.power(effect, n)
    assert r.power == pytest.approx(t_test_power_by_integration(effect, n), rel=1e-9)


def test_a_large_effect_needs_three_answers_when_two_fall_short():
    assert t_test_power_by_integration(8.0, 2) < 0.8 <= t_test_power_by_integration(8.0, 3)
    assert pf.power(8.0, 10).n_for_target == 3.0
