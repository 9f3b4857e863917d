"""Dawid-Skene step by step against a dense reference EM, on designs the other tests leave out:
ragged items (1 to 40 responses, so the E-step's product and log paths and the internal item
order all matter), unsorted string ids, gold items, the inits, smoothing, classes nobody used,
an item whose likelihood underflows, and the stopping rule.

The reference (`dense_em`) keeps an items x raters x classes count array and does each step in
one line of numpy, the E-step and the log-likelihood with scipy's logsumexp; it is itself checked
against crowd-kit's DawidSkene (with gold labels) below. No database.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from crowdkit.aggregation import DawidSkene
from scipy.special import logsumexp, xlogy

from analysis import labelmodels as lm
from tests.analysis.test_labelmodels import load_1979


def dense_em(
    items, raters, labels, n_iter, classes=None, init="proportions", smoothing=0.0, clamp=None
):
    """Dawid-Skene EM on dense counts n[i, j, l] (Dawid & Skene 1979, eq. 2.3-2.5), `n_iter`
    E-steps each followed by an M-step; unidentified rows (no mass) are NaN."""
    pats, ii = np.unique(items, return_inverse=True)
    obs, jj = np.unique(raters, return_inverse=True)
    cls = np.unique(labels) if classes is None else np.asarray(classes)
    col = {c: i for i, c in enumerate(cls.tolist())}
    n = np.zeros((pats.size, obs.size, cls.size))
    np.add.at(n, (ii, jj, [col[x] for x in np.asarray(labels).tolist()]), 1)
    counts = n.sum(axis=1)
    if isinstance(init, str) and init == "proportions":
        t = counts / counts.sum(axis=1, keepdims=True)
    elif isinstance(init, str):  # "majority": the hard vote, ties split equally
        top = (counts == counts.max(axis=1, keepdims=True)).astype(float)
        t = top / top.sum(axis=1, keepdims=True)
    else:
        t = np.asarray(init, float) / np.asarray(init, float).sum(axis=1, keepdims=True)
    where = {p: i for i, p in enumerate(pats.tolist())}
    gold_items, gold_labels = ([], []) if clamp is None else clamp
    gold = [(where[a], col[b]) for a, b in zip(gold_items, gold_labels, strict=True) if a in where]
    rows = np.array([r for r, _ in gold], dtype=int)
    cols = np.array([c for _, c in gold], dtype=int)

    def hold(t):
        t = t.copy()
        t[rows] = 0.0
        t[rows, cols] = 1.0
        return t

    def m_step(t):
        c = np.einsum("ik,ijl->jkl", t, n) + smoothing
        with np.errstate(invalid="ignore"):
            return t.mean(axis=0), c / c.sum(axis=2, keepdims=True)

    t = hold(t)
    priors, rates = m_step(t)
    trace, changes = [], []
    for _ in range(n_iter):
        safe = np.nan_to_num(rates, nan=1.0)  # an unidentified row meets no posterior mass
        with np.errstate(divide="ignore"):
            logp = np.log(priors) + xlogy(n[:, :, None, :], safe[None]).sum(axis=(1, 3))
        total = logsumexp(logp, axis=1)
        trace.append(float(total.sum()))
        t = hold(np.exp(logp - total[:, None]))
        new_priors, new_rates = m_step(t)
        step = np.abs(np.nan_to_num(new_rates, nan=1.0) - np.nan_to_num(rates, nan=1.0))
        changes.append(max(np.max(np.abs(new_priors - priors)), np.max(step)))
        priors, rates = new_priors, new_rates
    return {
        "items": pats,
        "raters": obs,
        "classes": cls,
        "posteriors": t,
        "priors": priors,
        "error_rates": rates,
        "trace": np.array(trace),
        "changes": np.array(changes),
        "item_log_likelihood": total,  # of the last E-step
    }


def ragged(seed=0, n_items=120, n_raters=7):
    """Items with 1 to 6 responses (a few repeated by the same rater) and three with 20 to 40
    (> 16: the E-step's log path); string ids listed in no particular order."""
    rng = np.random.default_rng(seed)
    classes = np.array(["neg", "neu", "pos"])
    truth = rng.choice(3, size=n_items, p=[0.5, 0.3, 0.2])
    sizes = np.concatenate([rng.integers(1, 7, n_items - 3), [20, 33, 40]])
    item = np.repeat(np.arange(n_items), sizes)
    rater = rng.integers(0, n_raters, item.size)
    right = rng.random(item.size) < 0.7 + 0.04 * rater  # raters differ in accuracy
    label = np.where(right, truth[item], rng.integers(0, 3, item.size))
    shuffle = rng.permutation(item.size)
    names = np.array([f"u{(17 * i) % 1000:03d}" for i in range(n_items)])  # sorted != numbered
    return (
        names[item][shuffle],
        np.array([f"r{j}" for j in rater])[shuffle],
        classes[label][shuffle],
    )


def assert_same_fit(ours, ref, atol=1e-10):
    assert ours.items.tolist() == ref["items"].tolist()
    assert ours.raters.tolist() == ref["raters"].tolist()
    assert ours.classes.tolist() == ref["classes"].tolist()
    np.testing.assert_allclose(ours.posteriors, ref["posteriors"], rtol=0, atol=atol)
    np.testing.assert_allclose(ours.priors, ref["priors"], rtol=0, atol=atol)
    np.testing.assert_allclose(ours.error_rates, ref["error_rates"], rtol=0, atol=atol)
    np.testing.assert_allclose(ours.log_likelihood_trace, ref["trace"], rtol=1e-12)


# --------------------------------------------------------------------------- the reference


def test_the_reference_em_equals_crowdkit_with_gold_labels_on_a_ragged_design():
    items, raters, labels = ragged(1)
    gold = pd.Series(["pos", "neg", "neu"], index=["u017", "u034", "u510"])
    ck = DawidSkene(n_iter=6, tol=-np.inf).fit(
        pd.DataFrame({"task": items, "worker": raters, "label": labels}), true_labels=gold
    )
    ref = dense_em(items, raters, labels, 6, clamp=(gold.index, gold.to_numpy()))
    probas = ck.probas_.loc[ref["items"], ref["classes"]].to_numpy()
    np.testing.assert_allclose(ref["posteriors"], probas, atol=1e-6)
    np.testing.assert_allclose(ref["priors"], ck.priors_.loc[ref["classes"]].to_numpy(), atol=1e-6)


# --------------------------------------------------------------------------- the fit, step by step


@pytest.mark.parametrize("n_iter", [1, 2, 9])
def test_a_ragged_design_with_unsorted_string_ids_is_fitted_as_the_reference(n_iter):
    items, raters, labels = ragged(0)
    ours = lm.dawid_skene(items, raters, labels, tol=0.0, max_iter=n_iter)
    assert_same_fit(ours, dense_em(items, raters, labels, n_iter))
    assert ours.n_iter == n_iter and not ours.converged and ours.n_labels == items.size


def test_gold_items_are_held_at_their_class_as_the_reference():
    items, raters, labels = ragged(2)
    clamp = (["u510", "zzz", "u017", "u034"], ["neg", "pos", "pos", "neu"])  # zzz: not in the data
    ours = lm.dawid_skene(items, raters, labels, tol=0.0, max_iter=5, clamp=clamp)
    assert_same_fit(ours, dense_em(items, raters, labels, 5, clamp=clamp))
    assert ours.n_clamped == 3
    assert ours.labels["u510"] == "neg" and ours.labels["u017"] == "pos"


def test_gold_labels_are_read_in_the_given_class_order():
    items, raters, labels = ragged(2)
    classes = ["pos", "neg", "neu"]
    clamp = (["u034", "u510"], ["neg", "pos"])
    ours = lm.dawid_skene(items, raters, labels, classes=classes, tol=0.0, max_iter=4, clamp=clamp)
    assert_same_fit(ours, dense_em(items, raters, labels, 4, classes=classes, clamp=clamp))
    np.testing.assert_array_equal(ours.posteriors[ours.items.tolist().index("u034")], [0, 1, 0])


def test_classes_given_in_another_order_permute_the_columns_only():
    items, raters, labels = ragged(3)
    plain = lm.dawid_skene(items, raters, labels, tol=0.0, max_iter=6)  # neg, neu, pos
    turned = lm.dawid_skene(
        items, raters, labels, classes=["pos", "neg", "neu"], tol=0.0, max_iter=6
    )
    perm = [2, 0, 1]
    assert turned.classes.tolist() == ["pos", "neg", "neu"]
    np.testing.assert_allclose(turned.posteriors, plain.posteriors[:, perm], atol=1e-12)
    np.testing.assert_allclose(turned.priors, plain.priors[perm], atol=1e-12)
    np.testing.assert_allclose(
        turned.error_rates, plain.error_rates[:, perm][:, :, perm], atol=1e-12
    )


def test_the_majority_start_is_the_hard_vote_with_ties_split():
    items, raters, labels = ragged(4)
    ours = lm.dawid_skene(items, raters, labels, init="majority", tol=0.0, max_iter=3)
    assert_same_fit(ours, dense_em(items, raters, labels, 3, init="majority"))
    other = lm.dawid_skene(items, raters, labels, tol=0.0, max_iter=3)
    assert np.abs(ours.posteriors - other.posteriors).max() > 1e-3  # a start of its own


def test_an_array_start_is_normalised_per_item_as_the_reference():
    items, raters, labels = ragged(5)
    start = np.random.default_rng(5).random((np.unique(items).size, 3)) + 0.01
    ours = lm.dawid_skene(items, raters, labels, init=start * 7, tol=0.0, max_iter=2)
    assert_same_fit(ours, dense_em(items, raters, labels, 2, init=start))


@pytest.mark.parametrize("smoothing", [0.5, 3.0])
def test_smoothing_adds_its_pseudo_count_to_every_cell_as_the_reference(smoothing):
    items, raters, labels = load_1979()
    ours = lm.dawid_skene(items, raters, labels, smoothing=smoothing, tol=0.0, max_iter=4)
    assert_same_fit(ours, dense_em(items, raters, labels, 4, smoothing=smoothing))


def test_a_class_nobody_used_leaves_nan_rows_unless_smoothed():
    items, raters, labels = ragged(6)
    classes = ["neg", "neu", "pos", "spam"]
    ours = lm.dawid_skene(items, raters, labels, classes=classes, tol=0.0, max_iter=3)
    ref = dense_em(items, raters, labels, 3, classes=classes)
    assert_same_fit(ours, ref)
    assert np.isnan(ours.error_rates[:, 3]).all() and ours.priors[3] == 0.0
    assert not np.isnan(ours.error_rates[:, :3]).any()
    smoothed = lm.dawid_skene(
        items, raters, labels, classes=classes, smoothing=1.0, tol=0.0, max_iter=3
    )
    assert_same_fit(smoothed, dense_em(items, raters, labels, 3, classes=classes, smoothing=1.0))
    np.testing.assert_allclose(smoothed.error_rates[:, 3], 0.25)


def test_items_whose_likelihood_underflows_keep_their_log_likelihood():
    # 1,500 and 3,000 responses on items 500 and 502: their likelihoods (about e^-1100 and
    # e^-2200) are 0.0 in float64 in both E-step paths, and far apart from each other
    rng = np.random.default_rng(8)
    items = np.concatenate(
        [np.repeat(np.arange(60), 3), np.full(1500, 500), np.full(30, 501), np.full(3000, 502)]
    )
    raters = rng.integers(0, 6, items.size)
    labels = np.where(rng.random(items.size) < 0.6, items % 3, rng.integers(0, 3, items.size))
    ours = lm.dawid_skene(items, raters, labels, tol=0.0, max_iter=4)
    ref = dense_em(items, raters, labels, 4)
    lik = ref["item_log_likelihood"]
    assert lik[-1] < lik[-3] - 745 and lik[-3] < np.log(5e-324)  # 502 far below 500, below 0.0
    assert_same_fit(ours, ref, atol=1e-9)


def test_an_underflowing_item_on_the_product_path_raises_no_warning(monkeypatch):
    # every item on the product path; rater 9 only ever says 0, so its other rates are 0
    monkeypatch.setattr(lm, "_PRODUCT_MAX_RESPONSES", 10_000)
    rng = np.random.default_rng(9)
    items = np.concatenate([np.repeat(np.arange(60), 3), np.full(1500, 500), np.arange(60)])
    raters = np.concatenate([rng.integers(0, 6, 1680), np.full(60, 9)])
    labels = np.concatenate([rng.integers(0, 3, 1680), np.zeros(60, dtype=int)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = lm.dawid_skene(items, raters, labels, tol=0.0, max_iter=2)
    assert_same_fit(ours, dense_em(items, raters, labels, 2), atol=1e-9)


# --------------------------------------------------------------------------- stopping


def test_em_stops_at_the_first_step_whose_largest_change_is_below_tol():
    items, raters, labels = load_1979()
    ref = dense_em(items, raters, labels, 200)
    tol = float(np.sqrt(ref["changes"][40] * ref["changes"][41]))  # between steps 41 and 42
    ours = lm.dawid_skene(items, raters, labels, tol=tol)
    assert ours.converged and ours.reason == ""
    assert ours.n_iter == int(np.argmax(ref["changes"] < tol)) + 1 == 42
    assert_same_fit(ours, dense_em(items, raters, labels, 42))


def test_a_fit_at_its_fixed_point_still_runs_every_step_with_tol_zero():
    # unanimous raters: the first M-step is already the fixed point, the change exactly 0
    items, raters, labels = [1, 1, 2, 2, 3, 3], ["a", "b", "a", "b", "a", "b"], list("xxyyxx")
    ours = lm.dawid_skene(items, raters, labels, tol=0.0, max_iter=5)
    assert ours.n_iter == 5 and not ours.converged
    assert dense_em(items, raters, labels, 5)["changes"].max() == 0.0
    assert lm.dawid_skene(items, raters, labels, tol=1e-12, max_iter=5).n_iter == 1


def test_converged_is_a_bool_also_when_the_cap_stops_the_fit():
    # callers may serialise the flag as it is: False, not merely something falsy such as None
    items, raters, labels = ragged(0)
    assert lm.dawid_skene(items, raters, labels, tol=0.0, max_iter=2).converged is False
    assert lm.dawid_skene(items, raters, labels, max_iter=1000).converged is True


# --------------------------------------------------------------------------- input


@pytest.mark.parametrize("column", ["items", "raters", "labels"])
def test_ids_that_cannot_be_sorted_are_refused_naming_their_column(column):
    # results are in sorted id order (and an init array is aligned with it): no first-seen order;
    # without `classes`, the classes are the sorted labels
    data = {"items": [1, 2, 1, 2], "raters": ["a", "b", "b", "a"], "labels": ["x", "y", "x", "y"]}
    data[column] = np.array([1, "a", 1, "a"], dtype=object)
    with pytest.raises(ValueError, match=rf"^{column}: values must be mutually comparable"):
        lm.dawid_skene(**data)


@pytest.mark.parametrize("column", ["items", "raters", "labels"])
def test_a_missing_value_is_refused_naming_its_column(column):
    data = {"items": [1, 2, 1, 2], "raters": ["a", "b", "b", "a"], "labels": ["x", "y", "x", "y"]}
    data[column] = np.array([*data[column][:3], None], dtype=object)
    with pytest.raises(ValueError, match=rf"^{column}: contains None at row 3"):
        lm.dawid_skene(**data)


@pytest.mark.parametrize("column", ["raters", "labels"])
def test_a_column_of_another_length_is_refused_naming_it(column):
    data = {"items": [1, 2, 1, 2], "raters": ["a", "b", "b", "a"], "labels": ["x", "y", "x", "y"]}
    data[column] = data[column][:3]
    with pytest.raises(ValueError, match=rf"^{column}: length 3 differs from items length 4$"):
        lm.dawid_skene(**data)


def test_classes_with_a_missing_value_are_refused_naming_classes():
    with pytest.raises(ValueError, match=r"^classes: "):
        lm.dawid_skene([1, 2], ["a", "a"], ["x", "y"], classes=np.array(["x", "y", None]))


def test_duplicate_classes_are_refused_also_when_they_sort_last():
    with pytest.raises(ValueError, match=r"^classes: contains duplicates$"):
        lm.dawid_skene([1, 2], ["a", "a"], ["x", "y"], classes=["x", "y", "y"])


def test_observed_labels_missing_from_classes_are_named_five_at_most():
    labels = list("abcdefg")
    with pytest.raises(ValueError, match=r"observed labels \['b', 'c', 'd', 'e', 'f'\]$"):
        lm.dawid_skene(list(range(7)), ["r"] * 7, labels, classes=["a"])


def test_gold_labels_missing_from_classes_are_named_five_at_most():
    clamp = (list(range(6)), list("abcdef"))
    with pytest.raises(ValueError, match=r"classes: \['a', 'b', 'c', 'd', 'e'\]$"):
        lm.dawid_skene([0, 1], ["r", "r"], ["x", "y"], clamp=clamp)


def test_a_gold_label_sorting_after_every_class_is_refused_naming_it():
    with pytest.raises(ValueError, match=r"^clamp: labels not among the classes: \['z'\]$"):
        lm.dawid_skene([0, 1], ["r", "r"], ["x", "y"], clamp=([0], ["z"]))


# --------------------------------------------------------------------------- unidentified rows


def test_a_rater_without_mass_on_a_class_is_left_out_of_that_class_until_it_has_some():
    # "solo" labels one item, "neg" like everyone there: the start gives that item no mass on
    # neu or pos, so solo's rows for them are unidentified and its answer counts for no class
    items, raters, labels = ragged(7)
    with_solo = (
        np.append(items, ["w000"] * 3),
        np.append(raters, ["r0", "r1", "solo"]),
        np.append(labels, ["neg"] * 3),
    )
    without = (with_solo[0][:-1], with_solo[1][:-1], with_solo[2][:-1])
    first = lm.dawid_skene(*with_solo, tol=0.0, max_iter=1)
    np.testing.assert_allclose(
        first.posteriors, lm.dawid_skene(*without, tol=0.0, max_iter=1).posteriors, atol=1e-12
    )
    for n_iter in (1, 4):
        ours = lm.dawid_skene(*with_solo, tol=0.0, max_iter=n_iter)
        assert_same_fit(ours, dense_em(*with_solo, n_iter))


def test_unidentified_rows_raise_no_warning():
    items, raters, labels = ragged(6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = lm.dawid_skene(items, raters, labels, classes=["neg", "neu", "pos", "spam"], max_iter=3)
    assert np.isnan(r.error_rates[:, 3]).all()
