"""Cross-checks of analysis.agreement against krippendorff, statsmodels, pingouin and scikit-learn.

Each library sees the same seeded awkward designs (missing labels, unequal raters per item, a rare
class, a constant rater, a single category); results must agree to 1e-9.
"""

import warnings

import krippendorff
import numpy as np
import pandas as pd
import pingouin
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from analysis import agreement

SEEDS = range(24)


def awkward_design(seed):
    """Seeded long-format labels; the seed picks which awkward features the design has.

    seed % 6: 0 plain with missing labels, 1 a rare class, 2 a constant rater, 3 unequal raters per
    item with many single-label items, 4 two categories only, 5 a single category everywhere.
    """
    rng = np.random.default_rng(seed)
    n_items, n_raters = int(rng.integers(8, 40)), int(rng.integers(2, 7))
    kind = seed % 6
    present = rng.random((n_raters, n_items)) < (0.45 if kind == 3 else 0.8)
    truth = rng.integers(0, 5, n_items)
    labels = np.where(
        rng.random((n_raters, n_items)) < 0.35, rng.integers(0, 5, (n_raters, n_items)), truth
    )
    if kind == 1:
        labels = np.where(rng.random(labels.shape) < 0.05, 4, labels % 2)
    elif kind == 2:
        labels[0] = 2
    elif kind == 4:
        labels = labels % 2
    elif kind == 5:
        labels[:] = 3
    raters, items = np.nonzero(present)
    return items, raters, labels[raters, items] + 1  # values 1..5 (ratio needs positives)


def wide(items, raters, labels):
    """Raters x items matrix with NaN for a missing label (the krippendorff package's input)."""
    matrix = np.full((raters.max() + 1, items.max() + 1), np.nan)
    matrix[raters, items] = labels
    return matrix


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("level", agreement.LEVELS)
def test_alpha_matches_the_krippendorff_package_on_awkward_designs(seed, level):
    """krippendorff.alpha on the raters x units matrix; where it raises for a one-value domain or
    no pairable unit, Krippendorff (2011) leaves alpha undefined (0/0), so Concord returns NaN."""
    items, raters, labels = awkward_design(seed)
    ours = agreement.krippendorff_alpha(items, raters, labels, level=level)
    try:
        theirs = krippendorff.alpha(
            reliability_data=wide(items, raters, labels), level_of_measurement=level
        )
    except ValueError:
        assert np.isnan(ours.value) and ours.reason
        return
    if np.isnan(theirs):
        assert np.isnan(ours.value) and ours.reason
    else:
        assert ours.value == pytest.approx(theirs, abs=1e-9)


@pytest.mark.parametrize("seed", SEEDS)
def test_alpha_sparse_path_matches_the_package(seed, monkeypatch):
    """Force the CSR items x categories path (used when K or I x K is large); same numbers."""
    monkeypatch.setattr(agreement, "_DENSE_MAX_CATEGORIES", 0)
    items, raters, labels = awkward_design(seed)
    for level in agreement.LEVELS:
        ours = agreement.krippendorff_alpha(items, raters, labels, level=level)
        try:
            theirs = krippendorff.alpha(
                reliability_data=wide(items, raters, labels), level_of_measurement=level
            )
        except ValueError:
            theirs = np.nan
        if np.isnan(theirs):
            assert np.isnan(ours.value)
        else:
            assert ours.value == pytest.approx(theirs, abs=1e-9)


@pytest.mark.parametrize("seed", range(20))
def test_interval_alpha_on_continuous_scores_matches_the_package(seed, monkeypatch):
    """Many distinct real values (K large) use closed forms for D_e; checked against the package."""
    monkeypatch.setattr(agreement, "_DENSE_MAX_CATEGORIES", 8)
    rng = np.random.default_rng(seed)
    items, raters, _ = awkward_design(seed)
    scores = np.round(rng.normal(50, 10, items.size) + items % 7, 2)
    for level in ("nominal", "interval", "ordinal", "ratio"):
        ours = agreement.krippendorff_alpha(items, raters, scores, level=level)
        theirs = krippendorff.alpha(
            reliability_data=wide(items, raters, scores), level_of_measurement=level
        )
        assert ours.value == pytest.approx(theirs, abs=1e-9)


@pytest.mark.parametrize("seed", SEEDS)
def test_fleiss_kappa_matches_statsmodels_on_equal_rater_designs(seed):
    """statsmodels.fleiss_kappa assumes every item has the same number of labels: keep items with
    exactly the modal count. Single-category designs are 0/0 in both (statsmodels returns nan)."""
    items, raters, labels = awkward_design(seed)
    m = np.bincount(items)
    n = np.bincount(m[m >= 2]).argmax()
    keep = m[items] == n
    items, raters, labels = items[keep], raters[keep], labels[keep]
    ours = agreement.fleiss_kappa(items, raters, labels, categories=[1, 2, 3, 4, 5])
    table = np.zeros((items.max() + 1, 5))
    np.add.at(table, (items, labels - 1), 1)
    table = table[table.sum(1) > 0]
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = sm_fleiss_kappa(table)
    if np.isnan(theirs):
        assert np.isnan(ours.value) and ours.reason
    else:
        assert ours.value == pytest.approx(theirs, abs=1e-9)


def naive_fleiss(items, labels):
    """Fleiss (1971) with per-item n_i, written with plain loops as an independent oracle."""
    by_item = {}
    for i, c in zip(items.tolist(), labels.tolist(), strict=True):
        by_item.setdefault(i, []).append(c)
    kept = [v for v in by_item.values() if len(v) >= 2]
    p_i = [
        sum(v.count(c) * (v.count(c) - 1) for c in set(v)) / (len(v) * (len(v) - 1)) for v in kept
    ]
    pooled = [c for v in kept for c in v]
    p_e = sum((pooled.count(c) / len(pooled)) ** 2 for c in set(pooled))
    return np.mean(p_i), (np.mean(p_i) - p_e) / (1 - p_e) if p_e < 1 else np.nan


@pytest.mark.parametrize("seed", SEEDS)
def test_fleiss_kappa_with_unequal_raters_matches_a_loop_oracle(seed):
    """Unequal n_i (statsmodels cannot): P_i uses each item's n_i, p_c pools the kept labels."""
    items, raters, labels = awkward_design(seed)
    p_bar, kappa = naive_fleiss(items, labels)
    assert agreement.percent_agreement(items, raters, labels).value == pytest.approx(
        p_bar, abs=1e-12
    )
    ours = agreement.fleiss_kappa(items, raters, labels).value
    assert ours == pytest.approx(kappa, abs=1e-12, nan_ok=True)


def two_rater_design(seed):
    items, raters, labels = awkward_design(seed)
    keep = raters < 2
    return items[keep], raters[keep], labels[keep]


def sklearn_kappa(items, raters, labels, weights, scale):
    a = dict(zip(items[raters == 0].tolist(), labels[raters == 0].tolist(), strict=True))
    b = dict(zip(items[raters == 1].tolist(), labels[raters == 1].tolist(), strict=True))
    shared = sorted(set(a) & set(b))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cohen_kappa_score(
            [a[i] for i in shared], [b[i] for i in shared], labels=scale, weights=weights
        )


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_cohen_kappa_matches_scikit_learn_on_awkward_designs(seed, weights):
    """sklearn.cohen_kappa_score on the items both raters labelled, with the scale fixed to the
    sorted labels seen (Concord's default scale); NaN where sklearn returns nan (0/0)."""
    items, raters, labels = two_rater_design(seed)
    ours = agreement.cohen_kappa(items, raters, labels, weights=weights)
    theirs = sklearn_kappa(items, raters, labels, weights, sorted(set(labels.tolist())))
    assert ours.value == pytest.approx(theirs, abs=1e-9, nan_ok=True)
    assert np.isnan(ours.value) == bool(ours.reason)


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("weights", ["linear", "quadratic"])
def test_weighted_kappa_on_a_declared_scale_matches_scikit_learn(seed, weights):
    """With categories declared, unused categories keep their place on the weight scale."""
    items, raters, labels = two_rater_design(seed)
    scale = [0, 1, 2, 3, 4, 5, 6]
    ours = agreement.cohen_kappa(items, raters, labels, weights=weights, categories=scale)
    theirs = sklearn_kappa(items, raters, labels, weights, scale)
    assert ours.value == pytest.approx(theirs, abs=1e-9, nan_ok=True)


@pytest.mark.parametrize("seed", SEEDS)
def test_pairwise_kappas_match_scikit_learn_for_every_rater_pair(seed):
    """Each pair's kappa equals cohen_kappa_score on that pair's shared items."""
    items, raters, labels = awkward_design(seed)
    result = agreement.pairwise_kappas(items, raters, labels)
    pairs = 0
    for a in range(raters.max() + 1):
        for b in range(a + 1, raters.max() + 1):
            ia = dict(zip(items[raters == a].tolist(), labels[raters == a].tolist(), strict=True))
            ib = dict(zip(items[raters == b].tolist(), labels[raters == b].tolist(), strict=True))
            shared = sorted(set(ia) & set(ib))
            if not shared:
                continue
            where = np.flatnonzero((result.rater_a == a) & (result.rater_b == b))
            assert where.size == 1
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                theirs = cohen_kappa_score([ia[i] for i in shared], [ib[i] for i in shared])
            assert result.kappa[where[0]] == pytest.approx(theirs, abs=1e-9, nan_ok=True)
            assert result.n_shared[where[0]] == len(shared)
            pairs += 1
    assert result.kappa.size == pairs


def complete_scores(seed):
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(3, 30)), int(rng.integers(2, 7))
    target = rng.normal(0, rng.uniform(0.1, 3), n)
    bias = rng.normal(0, rng.uniform(0, 2), k)
    scores = target[:, None] + bias[None, :] + rng.normal(0, 1, (n, k))
    if seed % 5 == 0:
        scores = np.round(scores)  # ties
    items, raters = np.indices(scores.shape)
    return items.ravel(), raters.ravel(), scores.ravel()


PINGOUIN_NAMES = {
    "ICC(1,1)": "ICC(1,1)",
    "ICC(2,1)": "ICC(A,1)",
    "ICC(3,1)": "ICC(C,1)",
    "ICC(1,k)": "ICC(1,k)",
    "ICC(2,k)": "ICC(A,k)",
    "ICC(3,k)": "ICC(C,k)",
}


def pingouin_table(items, raters, scores):
    """pingouin.intraclass_corr with its CI rounding (2 decimals by default) switched off."""
    frame = pd.DataFrame({"t": items, "r": raters, "s": scores})
    old = pingouin.options["round.column.CI95"]
    pingouin.options["round.column.CI95"] = None
    try:
        return pingouin.intraclass_corr(frame, "t", "r", "s", nan_policy="omit").set_index("Type")
    finally:
        pingouin.options["round.column.CI95"] = old


@pytest.mark.parametrize("seed", SEEDS)
def test_icc_matches_pingouin_in_all_six_forms(seed):
    """Value, F, df, p-value and the F-based 95% CI of every form agree with pingouin to 1e-9."""
    items, raters, scores = complete_scores(seed)
    table = pingouin_table(items, raters, scores)
    for form, name in PINGOUIN_NAMES.items():
        ours = agreement.icc(items, raters, scores, form=form)
        row = table.loc[name]
        assert ours.value == pytest.approx(row["ICC"], abs=1e-9)
        assert ours.f_stat == pytest.approx(row["F"], rel=1e-9)
        assert (ours.df1, ours.df2) == (row["df1"], row["df2"])
        assert ours.p_value == pytest.approx(row["pval"], abs=1e-9)
        assert (ours.ci_low, ours.ci_high) == pytest.approx(tuple(row["CI95"]), abs=1e-9)


@pytest.mark.parametrize("seed", range(20))
def test_icc_drops_incomplete_items_listwise_like_pingouin(seed):
    """pingouin's nan_policy="omit" deletes incomplete targets listwise, as Concord does."""
    items, raters, scores = complete_scores(seed + 100)
    rng = np.random.default_rng(seed)
    keep = rng.random(items.size) > 0.08
    keep[: raters.max() + 1] = True  # the first item stays complete, so every rater remains
    keep[raters.max() + 1 : 2 * (raters.max() + 1)] = True
    items, raters, scores = items[keep], raters[keep], scores[keep]
    ours = agreement.icc(items, raters, scores, form="ICC(2,1)")
    m = np.bincount(items)
    assert ours.n_items == int((m == raters.max() + 1).sum())
    assert ours.n_dropped_items == int(((m > 0) & (m < raters.max() + 1)).sum())
    table = pingouin_table(items, raters, scores)
    assert ours.value == pytest.approx(table.loc["ICC(A,1)", "ICC"], abs=1e-9)
