"""analysis.preference's Newton fit of Bradley-Terry where it is hardest: a long chain of systems
(slow for any damped step), a Davidson fit whose full Newton step overshoots (the step-halving),
and fits running off to infinity, whose Hessian turns singular in floating point.

References: the closed-form MLE of a tree of comparisons (each pair's fitted share equals its
observed share); scipy.optimize on the Davidson log-likelihood written out here. No database.
"""

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import logsumexp

from analysis import preference as pf

NO_CI = "fewer than two usable bootstrap replicates: no CI"
NOT_CONVERGED = (
    "no finite MLE: the fit does not converge (with ties='davidson', a system that "
    "ties and loses but never wins mostly has none)"
)


def judgments(spec):
    """bradley_terry's arguments from {(left, right): (left wins, right wins, ties)}."""
    left, right, choice = [], [], []
    for (a, b), (wins, losses, ties) in spec.items():
        n = wins + losses + ties
        left += [a] * n
        right += [b] * n
        choice += ["left"] * wins + ["right"] * losses + ["tie"] * ties
    return np.arange(len(left)), np.zeros(len(left)), left, right, choice


def davidson_log_likelihood(spec, theta, log_nu):
    """Davidson (1970) per judgment: P[a wins] = pi_a / D, P[tie] = nu sqrt(pi_a pi_b) / D."""
    total = 0.0
    for (a, b), (wins, losses, ties) in spec.items():
        ta, tb = theta[a], theta[b]
        tie = log_nu + (ta + tb) / 2
        log_d = logsumexp([ta, tb, tie])
        total += wins * (ta - log_d) + losses * (tb - log_d) + ties * (tie - log_d)
    return total


@pytest.mark.parametrize("outcomes", [(2, 1, 0), (3, 1, 2)])  # with ties: 4 to 2 in the half model
def test_a_chain_of_ten_systems_compared_only_with_their_neighbours_has_its_closed_form_mle(
    outcomes,
):
    # A tree of comparisons: the MLE fits each pair's share exactly, so every step down the
    # chain is log 2. Newton takes a handful of steps; a damped step (a ridge of 1 on the
    # Hessian) needs thousands, the chain's smallest curvature being about (pi / 10)^2.
    names = [f"s{i}" for i in range(10)]
    spec = {(names[i], names[i + 1]): outcomes for i in range(9)}
    r = pf.bradley_terry(*judgments(spec), n_boot=0)
    assert r.converged and r.reason == NO_CI
    expected = -np.log(2) * np.arange(10)
    expected -= expected.mean()
    np.testing.assert_allclose([r.strengths[s] for s in names], expected, atol=1e-9)


# "a" never wins, yet the MLE is finite: it ties "b" and "d", and "d" only ties. Newton's full
# step from zero lowers the likelihood here and there (by a fraction of it, by many times it); the
# step is halved until it does not, once or several times; without that, the fit runs off.
def overshoot(a_c, a_d, b_c, c_d):
    return {
        ("a", "b"): (0, 0, 1),
        ("a", "c"): a_c,
        ("a", "d"): (0, 0, a_d),
        ("b", "c"): b_c,
        ("c", "d"): (0, 0, c_d),
    }


OVERSHOOTS = [
    overshoot((0, 1375, 3), 2, (71, 0, 11), 389),  # halved once
    overshoot((0, 1279, 3), 5, (84, 0, 2), 892),  # halved three times in one step
    overshoot((0, 12441, 2), 2, (49, 0, 12), 74),  # a step 10 % worse than where it started
]


@pytest.mark.parametrize("spec", OVERSHOOTS)
def test_a_davidson_fit_whose_full_newton_step_overshoots_still_reaches_the_mle(spec):
    r = pf.bradley_terry(*judgments(spec), ties="davidson", n_boot=0)
    assert r.converged and r.reason == NO_CI
    theta, log_nu = r.strengths, np.log(r.tie_parameter)
    assert r.log_likelihood == pytest.approx(
        davidson_log_likelihood(spec, theta, log_nu), rel=1e-10
    )
    # scipy from zero, on the log-likelihood written out above: no higher, and at the same point
    systems = ["a", "b", "c", "d"]

    def negative(v):
        return -davidson_log_likelihood(spec, dict(zip(systems, v[:4], strict=True)), v[4])

    ref = minimize(negative, np.zeros(5), method="BFGS", options={"gtol": 1e-10})
    assert r.log_likelihood >= -ref.fun - 1e-9
    ref_theta = ref.x[:4] - ref.x[:4].mean()  # the likelihood is shift-invariant
    np.testing.assert_allclose([theta[s] for s in systems], ref_theta, atol=1e-2)
    assert log_nu == pytest.approx(ref.x[4], abs=1e-2)
    assert theta["a"] < -25 and log_nu > 10  # far from the start: the case the halving is for


# "c" never wins: 4 and 2,331 losses, 557 and 10,219 ties. The fit runs off to infinity, its
# probabilities reach exactly 0 and 1, and the Hessian is singular in floating point.
SINGULAR = {("a", "c"): (4, 0, 557), ("b", "c"): (2331, 0, 10219)}


@pytest.mark.parametrize("n_boot", [0, 20])
def test_a_davidson_fit_whose_curvature_vanishes_says_there_is_no_finite_mle(n_boot):
    r = pf.bradley_terry(*judgments(SINGULAR), ties="davidson", n_boot=n_boot)
    assert not r.converged and r.reason == NOT_CONVERGED
    assert np.isnan(r.strength_values).all() and np.isnan(r.tie_parameter)
    assert np.isnan(r.ci_low).all() and r.n_boot_used == 0


def test_a_replicate_whose_hessian_turns_singular_leaves_the_others_as_they_would_be_alone():
    design = pf._bt_design(np.array([0, 1]), np.array([2, 2]), 3, davidson=True)
    good = np.array([[4.0, 1.0, 5.0], [3.0, 2.0, 6.0]])
    bad = np.array([[4.0, 0.0, 557.0], [2331.0, 0.0, 10219.0]])  # SINGULAR's cells
    x, ll, converged = pf._bt_fit(design, np.stack([good, bad, good]), 3)
    alone_x, alone_ll, alone_converged = pf._bt_fit(design, good[None], 3)
    assert converged.tolist() == [True, False, True] and alone_converged.tolist() == [True]
    np.testing.assert_allclose(x[[0, 2]], alone_x[[0, 0]], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(ll[[0, 2]], alone_ll[[0, 0]], rtol=1e-12)


def test_newton_steps_are_solved_per_replicate_and_a_singular_one_gets_none():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(3, 4, 4))
    hess = a @ a.transpose(0, 2, 1) + np.eye(4)
    grad = rng.normal(size=(3, 4))
    alone = np.stack([np.linalg.solve(hess[i], grad[i]) for i in range(3)])
    steps, singular = pf._newton_steps(hess, grad)
    np.testing.assert_allclose(steps, alone, rtol=1e-12)
    assert singular.tolist() == [False, False, False]
    hess[1] = 0.0
    steps, singular = pf._newton_steps(hess, grad)
    assert singular.tolist() == [False, True, False]
    np.testing.assert_allclose(steps[[0, 2]], alone[[0, 2]], rtol=1e-12)
    assert steps[1].tolist() == [0.0] * 4
