"""Plain summaries the reports show beside the agreement and label-model statistics: a proportion
with an interval that stays in [0, 1], and per-group means with Student-t intervals.

Long-format inputs (one row per value); vectorised with np.bincount.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from analysis._long import as_array, check_same_length, encode

__all__ = ["GroupMeans", "Proportion", "group_means", "proportion"]


@dataclass(frozen=True)
class Proportion:
    """A share k / n with its Wilson score interval; NaN with a reason when n = 0."""

    value: float
    ci_low: float
    ci_high: float
    successes: int
    n: int
    confidence: float
    reason: str = ""


def proportion(successes: int, n: int, confidence: float = 0.95) -> Proportion:
    """k / n with the Wilson (1927) score interval, which always lies in [0, 1]:

    (p + z^2/2n -+ z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n), z the normal quantile.
    Unlike the Wald interval it is not degenerate at p = 0 or 1 (Brown, Cai & DasGupta 2001).
    n = 0 gives NaN and a reason; k outside 0..n raises ValueError.
    """
    k, n = int(successes), int(n)
    if n < 0 or k < 0 or k > n:
        raise ValueError(f"successes: expected 0 <= successes <= n, got {k} of {n}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence: expected a number in (0, 1), got {confidence!r}")
    if n == 0:
        nan = float("nan")
        return Proportion(nan, nan, nan, 0, 0, confidence, "no items to count")
    z = float(stats.norm.ppf(0.5 + confidence / 2))
    p = k / n
    centre = p + z * z / (2 * n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    denom = 1 + z * z / n
    low, high = (centre - half) / denom, (centre + half) / denom
    return Proportion(p, max(0.0, low), min(1.0, high), k, n, confidence)


@dataclass(frozen=True, eq=False)
class GroupMeans:
    """Per group: n values, mean, standard deviation and the Student-t interval of the mean.

    Arrays are aligned with `groups` (sorted). A group with one value has NaN sd and interval;
    `reasons` says why per group ("" when defined).
    """

    groups: np.ndarray
    n: np.ndarray
    mean: np.ndarray
    sd: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    reasons: np.ndarray
    confidence: float


def group_means(groups, values, confidence: float = 0.95) -> GroupMeans:
    """Mean of `values` per group with the Student-t interval mean -+ t_{n-1} s / sqrt(n).

    Every value counts once (e.g. every label of a system); the interval treats them as
    independent draws, which overstates precision when one rater gives many of them (Student
    1908). A group with one value: sd and interval NaN with a reason. Bad input (unequal
    lengths, NaN values, nothing given) raises ValueError naming the argument.
    """
    g = as_array(groups, "groups")
    v = np.asarray(values, dtype=float)
    if g.size == 0:
        raise ValueError("groups: no values given")
    check_same_length(groups=g, values=v)
    if not np.all(np.isfinite(v)):
        raise ValueError("values: contains NaN or infinite values")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence: expected a number in (0, 1), got {confidence!r}")
    idx, uniq = encode(g, "groups", ordered=True)
    k = uniq.size
    n = np.bincount(idx, minlength=k).astype(float)
    mean = np.bincount(idx, weights=v, minlength=k) / n
    dev = v - mean[idx]
    ss = np.bincount(idx, weights=dev * dev, minlength=k)
    with np.errstate(invalid="ignore", divide="ignore"):
        sd = np.where(n > 1, np.sqrt(ss / np.maximum(n - 1, 1)), np.nan)
        half = stats.t.ppf(0.5 + confidence / 2, np.maximum(n - 1, 1)) * sd / np.sqrt(n)
    reasons = np.where(n > 1, "", "one value: no interval").astype(object)
    return GroupMeans(
        groups=uniq,
        n=n.astype(np.int64),
        mean=mean,
        sd=sd,
        ci_low=mean - half,
        ci_high=mean + half,
        reasons=reasons,
        confidence=confidence,
    )
