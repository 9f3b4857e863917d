"""ICC at its edges: the confidence level, sparse many-rater designs, undefined results' fields.

Numbers are checked against pingouin (its interval at another level through its own F quantiles)
and statsmodels' two-way ANOVA table, never against Concord's own output.
"""

import math

import numpy as np
import pandas as pd
import pingouin
import pingouin.reliability
import pytest
import statsmodels.formula.api as smf
from scipy import stats
from statsmodels.stats.anova import anova_lm

from analysis import agreement
from tests.analysis.test_agreement_crosscheck import PINGOUIN_NAMES


def scores_table(seed, n=12, k=4):
    rng = np.random.default_rng(seed)
    target = rng.normal(0, 2, n)
    bias = rng.normal(0, 1, k)
    scores = target[:, None] + bias[None, :] + rng.normal(0, 1, (n, k))
    items, raters = np.indices(scores.shape)
    return items.ravel(), raters.ravel(), scores.ravel()


class _FAtLevel:
    """scipy.stats.f for pingouin, whose ICC interval is fixed at 95 %: its 0.975 quantile is
    asked at `q` instead, which is pingouin's interval at level 2q - 1."""

    def __init__(self, q):
        self.q = q

    def ppf(self, p, *args):
        assert p == pytest.approx(0.975)
        return stats.f.ppf(self.q, *args)

    def __getattr__(self, name):  # sf for the p-values: unchanged
        return getattr(stats.f, name)


@pytest.mark.parametrize("confidence", [0.0, 1.0, 1.5, -0.2])
def test_icc_refuses_a_confidence_outside_the_open_unit_interval(confidence):
    items, raters, scores = scores_table(0)
    with pytest.raises(ValueError, match=r"^confidence: expected a level in \(0, 1\), got "):
        agreement.icc(items, raters, scores, confidence=confidence)


@pytest.mark.parametrize("confidence", [0.80, 0.99])
def test_icc_interval_at_another_level_matches_pingouin_at_that_level(confidence, monkeypatch):
    items, raters, scores = scores_table(3)
    monkeypatch.setattr(pingouin.reliability, "f", _FAtLevel(1.0 - (1.0 - confidence) / 2.0))
    frame = pd.DataFrame({"t": items, "r": raters, "s": scores})
    old = pingouin.options["round.column.CI95"]
    pingouin.options["round.column.CI95"] = None
    try:
        table = pingouin.intraclass_corr(frame, "t", "r", "s").set_index("Type")
    finally:
        pingouin.options["round.column.CI95"] = old
    for form, name in PINGOUIN_NAMES.items():
        ours = agreement.icc(items, raters, scores, form=form, confidence=confidence)
        assert ours.confidence == confidence
        assert (ours.ci_low, ours.ci_high) == pytest.approx(tuple(table.loc[name, "CI95"]), 1e-9)


def sparse_many_rater_design():
    """1,025 raters over 1,024 items: items 0-2 scored by every rater, the others by one rater each.
    Items x raters (1,049,600 cells) is far more than the 4,096 scores, so duplicates are looked
    for among the scored cells only."""
    k, n_all = 1025, 1024
    rng = np.random.default_rng(5)
    items = np.concatenate([np.repeat([0, 1, 2], k), np.arange(3, n_all)])
    raters = np.concatenate([np.tile(np.arange(k), 3), np.arange(3, n_all) % k])
    scores = np.concatenate(
        [np.repeat([1.0, 2.0, 4.0], k) + rng.normal(0, 1, 3 * k), np.ones(1021)]
    )
    return items, raters, scores


def test_icc_on_a_sparse_many_rater_design_drops_the_incomplete_items_listwise():
    items, raters, scores = sparse_many_rater_design()
    result = agreement.icc(items, raters, scores, form="ICC(2,1)")
    assert (result.n_items, result.n_dropped_items, result.n_raters) == (3, 1021, 1025)
    assert result.n_labels == 3 * 1025
    complete = items < 3
    frame = pd.DataFrame({"t": items[complete], "r": raters[complete], "s": scores[complete]})
    theirs = pingouin.intraclass_corr(frame, "t", "r", "s").set_index("Type")
    assert result.value == pytest.approx(theirs.loc["ICC(A,1)", "ICC"], abs=1e-9)


def test_icc_on_a_sparse_many_rater_design_refuses_a_rater_scoring_an_item_twice():
    items, raters, scores = sparse_many_rater_design()
    items, raters, scores = np.append(items, 700), np.append(raters, 700), np.append(scores, 3.0)
    # ids are shown as their repr (np.int64(700) under NumPy 2)
    with pytest.raises(
        ValueError, match=r"^raters: rater \S*700\S* scored item \S*700\S* more than once$"
    ):
        agreement.icc(items, raters, scores)


def test_icc_counts_the_scores_of_complete_items_only():
    items, raters, scores = scores_table(1, n=5, k=3)
    items, raters, scores = np.append(items, 9), np.append(raters, 0), np.append(scores, 1.0)
    result = agreement.icc(items, raters, scores)
    assert (result.n_items, result.n_dropped_items, result.n_labels) == (5, 1, 15)


def test_icc_without_residual_variance_is_nan_with_every_statistic_nan_and_its_mean_squares():
    """Item and rater effects that add up exactly: EMS = 0, so ICC(3,1) = (BMS - 0) / (BMS + 0) is
    formally 1 but its F test divides by zero; the mean squares are statsmodels' ANOVA table's."""
    wide = np.array([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0], [6.0, 7.0]])
    items, raters = np.indices(wide.shape)
    items, raters, scores = items.ravel(), raters.ravel(), wide.ravel()
    result = agreement.icc(items, raters, scores, form="ICC(3,1)")
    assert math.isnan(result.value) and result.reason.startswith("no variance to partition")
    for field in ("ci_low", "ci_high", "f_stat", "df1", "df2", "p_value"):
        assert math.isnan(getattr(result, field)), field
    frame = pd.DataFrame({"t": items, "r": raters, "s": scores})
    anova = anova_lm(smf.ols("s ~ C(t) + C(r)", frame).fit())
    ms_items, ms_raters = anova.loc["C(t)", "mean_sq"], anova.loc["C(r)", "mean_sq"]
    ss_within = anova.loc["C(r)", "sum_sq"] + anova.loc["Residual", "sum_sq"]
    assert result.ms_rows == pytest.approx(ms_items)
    assert result.ms_within == pytest.approx(ss_within / (4 * (2 - 1)))
    assert result.ms_raters == pytest.approx(ms_raters)
    assert result.ms_error == pytest.approx(0.0, abs=1e-12)


def test_icc_of_no_scores_says_there_are_no_labels():
    result = agreement.icc([], [], [])
    assert math.isnan(result.value) and result.reason == "no labels"
    assert (result.n_items, result.n_dropped_items, result.n_labels) == (0, 0, 0)
    assert math.isnan(result.ms_rows) and math.isnan(result.ms_error)


@pytest.mark.parametrize(
    ("items", "raters", "reason"),
    [
        ([0, 1, 2], [0, 0, 0], "fewer than two raters"),
        ([0, 0, 1], [0, 1, 0], "fewer than two items scored by every rater"),
    ],
)
def test_icc_says_which_part_of_the_design_is_missing(items, raters, reason):
    result = agreement.icc(items, raters, [1.0, 2.0, 3.0])
    assert math.isnan(result.value) and result.reason == reason


@pytest.mark.parametrize("form", ["ICC(1,k)", "ICC(3,k)"])
def test_icc_of_items_with_equal_means_is_nan_not_a_division_by_zero(form):
    """BMS = 0 with raters disagreeing: the average-measures forms divide by BMS (Shrout & Fleiss
    1979, table 2), so the ICC is undefined."""
    result = agreement.icc([0, 0, 1, 1], [0, 1, 0, 1], [1.0, 2.0, 2.0, 1.0], form=form)
    assert result.ms_rows == 0.0 and result.ms_error > 0.0
    assert math.isnan(result.value) and result.reason.startswith("no variance to partition")
