"""analysis.monitoring at its edges: Wilson limits against statsmodels, every number of the decline
rule week by week against scipy's Fisher exact test and the rule as DeclineRule states it, runs and
Dawid-Skene rates against their formulas written out."""

import warnings

import numpy as np
import pytest
from scipy.stats import fisher_exact
from statsmodels.stats.proportion import proportion_confint

from analysis import monitoring as mon


def refused(text: str) -> str:
    return rf"(?i)^{__import__('re').escape(text)}$"


# Wilson


@pytest.mark.parametrize("confidence", [0.8, 0.9, 0.99])
def test_wilson_interval_equals_statsmodels_at_other_confidences(confidence):
    k = np.array([0, 1, 3, 7, 16, 50])
    n = np.array([1, 1, 10, 7, 16, 80])
    low, high = mon.wilson_interval(k, n, confidence)
    ref_low, ref_high = proportion_confint(k, n, alpha=1 - confidence, method="wilson")
    np.testing.assert_allclose(low, ref_low, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(high, ref_high, rtol=1e-12, atol=1e-15)


def test_wilson_interval_of_one_trial_is_defined():
    low, high = mon.wilson_interval([0, 1], [1, 1])
    ref_low, ref_high = proportion_confint([0, 1], [1, 1], method="wilson")
    np.testing.assert_allclose(low, ref_low, atol=1e-12)
    np.testing.assert_allclose(high, ref_high, atol=1e-12)


def test_wilson_interval_never_leaves_zero_to_one():
    # at k = n = 16 the formula's upper end rounds to just above 1 in floating point
    low, high = mon.wilson_interval(np.arange(17), np.full(17, 16))
    assert high.max() == 1.0 and low.min() == 0.0
    assert ((low >= 0) & (low <= high) & (high <= 1)).all()


def test_wilson_interval_without_trials_is_nan_quietly():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        low, high = mon.wilson_interval([0, 2], [0, 4])
    assert np.isnan(low[0]) and np.isnan(high[0])
    assert 0 < low[1] < 0.5 < high[1] < 1


@pytest.mark.parametrize("k, n", [(-1, 5), (6, 5)])
def test_wilson_interval_refuses_impossible_counts(k, n):
    with pytest.raises(ValueError, match=refused("k: expected 0 <= k <= n")):
        mon.wilson_interval([0, k], [5, n])


def test_wilson_interval_accepts_none_and_all_right():
    low, high = mon.wilson_interval([0, 5], [5, 5])
    assert low[0] == 0.0 and high[1] == 1.0


# the decline rule, week by week


def fisher_less(bk, bn, wk, wn):
    """One-sided Fisher exact p that the later rate is below the earlier one (scipy)."""
    return fisher_exact([[wk, wn - wk], [bk, bn - bk]], alternative="less").pvalue


def reference(correct, n, changes, rule):
    """DeclineRule's docstring, one week at a time."""
    c, n = np.asarray(correct), np.asarray(n)
    weeks = n.size
    out = {key: [] for key in ("p_window", "p_guide", "base", "win", "below", "flag", "cause")}
    changes = sorted(g for g in changes if 0 < g < weeks)
    for t in range(weeks):
        start = t - rule.window + 1
        first = max(start, 0)
        bk, bn = c[:first].sum(), n[:first].sum()
        wk, wn = c[first : t + 1].sum(), n[first : t + 1].sum()
        base = bk / bn if bn else np.nan
        out["base"].append(base)
        out["win"].append(wk / wn if wn else np.nan)
        testable = start >= 1 and bn >= rule.min_baseline and wn >= rule.min_window
        p = fisher_less(bk, bn, wk, wn) if testable else np.nan
        out["p_window"].append(p)
        below = sum(1 for w in range(first, t + 1) if n[w] > 0 and c[w] < base * n[w])
        out["below"].append(below)
        window_hit = testable and p < rule.alpha_window and below >= rule.min_weeks_below
        latest = [g for g in changes if g <= t]
        pg = np.nan
        if latest:
            g = latest[-1]
            gk, gn, sk, sn = c[:g].sum(), n[:g].sum(), c[g : t + 1].sum(), n[g : t + 1].sum()
            if gn >= rule.min_baseline and sn >= rule.min_since_guide:
                pg = fisher_less(gk, gn, sk, sn)
        out["p_guide"].append(pg)
        guide_hit = pg < rule.alpha_guide
        out["flag"].append(window_hit or guide_hit)
        out["cause"].append("window" if window_hit else "guide" if guide_hit else "")
    return out


def check(correct, n, changes, rule):
    got = mon.decline_alerts(correct, n, changes, rule)
    ref = reference(correct, n, changes, rule)
    np.testing.assert_allclose(got.p_window, ref["p_window"], rtol=1e-9, equal_nan=True)
    np.testing.assert_allclose(got.p_guide, ref["p_guide"], rtol=1e-9, equal_nan=True)
    np.testing.assert_allclose(got.baseline_rate, ref["base"], rtol=1e-12, equal_nan=True)
    np.testing.assert_allclose(got.window_rate, ref["win"], rtol=1e-12, equal_nan=True)
    assert got.flagged.dtype == bool and got.flagged.tolist() == ref["flag"]
    assert got.cause.dtype == object and got.cause.tolist() == ref["cause"]
    return got, ref


SMALL = mon.DeclineRule(
    window=2,
    min_window=20,
    min_baseline=20,
    alpha_window=0.2,
    min_weeks_below=2,
    alpha_guide=0.2,
    min_since_guide=20,
)


def test_each_weeks_p_values_and_rates_equal_fisher_exact_on_the_rules_windows():
    n = [10, 10, 10, 10, 10, 10, 10, 10]
    correct = [9, 10, 9, 5, 4, 6, 9, 10]
    got, ref = check(correct, n, [2], SMALL)
    # week 3 is the first testable one: exactly min_baseline before, exactly min_window in it
    assert np.isnan(got.p_window[:3]).all() and not np.isnan(got.p_window[3:]).any()
    # the guide change at week 2: exactly min_baseline before it, min_since_guide from week 3
    assert np.isnan(got.p_guide[:3]).all() and not np.isnan(got.p_guide[3:]).any()
    assert set(got.cause.tolist()) == {"", "window", "guide"}


def test_weeks_without_gold_count_for_nothing():
    n = [0, 10, 10, 10, 0, 10, 10, 0, 10]
    correct = [0, 9, 10, 9, 0, 4, 3, 0, 2]
    got, ref = check(correct, n, [4], SMALL)
    assert np.isnan(got.window_rate[0]) and np.isnan(got.baseline_rate[:2]).all()


def test_a_single_gold_item_is_a_week_with_gold():
    rule = mon.DeclineRule(
        window=2, min_window=1, min_baseline=1, alpha_window=1.0, min_weeks_below=2
    )
    got, ref = check([1, 9, 9, 0, 0], [1, 10, 10, 1, 1], [], rule)
    assert got.window_rate[0] == 1.0 and got.baseline_rate[2] == 1.0  # one of one
    # weeks 3 and 4, one item each, both wrong: two weeks below the earlier 19 of 21
    assert ref["below"][4] == 2 and got.flagged[4] and got.cause[4] == "window"


def test_a_week_at_exactly_the_earlier_rate_is_not_below_it():
    rule = mon.DeclineRule(
        window=3, min_window=1, min_baseline=1, alpha_window=1.0, min_weeks_below=1
    )
    # earlier rate 0.5; the window's weeks at 0.5 exactly are not below it
    got, ref = check([5, 5, 5, 5, 5], [10, 10, 10, 10, 10], [], rule)
    assert not got.flagged.any() and ref["below"] == [0, 0, 0, 0, 0]


def test_the_window_needs_the_stated_number_of_weeks_below_not_one_more():
    correct, n = [9, 9, 9, 9, 5, 6, 9], [10] * 7
    weeks_below = reference(correct, n, [], SMALL)["below"]
    flagged_week = 5
    assert weeks_below[flagged_week] == SMALL.min_weeks_below
    got, _ = check(correct, n, [], SMALL)
    assert got.flagged[flagged_week] and got.cause[flagged_week] == "window"


def test_a_p_value_equal_to_alpha_does_not_fire():
    correct, n = [9, 9, 9, 9, 5, 6, 9], [10] * 7
    p = fisher_less(36, 40, 11, 20)  # week 5: weeks 0-3 before, weeks 4-5 in the window
    at_alpha = mon.DeclineRule(**{**vars(SMALL), "alpha_window": p, "alpha_guide": 1e-12})
    got, _ = check(correct, n, [], at_alpha)
    np.testing.assert_allclose(got.p_window[5], p, rtol=1e-12)
    assert not got.flagged[5]
    p_guide = fisher_less(36, 40, 11, 20)
    guide_at_alpha = mon.DeclineRule(
        **{**vars(SMALL), "alpha_window": 1e-12, "alpha_guide": p_guide}
    )
    got, _ = check(correct, n, [4], guide_at_alpha)
    np.testing.assert_allclose(got.p_guide[5], p_guide, rtol=1e-12)
    assert not got.flagged[5]


def test_only_the_latest_guide_change_counts_and_changes_outside_the_weeks_are_ignored():
    correct, n = [9, 9, 9, 9, 5, 6, 4, 8], [10] * 8
    loose = mon.DeclineRule(**{**vars(SMALL), "min_baseline": 0, "min_since_guide": 1})
    # week 0 has nothing before it, week 8 is past the end; order does not matter
    got, ref = check(correct, n, [8, 6, 0, 1, 3], loose)
    assert np.isnan(got.p_guide[0])  # no change has taken effect yet in week 0
    got, ref = check(correct, n, [0, 8], loose)
    assert np.isnan(got.p_guide).all()


@pytest.mark.parametrize("seed", range(6))
def test_random_years_equal_the_rule_week_by_week(seed):
    rng = np.random.default_rng(seed)
    weeks = int(rng.integers(6, 30))
    n = rng.integers(0, 25, weeks)
    n[rng.random(weeks) < 0.15] = 0
    correct = rng.binomial(n, rng.uniform(0.6, 0.95, weeks))
    rule = mon.DeclineRule(
        window=int(rng.integers(2, 7)),
        min_window=int(rng.integers(10, 60)),
        min_baseline=int(rng.integers(10, 80)),
        alpha_window=float(rng.uniform(0.01, 0.3)),
        min_weeks_below=int(rng.integers(1, 4)),
        alpha_guide=float(rng.uniform(0.01, 0.3)),
        min_since_guide=int(rng.integers(10, 60)),
    )
    changes = rng.integers(0, weeks + 2, 3).tolist()
    check(correct, n, changes, rule)


def test_the_default_rule_is_the_products_rule():
    correct = np.r_[np.full(20, 18), np.full(10, 12)]
    got = mon.decline_alerts(correct, np.full(30, 20))
    ref = reference(correct, np.full(30, 20), [], mon.DeclineRule())
    assert got.flagged.tolist() == ref["flag"] and any(ref["flag"])


@pytest.mark.parametrize(
    "correct, n",
    [([1, 2], [3]), ([[1, 2]], [[3, 4]])],
    ids=["lengths", "two-dimensional"],
)
def test_decline_alerts_refuses_misshaped_counts(correct, n):
    with pytest.raises(
        ValueError, match=refused("correct, n: expected two 1-d arrays of the same length")
    ):
        mon.decline_alerts(correct, n)


@pytest.mark.parametrize("bad", [-1, 11])
def test_decline_alerts_refuses_impossible_counts_with_the_rule(bad):
    with pytest.raises(
        ValueError, match=refused("correct: expected 0 <= correct <= n in every week")
    ):
        mon.decline_alerts([5, bad], [10, 10])


def test_none_and_all_right_are_possible_weeks():
    got = mon.decline_alerts([0, 10, 0], [10, 10, 0])
    assert not got.flagged.any() and got.cause.tolist() == ["", "", ""]
    assert got.window_rate[0] == 0.0 and got.window_rate[2] == 0.5


# runs of identical answers


def reference_runs(raters, order, answers):
    out = {}
    for r in sorted(set(raters)):
        given = [
            a
            for _, a in sorted(
                (o, a) for rr, o, a in zip(raters, order, answers, strict=False) if rr == r
            )
        ]
        best_len, best_answer, length = 0, None, 0
        for i, a in enumerate(given):
            length = length + 1 if i and given[i - 1] == a else 1
            if length > best_len:
                best_len, best_answer = length, a
        p = given.count(best_answer) / len(given)
        expected = 1.0 if p == 1 else len(given) * (1 - p) * p**best_len
        out[r] = (best_len, best_answer, len(given), expected)
    return out


def test_longest_runs_equal_the_feller_approximation_written_out():
    raters = np.array([3, 3, 3, 3, 3, 3, 1, 1, 1, 1, 2, 2, 2, 2, 2])
    order = np.array([6, 5, 4, 3, 2, 1, 1, 2, 3, 4, 10, 20, 30, 40, 50])
    answers = np.array(["a", "a", "a", "b", "c", "c", "x", "y", "y", "x", "q", "q", "r", "r", "q"])
    res = mon.longest_runs(raters, order, answers)
    ref = reference_runs(raters.tolist(), order.tolist(), answers.tolist())
    assert res.raters.tolist() == [1, 2, 3]
    assert res.longest.tolist() == [ref[r][0] for r in (1, 2, 3)] == [2, 2, 3]
    # rater 2 has two runs of two: the first one given is reported
    assert res.answer.tolist() == [ref[r][1] for r in (1, 2, 3)] == ["y", "q", "a"]
    assert res.n_labels.tolist() == [4, 5, 6]
    np.testing.assert_allclose(res.expected_runs, [ref[r][3] for r in (1, 2, 3)], rtol=1e-12)
    # rater 3: run of 3 of "a", p = 3/6, n = 6: 6 * 0.5 * 0.5**3
    assert res.expected_runs[2] == pytest.approx(6 * 0.5 * 0.5**3)


@pytest.mark.parametrize("seed", range(4))
def test_random_records_equal_the_runs_written_out(seed):
    rng = np.random.default_rng(seed)
    size = 60
    raters = rng.integers(0, 5, size)
    order = rng.permutation(size)
    answers = rng.choice(np.array([0, 1, 2, 5]), size, p=[0.6, 0.2, 0.1, 0.1])
    res = mon.longest_runs(raters, order, answers)
    ref = reference_runs(raters.tolist(), order.tolist(), answers.tolist())
    assert res.raters.tolist() == sorted(ref)
    got = list(zip(res.longest.tolist(), res.answer.tolist(), res.n_labels.tolist(), strict=True))
    assert got == [ref[r][:3] for r in sorted(ref)]
    np.testing.assert_allclose(res.expected_runs, [ref[r][3] for r in sorted(ref)], rtol=1e-12)


def test_no_labels_give_empty_runs_of_the_right_types():
    res = mon.longest_runs(
        np.array([], dtype=int), np.array([], dtype=int), np.array([], dtype=str)
    )
    for arr in (res.raters, res.longest, res.answer, res.n_labels, res.expected_runs):
        assert arr.shape == (0,)
    assert res.longest.dtype.kind == "i" and res.n_labels.dtype.kind == "i"
    assert res.expected_runs.dtype.kind == "f" and res.answer.dtype.kind == "U"
    assert res.raters.dtype.kind == "i"


def test_one_label_is_a_run_of_one():
    res = mon.longest_runs([7], [1], ["a"])
    assert res.raters.tolist() == [7] and res.longest.tolist() == [1]
    assert res.n_labels.tolist() == [1] and res.expected_runs.tolist() == [1.0]


# Dawid-Skene sensitivity and specificity


def test_sensitivity_and_specificity_equal_the_formula_with_unequal_priors_and_unseen_classes():
    nan = np.nan
    rates = np.array(
        [
            [[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.3, 0.3, 0.4]],
            [[0.9, 0.1, 0.0], [nan, nan, nan], [0.2, 0.2, 0.6]],  # never saw a true 1
            [[0.5, 0.5, 0.0], [nan, nan, nan], [nan, nan, nan]],  # only saw true 0
        ]
    )
    priors = np.array([0.5, 0.3, 0.2])
    sens, spec = mon.dawid_skene_rater_rates(rates, priors)
    ref_spec = np.full((3, 3), np.nan)
    for j in range(3):
        for k in range(3):
            num = den = 0.0
            for t in range(3):
                if t != k and not np.isnan(rates[j, t, k]):
                    num += priors[t] * (1 - rates[j, t, k])
                    den += priors[t]
            ref_spec[j, k] = num / den if den > 0 else np.nan
    np.testing.assert_allclose(sens, [[0.7, 0.8, 0.4], [0.9, nan, 0.6], [0.5, nan, nan]])
    np.testing.assert_allclose(spec, ref_spec, rtol=1e-12)
    assert np.isnan(spec[2, 0])  # no other true class seen: undefined, not 0
    assert spec[1, 0] == pytest.approx(1 - 0.2)  # only true 2 of the others was seen
