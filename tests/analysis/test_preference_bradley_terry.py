"""analysis.preference.bradley_terry at its edges: a published example, the fields, the existence
condition, the Davidson tie model and the percentile bootstrap.

References: Agresti, Categorical Data Analysis (2nd ed., 2002), sec. 10.6 (1987 American League
East baseball); statsmodels' logistic GLM on the same judgments; the closed-form MLE of two
systems (theta_a - theta_b = log(w_a / w_b)). No database.
"""

import numpy as np
import pytest
import statsmodels.api as sm

from analysis import preference as pf

TEAMS = ["Milwaukee", "Detroit", "Toronto", "New York", "Boston", "Cleveland", "Baltimore"]
# Agresti (2002), Table 10.10: wins of the row team over the column team, 13 games a pair.
WINS_1987 = np.array(
    [
        [0, 7, 9, 7, 7, 9, 11],
        [6, 0, 7, 5, 11, 9, 9],
        [4, 6, 0, 7, 7, 8, 12],
        [6, 8, 6, 0, 6, 7, 10],
        [6, 2, 6, 7, 0, 7, 12],
        [4, 4, 5, 6, 6, 0, 6],
        [2, 4, 1, 3, 1, 7, 0],
    ]
)
# Agresti's fitted strengths (log scale, Baltimore = 0), to the two decimals printed.
AGRESTI_1987 = [1.58, 1.44, 1.29, 1.25, 1.11, 0.68, 0.00]
NO_CI = "fewer than two usable bootstrap replicates: no CI"  # the reason whenever n_boot < 2


def baseball_judgments(seed=0):
    """One judgment a game; the winner on the left or the right at random."""
    winner, loser = np.nonzero(WINS_1987)
    games = WINS_1987[winner, loser]
    winner, loser = np.repeat(winner, games), np.repeat(loser, games)
    on_left = np.random.default_rng(seed).random(winner.size) < 0.5
    left = np.where(on_left, winner, loser)
    right = np.where(on_left, loser, winner)
    choice = np.where(on_left, "left", "right")
    return np.array(TEAMS)[left], np.array(TEAMS)[right], choice


def test_bradley_terry_reproduces_agrestis_1987_baseball_strengths():
    left, right, choice = baseball_judgments()
    r = pf.bradley_terry(np.arange(left.size), np.zeros(left.size), left, right, choice, n_boot=0)
    s = r.strengths
    assert [round(s[t] - s["Baltimore"], 2) for t in TEAMS] == AGRESTI_1987
    assert sum(s.values()) == pytest.approx(0.0, abs=1e-12)
    assert r.converged and r.reason == NO_CI


def test_strengths_and_log_likelihood_equal_statsmodels_logistic_glm():
    # P[left wins] = logistic(theta_left - theta_right): a GLM without intercept on +1/-1 columns
    left, right, choice = baseball_judgments(seed=3)
    r = pf.bradley_terry(np.arange(left.size), np.zeros(left.size), left, right, choice, n_boot=0)
    codes = {t: j for j, t in enumerate(r.systems.tolist())}
    x = np.zeros((left.size, len(TEAMS)))
    x[np.arange(left.size), [codes[t] for t in left]] += 1.0
    x[np.arange(left.size), [codes[t] for t in right]] -= 1.0
    fit = sm.GLM((choice == "left").astype(float), x[:, 1:], family=sm.families.Binomial()).fit()
    theta = np.append(0.0, fit.params)  # the first system is the GLM's reference
    np.testing.assert_allclose(r.strength_values, theta - theta.mean(), atol=1e-8)
    assert r.log_likelihood == pytest.approx(fit.llf, rel=1e-10)


def test_the_result_counts_what_it_was_given():
    items = [10, 10, 11, 12, 12, 12]  # three prompts, judged 2, 1 and 3 times
    left = ["b", "a", "c", "a", "b", "c"]
    right = ["a", "c", "b", "b", "c", "a"]
    choice = ["left", "tie", "right", "left", "tie", "right"]
    r = pf.bradley_terry(items, [1, 2, 1, 2, 1, 2], left, right, choice, n_boot=0)
    assert r.systems.tolist() == ["a", "b", "c"]
    assert list(r.strengths) == ["a", "b", "c"]
    assert (r.n_judgments, r.n_ties, r.n_items, r.n_boot, r.n_boot_used) == (6, 2, 3, 0, 0)
    assert r.ties == "half" and np.isnan(r.tie_parameter)
    assert r.converged and r.reason == NO_CI
    assert np.isnan(r.ci_low).all() and np.isnan(r.ci_high).all()


def two_systems(k, n, ties=0):
    """n judgments of "x" (left) against "y" (right): x wins k, y wins n - k - ties."""
    choice = ["left"] * k + ["tie"] * ties + ["right"] * (n - k - ties)
    return np.arange(n), np.zeros(n), ["x"] * n, ["y"] * n, choice


def test_two_systems_have_the_closed_form_strengths():
    r = pf.bradley_terry(*two_systems(7, 10), n_boot=0)  # x 7, y 3
    half_gap = 0.5 * np.log(7 / 3)
    assert r.strength_values.tolist() == pytest.approx([half_gap, -half_gap], abs=1e-9)
    assert r.log_likelihood == pytest.approx(7 * np.log(0.7) + 3 * np.log(0.3), rel=1e-10)
    ties = pf.bradley_terry(*two_systems(5, 10, ties=2), n_boot=0)  # x 5 + 1, y 3 + 1
    assert ties.strengths["x"] == pytest.approx(0.5 * np.log(6 / 4), abs=1e-9)


def test_davidson_on_two_systems_has_the_closed_form_tie_parameter():
    # saturated: pi_x / pi_y = w_x / w_y and nu = ties / sqrt(w_x w_y) (Davidson 1970)
    r = pf.bradley_terry(*two_systems(6, 11, ties=2), ties="davidson", n_boot=0)  # 6, 2 ties, 3
    assert r.strengths["x"] == pytest.approx(0.5 * np.log(6 / 3), abs=1e-8)
    assert r.tie_parameter == pytest.approx(2 / np.sqrt(18), rel=1e-8)
    assert r.ties == "davidson" and r.converged and r.n_ties == 2


@pytest.mark.parametrize("n_sys", [3, 4, 5, 8])
def test_a_cycle_where_each_system_beats_the_next_has_equal_finite_strengths(n_sys):
    # strongly connected only through the whole cycle: a path of n_sys - 1 steps
    a = np.arange(n_sys)
    b = (a + 1) % n_sys
    r = pf.bradley_terry(a, a, a, b, ["left"] * n_sys, n_boot=0)
    assert r.reason == NO_CI and r.converged
    np.testing.assert_allclose(r.strength_values, 0.0, atol=1e-9)


def test_no_finite_mle_says_how_many_strongly_connected_parts_the_graph_has():
    a = np.array([0, 0, 1, 1, 2])
    b = np.array([1, 2, 2, 0, 0])
    choice = ["left", "left", "left", "right", "right"]  # 0 beats 1 and 2, 1 beats 2
    r = pf.bradley_terry(np.arange(5), np.zeros(5), a, b, choice, n_boot=20)
    assert r.reason == (
        "no finite MLE: the 'beats or ties' graph has 3 strongly connected parts "
        "(a system never wins or never loses)"
    )
    assert np.isnan(r.strength_values).all() and np.isnan(r.log_likelihood)
    assert np.isnan(r.ci_low).all() and np.isnan(r.ci_high).all()
    assert not r.converged and r.n_boot_used == 0


def test_a_tie_joins_two_systems_in_the_half_model():
    # x never wins but ties once: as half a win, x beats-or-ties y, so the MLE exists
    r = pf.bradley_terry(*two_systems(0, 4, ties=1), n_boot=0)
    assert r.reason == NO_CI
    assert r.strengths["x"] == pytest.approx(0.5 * np.log(0.5 / 3.5), abs=1e-9)


def test_davidson_without_ties_says_to_use_the_half_model():
    r = pf.bradley_terry(*two_systems(6, 10), ties="davidson", n_boot=30)
    assert r.reason == "no ties: the Davidson tie parameter is 0; use ties='half'"
    assert np.isnan(r.strength_values).all() and np.isnan(r.tie_parameter)
    assert r.n_boot_used == 0


def test_one_bootstrap_replicate_gives_no_interval_and_says_why():
    r = pf.bradley_terry(*two_systems(7, 10), n_boot=1)
    assert r.reason == NO_CI
    assert np.isnan(r.ci_low).all() and np.isnan(r.ci_high).all()
    assert np.isfinite(r.strength_values).all() and r.n_boot == 1


def closed_form_replicates(k, n, n_boot, seed, ties=0):
    """The two-system bootstrap by hand: the judgments resampled as one multinomial draw of the
    (x wins, y wins, tie) counts, each replicate's MLE in closed form (half model)."""
    cells = np.array([k, n - k - ties, ties], dtype=float)
    draws = np.random.default_rng(seed).multinomial(n, cells / n, size=n_boot)
    x, y, t = draws[:, 0] + 0.5 * draws[:, 2], draws[:, 1] + 0.5 * draws[:, 2], draws[:, 2]
    usable = (draws[:, 0] + t > 0) & (draws[:, 1] + t > 0)
    gap = 0.5 * np.log(x[usable] / y[usable])
    return np.column_stack([gap, -gap])


@pytest.mark.parametrize(("confidence", "ties"), [(0.95, 0), (0.8, 0), (0.5, 1)])
def test_the_interval_is_the_percentile_bootstrap_of_the_mle(confidence, ties):
    # 5 of 6 for x: a third of the resamples have x winning all (no finite MLE) unless tied
    r = pf.bradley_terry(*two_systems(5, 6 + ties, ties), n_boot=200, seed=4, confidence=confidence)
    boot = closed_form_replicates(5, 6 + ties, 200, seed=4, ties=ties)
    tail = (1 - confidence) / 2 * 100
    np.testing.assert_allclose(r.ci_low, np.percentile(boot, tail, axis=0), atol=1e-8)
    np.testing.assert_allclose(r.ci_high, np.percentile(boot, 100 - tail, axis=0), atol=1e-8)
    assert r.n_boot_used == boot.shape[0] < 200 and r.n_boot == 200
    assert r.reason == ""


def test_the_bootstrap_defaults_to_a_thousand_replicates_from_seed_zero():
    r = pf.bradley_terry(*two_systems(5, 6))
    boot = closed_form_replicates(5, 6, 1000, seed=0)
    assert r.n_boot == 1000 and r.n_boot_used == boot.shape[0]
    np.testing.assert_allclose(r.ci_low, np.percentile(boot, 2.5, axis=0), atol=1e-8)
    np.testing.assert_allclose(r.ci_high, np.percentile(boot, 97.5, axis=0), atol=1e-8)


def test_davidson_leaves_out_the_resamples_without_a_tie():
    # one tie in 30 judgments: about (29/30)^30 = 36 % of the resamples draw none
    data = two_systems(17, 30, ties=1)
    davidson = pf.bradley_terry(*data, ties="davidson", n_boot=60, seed=2)
    draws = np.random.default_rng(2).multinomial(30, np.array([17, 12, 1]) / 30, size=60)
    assert davidson.n_boot_used == np.count_nonzero(draws[:, 2]) < 60
    assert pf.bradley_terry(*data, n_boot=60, seed=2).n_boot_used == 60


def two_judgments():
    """Two valid judgments of x against y, as keyword arguments."""
    return {
        "items": [1, 2],
        "raters": [1, 1],
        "left": ["x", "x"],
        "right": ["y", "y"],
        "choice": ["left", "right"],
    }


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"items": []}, r"^items: no judgments given$"),
        ({"raters": [1]}, r"^raters: length 1 differs from items length 2$"),
        ({"choice": ["left"]}, r"^choice: length 1 differs from items length 2$"),
        ({"ties": "both"}, r"^ties: expected 'half' or 'davidson', got 'both'$"),
        ({"n_boot": -1}, r"^n_boot: expected an integer >= 0, got -1$"),
        ({"n_boot": 10.0}, r"^n_boot: expected an integer >= 0, got 10.0$"),
        ({"confidence": 1.0}, r"^confidence: expected a number in \(0, 1\), got 1.0$"),
        ({"confidence": 0}, r"^confidence: expected a number in \(0, 1\), got 0$"),
        (
            {"choice": ["left", "both"]},
            r"^choice: expected 'left', 'right' or 'tie', got \['both'\]$",
        ),
        ({"right": ["y", "x"]}, r"^right: a judgment compares a system with itself$"),
    ],
)
def test_bradley_terry_refuses_bad_input_naming_the_argument(kwargs, message):
    args = two_judgments() | kwargs
    if kwargs.get("items") == []:
        args = dict.fromkeys(("items", "raters", "left", "right", "choice"), [])
    args.setdefault("n_boot", 0)
    with pytest.raises(ValueError, match=message):
        pf.bradley_terry(**args)


def test_the_bad_choices_are_listed_once_each_and_at_most_five():
    bad = ["w", "v", "w", "u", "t", "s", "r", "left"]
    n = len(bad)
    with pytest.raises(ValueError, match=r"got \['r', 's', 't', 'u', 'v'\]$"):
        pf.bradley_terry(range(n), [0] * n, ["x"] * n, ["y"] * n, bad, n_boot=0)


def test_a_numpy_integer_n_boot_is_accepted():
    assert pf.bradley_terry(*two_systems(7, 10), n_boot=np.int64(3)).n_boot == 3


def test_davidson_ties_do_not_make_a_system_that_never_loses_estimable():
    # a beats b twice, b and c tie twice: a never loses, so no finite MLE despite the ties
    left, right = ["a", "a", "b", "b"], ["b", "b", "c", "c"]
    choice = ["left", "left", "tie", "tie"]
    r = pf.bradley_terry(range(4), [0] * 4, left, right, choice, ties="davidson", n_boot=0)
    assert r.reason.startswith("no finite MLE: the 'beats or ties' graph has 2 strongly")
    assert np.isnan(r.strength_values).all() and np.isnan(r.tie_parameter)


def test_two_usable_replicates_are_enough_for_an_interval():
    r = pf.bradley_terry(*two_systems(5, 10), n_boot=2, seed=0)
    boot = closed_form_replicates(5, 10, 2, seed=0)
    assert r.n_boot_used == 2 and r.reason == ""
    np.testing.assert_allclose(r.ci_low, np.percentile(boot, 2.5, axis=0), atol=1e-8)


def test_the_log_likelihood_is_the_datas_also_with_a_bootstrap():
    r = pf.bradley_terry(*two_systems(7, 10), n_boot=5)
    assert r.log_likelihood == pytest.approx(7 * np.log(0.7) + 3 * np.log(0.3), rel=1e-10)
    assert r.reason == "" and r.converged


@pytest.mark.parametrize("column", ["items", "raters", "left", "right", "choice"])
def test_a_column_with_a_missing_value_is_named(column):
    args = two_judgments()
    args[column] = [args[column][0], None]
    with pytest.raises(ValueError, match=rf"^{column}: contains None at row 1"):
        pf.bradley_terry(**args, n_boot=0)


@pytest.mark.parametrize("column", ["left", "right"])
def test_a_system_column_of_another_length_is_named(column):
    args = {"left": ["x", "x"], "right": ["y", "y"]}
    args[column] = ["x"] if column == "left" else ["y"]
    with pytest.raises(ValueError, match=rf"^{column}: length 1 differs from items length 2$"):
        pf.bradley_terry([1, 2], [1, 1], choice=["left", "right"], n_boot=0, **args)


def test_system_and_rater_ids_that_cannot_be_sorted_are_refused():
    mixed = np.array([1, "a"], dtype=object)
    with pytest.raises(ValueError, match=r"^left: values must be mutually comparable"):
        pf.bradley_terry([1, 2], [1, 1], mixed, ["y", "y"], ["left", "left"], n_boot=0)
    with pytest.raises(ValueError, match=r"^raters: values must be mutually comparable"):
        pf.bradley_terry([1, 2], mixed, ["x", "x"], ["y", "y"], ["left", "left"], n_boot=0)


def test_a_first_replicate_without_an_mle_does_not_void_the_interval():
    # seed 2: the first resample has x winning all six (no finite MLE), later ones do not
    r = pf.bradley_terry(*two_systems(5, 6), n_boot=50, seed=2)
    boot = closed_form_replicates(5, 6, 50, seed=2)
    assert r.n_boot_used == boot.shape[0] < 50 and r.reason == ""
    np.testing.assert_allclose(r.ci_high, np.percentile(boot, 97.5, axis=0), atol=1e-8)


def test_a_single_win_joins_two_systems_in_the_count_of_parts():
    # a and b beat each other once (one part), c never wins (another)
    left, right = ["a", "b", "a"], ["b", "a", "c"]
    r = pf.bradley_terry(range(3), [0] * 3, left, right, ["left"] * 3, n_boot=0)
    assert r.reason.startswith("no finite MLE: the 'beats or ties' graph has 2 strongly")


def test_valid_choices_are_not_listed_among_the_bad_ones():
    choice = ["right", "tie", "left", "nope"]
    with pytest.raises(ValueError, match=r"got \['nope'\]$"):
        pf.bradley_terry(range(4), [0] * 4, ["x"] * 4, ["y"] * 4, choice, n_boot=0)


def test_davidson_has_no_finite_strength_for_a_system_that_ties_and_loses_but_never_wins():
    # x: 3 losses and 2 ties. The likelihood keeps rising as pi_x -> 0 with nu sqrt(pi_x) held:
    # no finite MLE, although each system beats or ties the other (the half model's condition).
    r = pf.bradley_terry(*two_systems(0, 5, ties=2), ties="davidson", n_boot=50)
    assert r.reason == (
        "no finite MLE: the fit does not converge (with ties='davidson', a system that "
        "ties and loses but never wins mostly has none)"
    )
    assert np.isnan(r.strength_values).all() and np.isnan(r.tie_parameter)
    assert np.isnan(r.log_likelihood) and not r.converged
    assert np.isnan(r.ci_low).all() and np.isnan(r.ci_high).all()
    half = pf.bradley_terry(*two_systems(0, 5, ties=2), n_boot=0)  # finite as half a win each
    assert half.strengths["x"] == pytest.approx(0.5 * np.log(1 / 4), abs=1e-9)


def test_davidson_leaves_out_the_replicates_without_a_finite_strength():
    # a and b both win; b and c only tie (finite: the tie share is largest at pi_b = pi_c).
    left = ["a", "b", "a", "b", "b", "b"]
    right = ["b", "a", "b", "a", "c", "c"]
    choice = ["left", "left", "tie", "right", "tie", "tie"]
    r = pf.bradley_terry(range(6), [0] * 6, left, right, choice, ties="davidson", n_boot=60)
    assert r.converged and r.reason == ""
    assert r.strengths["b"] == pytest.approx(r.strengths["c"], abs=1e-8)
    # every replicate kept has a finite fit: its interval is made of finite strengths
    assert 0 < r.n_boot_used < 60
    assert np.isfinite(r.ci_low).all() and np.isfinite(r.ci_high).all()
    assert np.all(np.abs(r.ci_high) < 10)  # a diverging fit runs past 15 within 200 steps
