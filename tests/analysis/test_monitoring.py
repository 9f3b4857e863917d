"""analysis.monitoring: Wilson intervals, the sustained-decline rule on simulated raters with
known truth, runs of identical answers, Dawid-Skene sensitivity and specificity."""

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

from analysis import labelmodels as lm
from analysis import monitoring as mon

GOLD_PER_WEEK = 20


def test_wilson_interval_equals_statsmodels():
    k = np.array([0, 3, 17, 20, 45])
    n = np.array([20, 20, 20, 20, 50])
    low, high = mon.wilson_interval(k, n)
    ref_low, ref_high = proportion_confint(k, n, alpha=0.05, method="wilson")
    np.testing.assert_allclose(low, ref_low, atol=1e-12)
    np.testing.assert_allclose(high, ref_high, atol=1e-12)
    assert np.isnan(mon.wilson_interval(0, 0)[0])


def decline_year(rng, before=0.92, after=0.81, change=10, weeks=30):
    acc = np.r_[np.full(change, before), np.full(weeks - change, after)]
    correct = rng.binomial(GOLD_PER_WEEK, acc)
    return correct, np.full(weeks, GOLD_PER_WEEK), change


def test_decline_from_92_to_81_after_a_guide_change_fires_in_most_simulated_raters():
    rng = np.random.default_rng(14)
    delays = []
    for _ in range(300):
        c, n, change = decline_year(rng)
        res = mon.decline_alerts(c, n, [change])
        hits = np.flatnonzero(res.flagged)
        after = hits[hits >= change]
        delays.append(after[0] - change + 1 if after.size else None)
    caught = [d for d in delays if d is not None]
    print(f"caught {len(caught)} of {len(delays)}; median delay {np.median(caught)} weeks")
    # 92% -> 81% with 20 gold a week: a real but small drop; most are caught within 20 weeks
    assert len(caught) / len(delays) >= 0.8
    assert np.median(caught) <= 8


def test_a_steady_90_percent_rater_raises_no_alert_in_almost_every_simulated_year():
    rng = np.random.default_rng(90)
    years, false_alarms = 500, 0
    for _ in range(years):
        c = rng.binomial(GOLD_PER_WEEK, 0.9, 52)
        # a guide change mid-year as well: the guide rule must not fire on noise either
        res = mon.decline_alerts(c, np.full(52, GOLD_PER_WEEK), [26])
        false_alarms += bool(res.flagged.any())
    print(f"false alarms: {false_alarms} of {years} simulated rater-years")
    assert false_alarms / years <= 0.03


def test_one_bad_week_of_20_items_does_not_fire():
    correct = np.full(30, 18)  # 90% for 30 weeks
    correct[20] = 11  # one week at 55%
    res = mon.decline_alerts(correct, np.full(30, 20), [])
    assert not res.flagged.any()
    # ... while the same drop sustained over six weeks does
    correct[20:26] = 14
    assert mon.decline_alerts(correct, np.full(30, 20), []).flagged.any()


def test_the_rule_needs_enough_gold_before_it_says_anything():
    res = mon.decline_alerts([5, 5, 0, 0, 0, 0, 0, 0], [5, 5, 5, 5, 5, 5, 5, 5], [2])
    assert not res.flagged.any() and np.isnan(res.p_window).all()


def test_decline_rule_refuses_impossible_counts():
    with pytest.raises(ValueError, match="correct"):
        mon.decline_alerts([21], [20])


def test_longest_run_per_rater_in_session_order():
    raters = np.array([1, 1, 1, 1, 1, 2, 2, 2])
    order = np.array([5, 1, 2, 3, 4, 1, 2, 3])
    answers = np.array(["a", "b", "b", "b", "a", "x", "x", "y"])
    res = mon.longest_runs(raters, order, answers)
    assert res.longest.tolist() == [3, 2]
    assert res.answer.tolist() == ["b", "x"]
    assert res.n_labels.tolist() == [5, 3]


def test_an_always_same_answer_rater_has_an_unsurprising_but_total_run():
    res = mon.longest_runs(np.zeros(12), np.arange(12), np.full(12, "safe"))
    assert res.longest[0] == 12 and res.expected_runs[0] == 1.0


def test_perfect_rater_has_sensitivity_and_specificity_one():
    items = np.repeat(np.arange(40), 3)
    truth = np.arange(40) % 2
    raters = np.tile([0, 1, 2], 40)
    labels = truth[items].copy()
    flip = (raters == 2) & (np.arange(items.size) % 4 == 0)
    labels[flip] = 1 - labels[flip]
    fit = lm.dawid_skene(items, raters, labels)
    sens, spec = mon.dawid_skene_rater_rates(fit.error_rates, fit.priors)
    np.testing.assert_allclose(sens[0], 1.0, atol=1e-6)
    np.testing.assert_allclose(spec[0], 1.0, atol=1e-6)
    assert sens[2].min() < 0.9
    # binary: specificity of one class is the sensitivity of the other
    np.testing.assert_allclose(spec[:, 0], sens[:, 1], atol=1e-9)
