"""Tests for analysis.labelmodels: votes, soft labels and Dawid-Skene EM.

Reference values: Dawid & Skene (1979) data, an independent loop-based EM, crowd-kit.
"""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from crowdkit.aggregation import DawidSkene, MajorityVote

from analysis import labelmodels as lm

DATA = Path(__file__).parent / "data" / "dawid_skene_1979.csv"


def load_1979():
    rows = [line for line in DATA.read_text().splitlines() if not line.startswith("#")]
    assert rows[0] == "patient,observer,response"
    table = np.array([row.split(",") for row in rows[1:]], dtype=int)
    return table[:, 0], table[:, 1], table[:, 2]


def loop_em(items, raters, labels, n_iter):
    """Straightforward Dawid-Skene EM with Python loops (independent reference, eq. 2.3-2.5)."""
    pats, obs, cls = np.unique(items), np.unique(raters), np.unique(labels)
    counts = np.zeros((pats.size, obs.size, cls.size))
    for i, j, lab in zip(items, raters, labels, strict=True):
        counts[np.searchsorted(pats, i), np.searchsorted(obs, j), np.searchsorted(cls, lab)] += 1
    t = counts.sum(axis=1) / counts.sum(axis=(1, 2))[:, None]  # eq. 3.1
    for _ in range(n_iter + 1):
        priors = t.mean(axis=0)
        err = np.zeros((obs.size, cls.size, cls.size))
        for j in range(obs.size):
            for k in range(cls.size):
                for lab in range(cls.size):
                    err[j, k, lab] = np.dot(t[:, k], counts[:, j, lab])
                err[j, k] /= err[j, k].sum()
        new_t = np.zeros_like(t)
        for i in range(pats.size):
            for k in range(cls.size):
                v = priors[k]
                for j in range(obs.size):
                    for lab in range(cls.size):
                        v *= err[j, k, lab] ** counts[i, j, lab]
                new_t[i, k] = v
            new_t[i] /= new_t[i].sum()
        last_t, t = t, new_t
    return last_t, priors, err


def simulate(seed, n_items=300, n_raters=8, k=3, per_item=4, rates=None, priors=None):
    """Seeded design: each item gets `per_item` distinct random raters."""
    rng = np.random.default_rng(seed)
    priors = rng.dirichlet(np.full(k, 3.0)) if priors is None else np.asarray(priors)
    if rates is None:
        rates = np.stack(
            [
                rng.dirichlet(np.ones(k) + 6 * np.eye(k)[c])
                for _ in range(n_raters)
                for c in range(k)
            ]
        ).reshape(n_raters, k, k)
    truth = rng.choice(k, size=n_items, p=priors)
    picks = np.argsort(rng.random((n_items, n_raters)), axis=1)[:, :per_item]
    items = np.repeat(np.arange(n_items), per_item)
    raters = picks.ravel()
    cum = rates[raters, truth[items]].cumsum(axis=1)
    labels = (rng.random(items.size)[:, None] > cum).sum(axis=1)
    return items, raters, np.minimum(labels, k - 1), truth


def crowdkit_frame(items, raters, labels):
    return pd.DataFrame({"task": items, "worker": raters, "label": labels})


# --------------------------------------------------------------------------- votes


def test_majority_vote_takes_the_most_frequent_label():
    r = lm.majority_vote([1, 1, 1, 2, 2, 2], ["a", "b", "c", "a", "b", "c"], [0, 0, 1, 2, 2, 2])
    assert r.labels == {1: 0, 2: 2}
    assert r.ties.size == 0


def test_random_tie_break_stays_within_the_tied_labels_and_flags_the_item():
    items = np.repeat(np.arange(200), 4)
    labels = np.tile([0, 0, 1, 1], 200)  # every item tied between 0 and 1; 2 is present elsewhere
    items = np.append(items, 999)
    labels = np.append(labels, 2)
    r = lm.majority_vote(items, np.zeros(items.size), labels, seed=3)
    chosen = r.item_labels[:200]
    assert set(chosen.tolist()) == {0, 1}
    assert r.tied[:200].all() and not r.tied[200]
    assert np.array_equal(r.ties, np.arange(200))


def test_random_tie_break_is_reproducible_for_a_seed():
    items, raters, labels = np.repeat(np.arange(50), 2), np.zeros(100), np.tile([0, 1], 50)
    a = lm.majority_vote(items, raters, labels, seed=7).item_labels
    b = lm.majority_vote(items, raters, labels, seed=7).item_labels
    c = lm.majority_vote(items, raters, labels, seed=8).item_labels
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_lowest_tie_break_takes_the_first_class():
    r = lm.majority_vote([1, 1, 2, 2], [0, 1, 0, 1], ["b", "c", "c", "b"], tie_break="lowest")
    assert r.labels == {1: "b", 2: "b"}


def test_shares_are_the_label_proportions_per_item():
    r = lm.majority_vote([1, 1, 1, 1], [0, 1, 2, 3], ["x", "x", "x", "y"])
    assert r.shares == {1: {"x": 0.75, "y": 0.25}}


@pytest.mark.parametrize("seed", range(20))
def test_majority_vote_matches_crowdkit(seed):
    items, raters, labels, _ = simulate(seed, k=2 + seed % 3)
    ours = lm.majority_vote(items, raters, labels, tie_break="lowest")
    ck = MajorityVote().fit(crowdkit_frame(items, raters, labels))
    probas = ck.probas_.loc[ours.items, ours.classes].to_numpy()
    np.testing.assert_allclose(ours.proportions, probas, atol=1e-12)
    untied = ~ours.tied
    ck_labels = ck.labels_.loc[ours.items].to_numpy()
    assert np.array_equal(ours.item_labels[untied], ck_labels[untied])


def test_weighted_vote_lets_a_heavy_rater_outvote_two_light_ones():
    r = lm.weighted_vote([1, 1, 1], ["a", "b", "c"], [0, 0, 1], {"a": 1.0, "b": 1.0, "c": 3.0})
    assert r.labels == {1: 1}
    np.testing.assert_allclose(r.proportions, [[0.4, 0.6]])


def test_weighted_vote_flags_items_whose_raters_all_have_weight_zero():
    r = lm.weighted_vote([1, 1, 2], ["a", "b", "a"], [0, 1, 1], {"a": 0.0, "b": 2.0})
    assert r.no_weight.tolist() == [False, True]
    assert np.isnan(r.proportions[1]).all()


def test_weighted_vote_rejects_a_rater_without_weight():
    with pytest.raises(ValueError, match="weights"):
        lm.weighted_vote([1, 1], ["a", "b"], [0, 1], {"a": 1.0})


def test_soft_labels_are_the_label_distribution_per_item():
    r = lm.soft_labels([1, 1, 1, 2], [0, 1, 2, 0], ["x", "y", "y", "x"])
    np.testing.assert_allclose(r.proportions, [[1 / 3, 2 / 3], [1.0, 0.0]])
    assert r.distributions[2] == {"x": 1.0, "y": 0.0}


def test_label_arrays_of_different_lengths_are_rejected_naming_the_argument():
    with pytest.raises(ValueError, match="raters"):
        lm.majority_vote([1, 2, 3], [0, 1], [0, 1, 1])


def test_a_nan_label_is_rejected():
    with pytest.raises(ValueError, match="labels"):
        lm.dawid_skene([1, 2], [0, 1], [0.0, np.nan])


# --------------------------------------------------------------------------- Dawid-Skene 1979


def test_1979_data_has_every_repeated_response():
    items, raters, labels = load_1979()
    assert items.size == 315  # 45 patients x (3 + 4) responses
    assert np.unique(items).size == 45
    assert np.count_nonzero(raters == 1) == 135


def test_1979_fit_equals_an_independent_loop_implementation():
    items, raters, labels = load_1979()
    ours = lm.dawid_skene(items, raters, labels, tol=0.0, max_iter=60)
    post, priors, err = loop_em(items, raters, labels, n_iter=60)
    np.testing.assert_allclose(ours.posteriors, post, atol=1e-10)
    np.testing.assert_allclose(ours.priors, priors, atol=1e-10)
    np.testing.assert_allclose(ours.error_rates, err, atol=1e-10)


def test_1979_fully_converged_estimates():
    # Converged EM from eq. 3.1 (values from this implementation, equal to the loop EM above;
    # the paper's tables could not be checked here beyond their rounded priors).
    items, raters, labels = load_1979()
    r = lm.dawid_skene(items, raters, labels, tol=1e-10, max_iter=1000)
    assert r.converged
    np.testing.assert_allclose(r.priors, [0.40, 0.42, 0.11, 0.07], atol=0.005)
    obs1 = r.confusion[1]
    np.testing.assert_allclose(obs1.sum(axis=1), 1.0)
    np.testing.assert_allclose(np.diag(obs1), [0.889, 0.876, 0.661, 0.444], atol=0.001)
    assert r.labels[2] == 4 and r.labels[11] == 4  # patients 2 and 11: class 4
    assert r.log_likelihood == pytest.approx(-192.8909, abs=1e-3)


def test_em_never_decreases_the_log_likelihood():
    items, raters, labels = load_1979()
    trace = lm.dawid_skene(items, raters, labels, tol=0.0, max_iter=40).log_likelihood_trace
    assert np.all(np.diff(trace) >= -1e-9)


# --------------------------------------------------------------------------- crowd-kit


@pytest.mark.parametrize("seed", range(20))
def test_dawid_skene_matches_crowdkit_at_equal_iterations(seed):
    items, raters, labels, _ = simulate(seed, n_items=150 + 20 * seed, k=2 + seed % 3)
    ours = lm.dawid_skene(items, raters, labels, tol=0.0, max_iter=7)
    ck = DawidSkene(n_iter=7, tol=-np.inf).fit(crowdkit_frame(items, raters, labels))
    probas = ck.probas_.loc[ours.items, ours.classes].to_numpy()
    np.testing.assert_allclose(ours.posteriors, probas, atol=1e-6)
    np.testing.assert_allclose(ours.priors, ck.priors_.loc[ours.classes].to_numpy(), atol=1e-6)


@pytest.mark.parametrize("seed", range(20))
def test_dawid_skene_matches_crowdkit_run_to_convergence(seed):
    # crowd-kit's own stopping rule (ELBO change) can stop early: give it our iteration count
    items, raters, labels, _ = simulate(seed, n_items=200 + 20 * seed, k=2 + seed % 3, per_item=5)
    ours = lm.dawid_skene(items, raters, labels, tol=1e-8, max_iter=5000)
    assert ours.converged
    ck = DawidSkene(n_iter=ours.n_iter, tol=-np.inf).fit(crowdkit_frame(items, raters, labels))
    probas = ck.probas_.loc[ours.items, ours.classes].to_numpy()
    np.testing.assert_allclose(ours.posteriors, probas, atol=1e-6)


# --------------------------------------------------------------------------- recovery


def recovery_design(seed=0, n_items=6000):
    k = 3
    good = np.array([[0.85, 0.10, 0.05], [0.08, 0.80, 0.12], [0.05, 0.15, 0.80]])
    spammer = np.full((k, k), 1 / k)
    always_first = np.tile([1.0, 0.0, 0.0], (k, 1))  # always says the majority class
    adversary = np.array([[0.05, 0.90, 0.05], [0.05, 0.05, 0.90], [0.90, 0.05, 0.05]])
    rates = np.stack([good] * 6 + [spammer, always_first, adversary])
    priors = np.array([0.5, 0.3, 0.2])
    items, raters, labels, truth = simulate(
        seed, n_items=n_items, n_raters=9, k=k, per_item=6, rates=rates, priors=priors
    )
    return items, raters, labels, truth, rates, priors


def test_recovery_of_priors_within_sampling_error():
    items, raters, labels, truth, _, priors = recovery_design()
    r = lm.dawid_skene(items, raters, labels)
    se = np.sqrt(priors * (1 - priors) / truth.size)
    assert np.all(np.abs(r.priors - priors) < 4 * se + 0.01)


def test_recovery_of_each_raters_confusion_matrix():
    items, raters, labels, _, rates, _ = recovery_design()
    r = lm.dawid_skene(items, raters, labels)
    # each rater sees ~4000 items: SE of a rate <= ~0.02 (true class counts >= ~800)
    np.testing.assert_allclose(r.error_rates, rates, atol=0.05)


def test_spammer_rows_come_back_uniform_and_the_adversary_is_detected():
    items, raters, labels, _, _, _ = recovery_design()
    r = lm.dawid_skene(items, raters, labels)
    np.testing.assert_allclose(r.confusion[6], 1 / 3, atol=0.05)
    assert np.all(np.diag(r.confusion[8]) < 0.15)


def test_dawid_skene_beats_majority_vote_on_accuracy_with_an_adversary():
    items, raters, labels, truth, _, _ = recovery_design()
    ds = lm.dawid_skene(items, raters, labels)
    mv = lm.majority_vote(items, raters, labels)
    assert np.mean(ds.item_labels == truth) > np.mean(mv.item_labels == truth) + 0.02


def test_a_rater_who_flags_everything_gets_near_zero_specificity():
    rng = np.random.default_rng(5)
    good = np.array([[0.9, 0.1], [0.15, 0.85]])
    flagger = np.array([[0.0, 1.0], [0.0, 1.0]])  # always says "positive"
    rates = np.stack([good] * 5 + [flagger])
    items, raters, labels, _ = simulate(
        int(rng.integers(1000)),
        n_items=3000,
        n_raters=6,
        k=2,
        per_item=4,
        rates=rates,
        priors=[0.7, 0.3],
    )
    r = lm.dawid_skene(items, raters, labels)
    specificity = r.confusion[5][0, 0]  # P(says negative | truly negative)
    sensitivity = r.confusion[5][1, 1]
    assert specificity < 0.01
    assert sensitivity > 0.99


# --------------------------------------------------------------------------- options


def test_majority_init_converges_to_a_fit_of_similar_likelihood():
    items, raters, labels, _ = simulate(11, n_items=500)
    a = lm.dawid_skene(items, raters, labels, init="proportions")
    b = lm.dawid_skene(items, raters, labels, init="majority")
    assert b.init == "majority" and b.converged
    assert b.log_likelihood == pytest.approx(a.log_likelihood, rel=1e-3)


def test_a_given_class_nobody_used_gets_prior_zero():
    r = lm.dawid_skene([1, 1, 2, 2], [0, 1, 0, 1], ["a", "a", "b", "b"], classes=["a", "b", "c"])
    assert r.classes.tolist() == ["a", "b", "c"]
    assert r.priors[2] == 0.0
    assert r.posteriors.shape == (2, 3)


def test_classes_missing_an_observed_label_are_rejected():
    with pytest.raises(ValueError, match="classes"):
        lm.dawid_skene([1, 2], [0, 0], ["a", "b"], classes=["a"])


def test_not_converging_within_max_iter_is_reported_with_a_reason():
    items, raters, labels, _ = simulate(2)
    r = lm.dawid_skene(items, raters, labels, tol=0.0, max_iter=3)
    assert not r.converged and r.n_iter == 3
    assert "max_iter" in r.reason


def test_smoothing_keeps_every_error_rate_positive():
    items, raters, labels = load_1979()
    r = lm.dawid_skene(items, raters, labels, smoothing=0.5)
    assert np.all(r.error_rates > 0)


def test_an_init_array_of_the_wrong_shape_is_rejected():
    with pytest.raises(ValueError, match="init"):
        lm.dawid_skene([1, 2], [0, 0], [0, 1], init=np.ones((3, 2)))


# --------------------------------------------------------------------------- E-step paths


def ragged_design(seed):
    """Items with 1 to 5 responses, repeated responses, and a few items with 40 (> 16)."""
    items, raters, labels, _ = simulate(seed, n_items=400, n_raters=10, k=3, per_item=5)
    rng = np.random.default_rng(seed)
    keep = rng.random(items.size) > 0.3
    again = rng.random(items.size) < 0.05
    many = np.repeat(np.arange(1000, 1004), 40)
    return (
        np.concatenate([items[keep], items[again], many]),
        np.concatenate([raters[keep], raters[again], np.tile(np.arange(10), 16)]),
        np.concatenate([labels[keep], labels[again], rng.integers(0, 3, many.size)]),
    )


@pytest.mark.parametrize("seed", range(6))
def test_product_path_of_the_e_step_equals_the_log_path(seed, monkeypatch):
    """Items with few responses multiply their gathered rates; others sum log-rates (sparse).
    Both must give the same fit, iteration by iteration."""
    items, raters, labels = ragged_design(seed)
    clamp = (np.array([0, 1, 1000]), labels[:3]) if seed % 2 else None
    fast = lm.dawid_skene(items, raters, labels, tol=0.0, max_iter=30, clamp=clamp)
    monkeypatch.setattr(lm, "_PRODUCT_MAX_RESPONSES", 0)
    slow = lm.dawid_skene(items, raters, labels, tol=0.0, max_iter=30, clamp=clamp)
    np.testing.assert_allclose(fast.posteriors, slow.posteriors, rtol=0, atol=1e-10)
    np.testing.assert_allclose(fast.priors, slow.priors, rtol=0, atol=1e-12)
    np.testing.assert_allclose(fast.error_rates, slow.error_rates, rtol=0, atol=1e-10)
    np.testing.assert_allclose(fast.log_likelihood_trace, slow.log_likelihood_trace, rtol=1e-12)


def test_an_item_whose_product_underflows_is_redone_in_log_space(monkeypatch):
    # 800 responses on one item: the product of its rates (about 3^-800) underflows to 0
    rng = np.random.default_rng(3)
    items = np.concatenate([np.repeat(np.arange(200), 3), np.zeros(800, dtype=int) + 500])
    raters = np.concatenate([rng.integers(0, 8, 600), rng.integers(0, 8, 800)])
    labels = rng.integers(0, 3, 1400)
    monkeypatch.setattr(lm, "_PRODUCT_MAX_RESPONSES", 1000)
    fast = lm.dawid_skene(items, raters, labels, tol=0.0, max_iter=20)
    monkeypatch.setattr(lm, "_PRODUCT_MAX_RESPONSES", 0)
    slow = lm.dawid_skene(items, raters, labels, tol=0.0, max_iter=20)
    assert np.all(np.isfinite(fast.posteriors))
    np.testing.assert_allclose(fast.posteriors, slow.posteriors, rtol=0, atol=1e-10)
    np.testing.assert_allclose(fast.log_likelihood_trace, slow.log_likelihood_trace, rtol=1e-12)


def _striped(n_units: int, n_raters: int, seed: int = 0):
    """A design where rater = 13 * unit + 331 * j mod n_raters and the true class follows the
    unit mod 10: each rater sees a few residues, so some raters never see some classes, their
    confusion rows are nearly flat and plain EM crawls (2,218 iterations here)."""
    rng = np.random.default_rng(seed)
    unit = np.repeat(np.arange(1, n_units + 1), 3)
    j = np.tile(np.arange(3), n_units)
    residue = (unit * 7919) % 10
    truth = np.where(residue < 7, 0, np.where(residue < 9, 1, 2))
    labels = np.where(rng.random(unit.size) < 0.8, truth, rng.integers(0, 3, unit.size))
    return unit, (unit * 13 + j * 331) % n_raters, labels


def test_a_fit_stopped_by_its_cap_counts_the_item_labels_still_moving():
    items, raters, labels = _striped(3000, 100)
    stopped = lm.dawid_skene(items, raters, labels, max_iter=250)
    at_checkpoint = lm.dawid_skene(items, raters, labels, max_iter=200)  # the same path, cut
    moved = int(np.count_nonzero(stopped.item_labels != at_checkpoint.item_labels))
    assert not stopped.converged and stopped.moved_over == 50
    assert stopped.labels_moved == moved > 0
    assert f"{moved} item labels changed over the last 50 iterations" in stopped.reason
    full = lm.dawid_skene(items, raters, labels)
    assert full.converged and full.n_iter > 1000 and full.reason == ""
    # checkpoints: the first E-step, then every 100th
    assert lm.dawid_skene(items, raters, labels, max_iter=2).moved_over == 1
    assert lm.dawid_skene(items, raters, labels, max_iter=100).moved_over == 99
    assert lm.dawid_skene(items, raters, labels, max_iter=101).moved_over == 1
    assert lm.dawid_skene(items, raters, labels, max_iter=1).moved_over == 0


def test_the_reports_iteration_cap_bounds_the_work_on_large_studies_only():
    assert lm.iteration_cap(40) == lm.DS_MAX_ITER
    assert lm.iteration_cap(100_000) == lm.DS_MAX_ITER
    assert lm.iteration_cap(1_000_000) == 1_000
    assert lm.iteration_cap(5_000_000) == 200
    assert lm.iteration_cap(10**9) == 100
    assert lm.iteration_cap(0) == lm.DS_MAX_ITER
    for n in (150_000, 1_000_000, 3_333_333):
        assert lm.iteration_cap(n) * n <= lm.DS_BUDGET
