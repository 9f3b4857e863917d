"""analysis.summaries on its own: the Wilson proportion and the per-group means with Student-t
intervals, field by field, with the refusals and the undefined cases their docstrings state.

The report tests (tests/qc/test_system_means.py) check what reaches the page; these check every
field of the results, so that a wrong count or a missing reason cannot hide behind a mean that
comes out right. Found by the mutation run of analysis/summaries.py (bench/MUTATION.md).
"""

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from analysis import summaries


def test_a_proportion_keeps_its_counts_and_confidence():
    res = summaries.proportion(3, 7, confidence=0.9)
    low, high = proportion_confint(3, 7, alpha=0.1, method="wilson")
    assert (res.value, res.ci_low, res.ci_high) == pytest.approx((3 / 7, low, high))
    assert (res.successes, res.n, res.confidence, res.reason) == (3, 7, 0.9, "")


@pytest.mark.parametrize("n", [1, 2, 3, 11, 14, 41, 1000])
def test_all_successes_give_an_upper_bound_of_one_and_none_a_lower_bound_of_zero(n):
    # Rounding puts the unclamped bound just above 1 for some n (11 and 14 among them).
    high = summaries.proportion(n, n).ci_high
    assert 1.0 - 1e-12 < high <= 1.0
    low = summaries.proportion(0, n).ci_low
    assert 0.0 <= low < 1e-12


def test_no_items_give_nan_with_a_reason_and_zero_counts():
    res = summaries.proportion(0, 0, confidence=0.8)
    assert all(math.isnan(x) for x in (res.value, res.ci_low, res.ci_high))
    assert (res.successes, res.n, res.confidence) == (0, 0, 0.8)
    assert res.reason == "no items to count"


@pytest.mark.parametrize("k, n", [(-1, 5), (6, 5), (0, -1), (-1, -1)])
def test_successes_outside_zero_to_n_are_refused(k, n):
    with pytest.raises(ValueError, match=r"^successes: expected 0 <= successes <= n"):
        summaries.proportion(k, n)


@pytest.mark.parametrize("confidence", [0, 0.0, 1, 1.0, 1.5, -0.5])
def test_a_confidence_outside_zero_to_one_is_refused(confidence):
    with pytest.raises(ValueError, match=r"^confidence: expected a number in \(0, 1\)"):
        summaries.proportion(1, 2, confidence=confidence)
    with pytest.raises(ValueError, match=r"^confidence: expected a number in \(0, 1\)"):
        summaries.group_means(["a", "a"], [1.0, 2.0], confidence=confidence)


def test_group_means_per_sorted_group_match_scipy():
    groups = ["b", "a", "b", "c", "a", "a"]
    values = [4.0, 1.0, 6.0, 7.0, 2.0, 6.0]
    res = summaries.group_means(groups, values, confidence=0.9)
    assert res.groups.tolist() == ["a", "b", "c"]
    assert res.n.tolist() == [3, 2, 1] and res.n.dtype == np.int64
    assert res.confidence == 0.9
    for i, group in enumerate(["a", "b"]):
        x = np.array([v for g, v in zip(groups, values, strict=True) if g == group])
        assert res.mean[i] == pytest.approx(x.mean())
        assert res.sd[i] == pytest.approx(x.std(ddof=1))
        low, high = stats.t.interval(0.9, x.size - 1, loc=x.mean(), scale=stats.sem(x))
        assert (res.ci_low[i], res.ci_high[i]) == pytest.approx((low, high))
    assert res.reasons.tolist() == ["", "", "one value: no interval"]


def test_a_group_of_one_value_has_its_mean_and_no_interval():
    res = summaries.group_means([1, 2, 2], [5.0, 1.0, 3.0])
    assert res.mean.tolist() == [5.0, 2.0]
    assert math.isnan(res.sd[0]) and math.isnan(res.ci_low[0]) and math.isnan(res.ci_high[0])
    assert res.reasons.tolist() == ["one value: no interval", ""]
    alone = summaries.group_means(["a"], [2.0])  # a single value in all is still a mean
    assert alone.mean.tolist() == [2.0] and alone.n.tolist() == [1]
    # two values: the first group with an interval (t with one degree of freedom)
    assert res.sd[1] == pytest.approx(math.sqrt(2.0))
    half = stats.t.ppf(0.975, 1) * math.sqrt(2.0) / math.sqrt(2.0)
    assert (res.ci_low[1], res.ci_high[1]) == pytest.approx((2.0 - half, 2.0 + half))


def test_group_means_refuse_bad_input_naming_the_argument():
    with pytest.raises(ValueError, match=r"^groups: no values given"):
        summaries.group_means([], [])
    with pytest.raises(ValueError, match=r"^values: length 1 differs from groups length 2"):
        summaries.group_means(["a", "b"], [1.0])
    with pytest.raises(ValueError, match=r"^values: length 2 differs from groups length 1"):
        summaries.group_means(["a"], [1.0, 2.0])
    for bad in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match=r"^values: contains NaN or infinite values"):
            summaries.group_means(["a", "b"], [1.0, bad])
    with pytest.raises(ValueError, match=r"^groups: contains None"):
        summaries.group_means(["a", None], [1.0, 2.0])
    mixed = np.array([1, "a"], dtype=object)  # not mutually comparable: no sorted order
    with pytest.raises(ValueError, match=r"^groups: values must be mutually comparable"):
        summaries.group_means(mixed, [1.0, 2.0])
