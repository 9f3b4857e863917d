"""Tests for analysis.preference: Holm, SPA, Likert, protocol comparison, Bradley-Terry, power.

References: scipy.stats t-tests, statsmodels multipletests/TTestPower, direct MLE, Hunter's MM.
"""

import numpy as np
import pytest
from scipy import optimize, stats
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import TTestPower

from analysis import preference as pf


def spa_data(seed=0, n=40, means=(0.62, 0.5, 0.45)):
    rng = np.random.default_rng(seed)
    comps = [f"c{k}" for k in range(len(means))]
    ann = np.repeat(np.arange(n), len(means))
    comp = np.tile(comps, n)
    p = np.clip(rng.normal(np.tile(means, n), 0.15), 0, 1)
    p_yx = np.clip(1 - p + rng.normal(0, 0.05, p.size), 0, 1)
    return ann, comp, p, p_yx


# --------------------------------------------------------------------------- Holm


def test_holm_equals_statsmodels():
    p = np.random.default_rng(0).uniform(0, 0.2, 12)
    np.testing.assert_allclose(pf.holm(p), multipletests(p, method="holm")[1], atol=1e-15)


def test_holm_leaves_nan_out_of_the_family():
    p = np.array([0.01, np.nan, 0.04, 0.03])
    out = pf.holm(p)
    assert np.isnan(out[1])
    np.testing.assert_allclose(out[[0, 2, 3]], multipletests(p[[0, 2, 3]], method="holm")[1])


# --------------------------------------------------------------------------- SPA


def test_spa_t_and_p_equal_scipy_one_sample_t_test():
    ann, comp, p, _ = spa_data()
    rows = pf.spa(ann, comp, p).rows
    for row in rows:
        ref = stats.ttest_1samp(p[comp == row.comparison], 0.5)
        assert row.t == pytest.approx(ref.statistic, rel=1e-12)
        assert row.p == pytest.approx(ref.pvalue, rel=1e-10)
        assert row.df == ref.df
        ci = ref.confidence_interval(0.95)
        assert (row.ci_low, row.ci_high) == pytest.approx((ci.low, ci.high), rel=1e-12)


def test_spa_holm_equals_statsmodels_across_comparisons():
    ann, comp, p, _ = spa_data()
    rows = pf.spa(ann, comp, p).rows
    raw = np.array([r.p for r in rows])
    np.testing.assert_allclose([r.p_holm for r in rows], multipletests(raw, method="holm")[1])


def test_spa_verdicts_follow_the_direction_of_the_mean():
    ann, comp, p, _ = spa_data(means=(0.7, 0.5, 0.3), n=60)
    verdicts = [r.verdict for r in pf.spa(ann, comp, p).rows]
    assert verdicts == ["X>Y", pf.NO_DIFFERENCE, "Y>X"]


def test_tau_filter_drops_exactly_the_annotators_over_the_threshold_on_any_comparison():
    ann = np.array(["a1", "a1", "a2", "a2", "a3", "a3", "a4", "a4", "a5", "a5"])
    comp = np.array(["c1", "c2"] * 5)
    p_xy = np.array([0.45, 0.60, 0.50, 0.40, 0.60, 0.70, 0.55, 0.30, 0.80, 0.20])
    p_yx = np.array([0.65, 0.40, 0.61, 0.60, 0.40, 0.45, 0.55, 0.70, 0.20, 0.80])
    # sums: a1 1.1 (kept: float 1.1000000000000001), a2 1.11 (dropped), a3 1.15 on c2 only
    # (dropped from both), a4 exactly 1.1 (kept), a5 1.0 (kept)
    r = pf.spa(ann, comp, p_xy, p_yx, tau=1.1)
    assert sorted(r.dropped.tolist()) == ["a2", "a3"]
    assert [row.n for row in r.rows] == [3, 3]
    assert [row.n for row in r.unfiltered] == [5, 5]


def test_the_unfiltered_table_equals_a_run_without_the_filter():
    ann, comp, p, p_yx = spa_data(seed=3)
    with_filter = pf.spa(ann, comp, p, p_yx, tau=1.05)
    without = pf.spa(ann, comp, p)
    assert with_filter.n_dropped > 0
    assert [r.t for r in with_filter.unfiltered] == [r.t for r in without.rows]


def test_an_undefined_t_is_explained_and_left_out_of_holm():
    ann = np.array([1, 2, 3, 1, 2, 3, 1, 2, 3, 4])
    comp = np.array(["same"] * 3 + ["varied"] * 3 + ["other"] * 3 + ["single"])
    p = np.array([0.7, 0.7, 0.7, 0.6, 0.8, 0.9, 0.4, 0.45, 0.3, 0.9])
    rows = pf.spa(ann, comp, p).by_comparison
    assert np.isnan(rows["same"].t) and "no variance" in rows["same"].reason
    assert np.isnan(rows["single"].t) and "one answer" in rows["single"].reason
    assert rows["same"].verdict == pf.UNDEFINED
    defined = [rows["other"].p, rows["varied"].p]
    expected = multipletests(defined, method="holm")[1]
    assert [rows["other"].p_holm, rows["varied"].p_holm] == pytest.approx(expected)


def test_percentages_instead_of_shares_are_rejected():
    with pytest.raises(ValueError, match="p_xy"):
        pf.spa([1, 2], ["c", "c"], [60, 70])


def test_tau_without_the_reverse_question_is_rejected():
    with pytest.raises(ValueError, match="tau"):
        pf.spa([1, 2], ["c", "c"], [0.6, 0.7], tau=1.1)


def test_two_answers_by_one_annotator_on_one_comparison_are_rejected():
    with pytest.raises(ValueError, match="annotators"):
        pf.spa([1, 1], ["c", "c"], [0.6, 0.7])


# --------------------------------------------------------------------------- Likert


def test_likert_paired_equals_scipy_paired_t_test():
    rng = np.random.default_rng(4)
    ann, comp = np.repeat(np.arange(30), 2), np.tile(["a", "b"], 30)
    x, y = rng.integers(1, 6, 60), rng.integers(1, 6, 60)
    rows = pf.likert_paired(ann, comp, x, y).by_comparison
    for c in ("a", "b"):
        ref = stats.ttest_rel(x[comp == c], y[comp == c])
        assert rows[c].t == pytest.approx(ref.statistic, rel=1e-12)
        assert rows[c].p == pytest.approx(ref.pvalue, rel=1e-10)


def proposition_1_data(n=80, seed=0):
    """Ethayarajh & Jurafsky (2022), Prop. 1: Likert = ceil(utility). X's outputs sit just
    under 3 (rated 3); Y's straddle 3 (rated 4 half the time, else 3), so E[u_X] > E[u_Y]
    but E[Likert_X] < E[Likert_Y]. Each annotator states P[X>Y] from their expected utilities."""
    rng = np.random.default_rng(seed)
    u_x = 2.90 + rng.uniform(-0.05, 0.05, (n, 5))
    u_y = np.where(rng.random((n, 5)) < 0.5, 3.05, 2.65) + rng.uniform(-0.03, 0.03, (n, 5))
    gap = u_x.mean(axis=1) - u_y.mean(axis=1)
    stated = np.clip(0.5 + 1.5 * gap + rng.normal(0, 0.05, n), 0, 1)
    likert_x, likert_y = np.ceil(u_x[:, 0]), np.ceil(u_y[:, 0])  # first output rated
    return np.arange(n), np.full(n, "X vs Y"), stated, likert_x, likert_y, u_x, u_y


def test_constructed_rounding_residuals_make_likert_reverse_the_true_preference():
    ann, comp, stated, lx, ly, u_x, u_y = proposition_1_data()
    assert u_x.mean() > u_y.mean()  # the true preference is X
    spa_res = pf.spa(ann, comp, stated)
    likert = pf.likert_paired(ann, comp, lx, ly)
    (side,) = pf.compare_protocols(spa_res, likert)
    assert side.spa_verdict == "X>Y"
    assert side.likert_verdict == "Y>X"
    assert side.reversal and side.direction_disagrees


def test_agreeing_protocols_are_not_flagged():
    ann, comp = np.arange(30), np.full(30, "c")
    rng = np.random.default_rng(1)
    spa_res = pf.spa(ann, comp, np.clip(rng.normal(0.7, 0.1, 30), 0, 1))
    likert = pf.likert_paired(ann, comp, rng.integers(3, 6, 30), rng.integers(1, 4, 30))
    (side,) = pf.compare_protocols(spa_res, likert)
    assert not side.reversal and not side.direction_disagrees


# --------------------------------------------------------------------------- Bradley-Terry


def bt_data(seed=0, n=4000, theta=(-1.0, -0.3, 0.2, 1.1), tie_rate=0.0, left_bias=0.0):
    rng = np.random.default_rng(seed)
    theta = np.asarray(theta)
    s = theta.size
    a = rng.integers(0, s, n)
    b = (a + rng.integers(1, s, n)) % s
    p_a = 1 / (1 + np.exp(theta[b] - theta[a] - left_bias))
    choice = np.where(rng.random(n) < p_a, "left", "right")
    choice = np.where(rng.random(n) < tie_rate, "tie", choice)
    raters = rng.integers(0, 10, n)
    return np.arange(n), raters, a, b, choice, theta - theta.mean()


def direct_mle(a, b, choice, n_sys, davidson=False):
    """Bradley-Terry / Davidson MLE by scipy.optimize on the raw judgments."""
    left_w, right_w, tie = choice == "left", choice == "right", choice == "tie"

    def nll(x):
        th = np.append(x[: n_sys - 1], 0.0)
        ta, tb = th[a], th[b]
        if davidson:
            nu = np.exp(x[-1])
            log_d = np.log(np.exp(ta) + np.exp(tb) + nu * np.exp((ta + tb) / 2))
            ll = left_w * ta + right_w * tb + tie * (x[-1] + (ta + tb) / 2) - log_d
        else:
            log_d = np.logaddexp(ta, tb)
            ll = (left_w + 0.5 * tie) * (ta - log_d) + (right_w + 0.5 * tie) * (tb - log_d)
        return -ll.sum()

    x0 = np.zeros(n_sys - 1 + (1 if davidson else 0))
    res = optimize.minimize(nll, x0, method="BFGS", options={"gtol": 1e-9})
    th = np.append(res.x[: n_sys - 1], 0.0)
    return th - th.mean(), (np.exp(res.x[-1]) if davidson else None)


def test_bradley_terry_equals_a_direct_mle():
    items, raters, a, b, choice, _ = bt_data()
    r = pf.bradley_terry(items, raters, a, b, choice, n_boot=0)
    ref, _ = direct_mle(a, b, choice, 4)
    np.testing.assert_allclose(r.strength_values, ref, atol=1e-5)


def test_bradley_terry_equals_hunters_mm_algorithm():
    # crowd-kit's BradleyTerry is not used as the reference: in crowd-kit 1.4.2 its p_old
    # aliases p_new, so it stops after two MM iterations, far from the MLE.
    items, raters, a, b, choice, _ = bt_data(seed=1)
    r = pf.bradley_terry(items, raters, a, b, choice, n_boot=0)
    wins = np.zeros((4, 4))
    np.add.at(wins, (np.where(choice == "left", a, b), np.where(choice == "left", b, a)), 1)
    games = wins + wins.T
    p = np.ones(4)
    for _ in range(5000):  # Hunter (2004), eq. 3: p_i = W_i / sum_j n_ij / (p_i + p_j)
        p = wins.sum(axis=1) / (games / (p[:, None] + p[None, :])).sum(axis=1)
        p /= p.sum()
    log_p = np.log(p)
    np.testing.assert_allclose(r.strength_values, log_p - log_p.mean(), atol=1e-8)


def test_bradley_terry_recovers_known_strengths_within_the_bootstrap_interval():
    items, raters, a, b, choice, true = bt_data(seed=2, n=6000)
    r = pf.bradley_terry(items, raters, a, b, choice, n_boot=300, seed=1)
    assert np.all((r.ci_low <= true) & (true <= r.ci_high))
    assert r.n_boot_used == 300


def test_ties_count_as_half_a_win_each():
    items, raters, a, b, choice, _ = bt_data(seed=3, tie_rate=0.25)
    r = pf.bradley_terry(items, raters, a, b, choice, n_boot=0)
    ref, _ = direct_mle(a, b, choice, 4)
    np.testing.assert_allclose(r.strength_values, ref, atol=1e-5)
    assert r.n_ties == np.count_nonzero(choice == "tie")


def test_davidson_ties_equal_a_direct_mle():
    items, raters, a, b, choice, _ = bt_data(seed=4, tie_rate=0.25)
    r = pf.bradley_terry(items, raters, a, b, choice, ties="davidson", n_boot=0)
    ref, nu = direct_mle(a, b, choice, 4, davidson=True)
    np.testing.assert_allclose(r.strength_values, ref, atol=1e-5)
    assert r.tie_parameter == pytest.approx(nu, rel=1e-4)


def test_a_system_that_never_wins_has_no_finite_strength():
    a = np.array([0, 0, 1, 1, 2])
    b = np.array([1, 2, 2, 0, 0])
    choice = np.array(["left", "left", "left", "right", "right"])  # 2 never wins
    r = pf.bradley_terry(np.arange(5), np.zeros(5), a, b, choice, n_boot=0)
    assert np.isnan(r.strength_values).all() and "no finite MLE" in r.reason


def test_position_bias_is_the_share_of_left_among_non_tie_judgments():
    items, raters, a, b, choice, _ = bt_data(seed=5, n=3000, theta=(0, 0, 0), left_bias=1.5)
    choice = np.where(raters == 0, "left", choice)  # rater 0 always picks left
    r = pf.bradley_terry(items, raters, a, b, choice, n_boot=0)
    bias = r.position_bias
    assert bias.shares[0] == 1.0 and bias.p[0] < 1e-10
    expected = np.mean(choice[raters == 3] == "left")
    assert bias.shares[3] == pytest.approx(expected)
    assert bias.overall_share_left > 0.75


def test_an_unknown_choice_is_rejected():
    with pytest.raises(ValueError, match="choice"):
        pf.bradley_terry([1], [1], ["x"], ["y"], ["both"])


# --------------------------------------------------------------------------- power


@pytest.mark.parametrize(("effect", "n", "alpha"), [(0.5, 20, 0.05), (0.2, 90, 0.001)])
def test_power_equals_statsmodels(effect, n, alpha):
    r = pf.power(effect, n, alpha)
    assert r.power == pytest.approx(TTestPower().power(effect, n, alpha), rel=1e-9)


def test_n_for_power_point_eight_is_the_smallest_integer_reaching_it():
    r = pf.power(0.5, 10, 0.05)
    exact = TTestPower().solve_power(0.5, power=0.8, alpha=0.05)
    assert r.n_for_target == np.ceil(exact)
    assert pf.power(0.5, int(r.n_for_target) - 1, 0.05).power < 0.8


def test_zero_effect_has_power_alpha_and_no_sample_size():
    r = pf.power(0.0, 30, 0.05)
    assert r.power == pytest.approx(0.05)
    assert np.isnan(r.n_for_target) and r.reason
