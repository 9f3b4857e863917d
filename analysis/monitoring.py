"""Always-on rater monitoring: Wilson intervals, the sustained-decline rule on weekly gold
accuracy, self-consistency on blind repeats, and behaviour screening signals.

Pure numpy/scipy over per-week counts and per-label arrays; no Django.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from scipy import stats

__all__ = [
    "DeclineRule",
    "DeclineResult",
    "RunResult",
    "decline_alerts",
    "dawid_skene_rater_rates",
    "longest_runs",
    "wilson_interval",
]


def wilson_interval(k, n, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for k successes in n trials (Wilson 1927; Brown, Cai & DasGupta 2001).

    centre = (k + z^2/2) / (n + z^2), half = z sqrt(k(n-k)/n + z^2/4) / (n + z^2). Vectorised;
    n = 0 gives NaN (no data, no interval).
    """
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    if np.any(k < 0) or np.any(k > n):
        raise ValueError("k: expected 0 <= k <= n")
    z = _z(confidence)
    with np.errstate(invalid="ignore", divide="ignore"):
        centre = (k + z * z / 2) / (n + z * z)
        half = z * np.sqrt(k * (n - k) / n + z * z / 4) / (n + z * z)
    low = np.where(n > 0, np.clip(centre - half, 0.0, 1.0), np.nan)
    high = np.where(n > 0, np.clip(centre + half, 0.0, 1.0), np.nan)
    return low, high


@functools.lru_cache(maxsize=8)
def _z(confidence: float) -> float:
    return float(stats.norm.ppf(0.5 + confidence / 2))


@dataclass(frozen=True)
class DeclineRule:
    """The sustained-decline rule on weekly gold accuracy (defaults are the product's rule).

    A week t is flagged when either
    (a) pooled window: the last `window` weeks together (>= `min_window` gold items) are below the
        rater's own earlier rate (all gold before the window, >= `min_baseline` items), one-sided
        Fisher exact test p < `alpha_window`, AND at least `min_weeks_below` of the window's
        weeks with gold are individually below that earlier rate (sustained, not one bad week);
    (b) after a guide change: the weeks since the latest guide-version change up to t
        (>= `min_since_guide` items) are below the weeks before it (>= `min_baseline`),
        one-sided Fisher exact test p < `alpha_guide` (one test per change and week).
    """

    window: int = 6
    min_window: int = 60
    min_baseline: int = 100
    alpha_window: float = 0.001
    min_weeks_below: int = 4
    alpha_guide: float = 0.005
    min_since_guide: int = 60

    def describe(self) -> str:
        return (
            f"An alert fires when the last {self.window} weeks pooled (at least "
            f"{self.min_window} gold items) are below the rater's own earlier rate (at least "
            f"{self.min_baseline} earlier gold items) with one-sided Fisher p < "
            f"{self.alpha_window:g} and at least {self.min_weeks_below} of those weeks are each "
            f"below it; or when accuracy since the latest guide change (at least "
            f"{self.min_since_guide} items) is below the accuracy before it with p < "
            f"{self.alpha_guide:g}. One bad week cannot fire it."
        )


@dataclass(frozen=True, eq=False)
class DeclineResult:
    flagged: np.ndarray  # bool per week
    cause: np.ndarray  # object per week: "", "window" or "guide"
    p_window: np.ndarray  # float per week, NaN where not testable
    p_guide: np.ndarray
    baseline_rate: np.ndarray  # the earlier rate each window was compared with (NaN if none)
    window_rate: np.ndarray

    @property
    def first_flag(self) -> int | None:
        hits = np.flatnonzero(self.flagged)
        return int(hits[0]) if hits.size else None

    @property
    def active(self) -> bool:
        """Flagged in the latest week (the alert stands now)."""
        return bool(self.flagged.size and self.flagged[-1])


def _fisher_lower(bk, bn, wk, wn) -> np.ndarray:
    """One-sided Fisher exact p that the window's rate is below the baseline's: the
    hypergeometric P(X <= wk) with wn draws from bn + wn items of which bk + wk are right."""
    return stats.hypergeom.cdf(wk, bn + wn, bk + wk, wn)


def decline_alerts(correct, n, guide_change_weeks=(), rule: DeclineRule | None = None):
    """Apply `DeclineRule` to one rater's consecutive weeks: `correct[t]` right of `n[t]` gold.

    `guide_change_weeks` are week indices at which a new guide version took effect. Vectorised
    over weeks (one hypergeometric call per condition).
    """
    rule = rule or DeclineRule()
    c = np.asarray(correct, dtype=np.int64)
    n = np.asarray(n, dtype=np.int64)
    if c.shape != n.shape or c.ndim != 1:
        raise ValueError("correct, n: expected two 1-d arrays of the same length")
    if np.any(c < 0) or np.any(c > n):
        raise ValueError("correct: expected 0 <= correct <= n in every week")
    weeks = n.size
    cum_c = np.concatenate([[0], np.cumsum(c)])
    cum_n = np.concatenate([[0], np.cumsum(n)])
    t = np.arange(weeks)
    lo = t - rule.window + 1
    ok = lo >= 1
    lo_c = np.clip(lo, 0, None)
    bk, bn = cum_c[lo_c], cum_n[lo_c]
    wk, wn = cum_c[t + 1] - bk, cum_n[t + 1] - bn
    testable = ok & (bn >= rule.min_baseline) & (wn >= rule.min_window)
    p_window = np.full(weeks, np.nan)
    if testable.any():
        p_window[testable] = _fisher_lower(bk[testable], bn[testable], wk[testable], wn[testable])
    with np.errstate(invalid="ignore", divide="ignore"):
        base_rate = np.where(bn > 0, bk / np.maximum(bn, 1), np.nan)
        win_rate = np.where(wn > 0, wk / np.maximum(wn, 1), np.nan)
    # weeks of the window each below the earlier rate (weeks without gold do not count)
    below = np.zeros(weeks, dtype=np.int64)
    for s in range(rule.window):  # loops over the window's width, vectorised over weeks
        idx = t - s
        valid = idx >= 0
        j = np.clip(idx, 0, None)
        wk_s = c[j] < base_rate * n[j]
        below += valid & (n[j] > 0) & wk_s
    window_hit = testable & (p_window < rule.alpha_window) & (below >= rule.min_weeks_below)

    p_guide = np.full(weeks, np.nan)
    changes = np.sort(np.asarray([g for g in guide_change_weeks if 0 < g < weeks], dtype=int))
    if changes.size:
        latest = np.searchsorted(changes, t, side="right") - 1  # index of latest change <= t
        has = latest >= 0
        g = np.where(has, changes[np.clip(latest, 0, None)], 0)
        gk, gn = cum_c[g], cum_n[g]
        sk, sn = cum_c[t + 1] - gk, cum_n[t + 1] - gn
        test_g = has & (gn >= rule.min_baseline) & (sn >= rule.min_since_guide)
        if test_g.any():
            p_guide[test_g] = _fisher_lower(gk[test_g], gn[test_g], sk[test_g], sn[test_g])
    guide_hit = p_guide < rule.alpha_guide
    cause = np.where(window_hit, "window", np.where(guide_hit, "guide", "")).astype(object)
    return DeclineResult(
        flagged=window_hit | guide_hit,
        cause=cause,
        p_window=p_window,
        p_guide=p_guide,
        baseline_rate=base_rate,
        window_rate=win_rate,
    )


@dataclass(frozen=True, eq=False)
class RunResult:
    """Per rater: the longest run of identical consecutive answers, and how surprising it is."""

    raters: np.ndarray
    longest: np.ndarray
    answer: np.ndarray  # the repeated answer of the longest run
    n_labels: np.ndarray
    expected_runs: np.ndarray  # expected number of runs at least that long, by chance


def longest_runs(raters, order, answers) -> RunResult:
    """Longest run of identical answers per rater, in the order they were given.

    Surprise: under independent answers drawn from the rater's own answer shares p, the expected
    number of runs of length >= L of answer a in n answers is about n (1 - p_a) p_a^L (Feller,
    An Introduction to Probability Theory, vol. 1, XIII.7); small values (< 0.01) mean the run is
    unlikely to be chance. Vectorised with one stable sort.
    """
    raters = np.asarray(raters)
    answers = np.asarray(answers)
    order = np.asarray(order)
    if raters.size == 0:
        empty = np.zeros(0)
        return RunResult(raters[:0], empty.astype(int), answers[:0], empty.astype(int), empty)
    idx = np.lexsort((order, raters))
    r, a = raters[idx], answers[idx]
    ru, r_code = np.unique(r, return_inverse=True)
    au, a_code = np.unique(a, return_inverse=True)
    new_run = np.ones(r.size, dtype=bool)
    new_run[1:] = (r_code[1:] != r_code[:-1]) | (a_code[1:] != a_code[:-1])
    run_id = np.cumsum(new_run) - 1
    run_len = np.bincount(run_id)
    run_rater = r_code[new_run]
    run_answer = a_code[new_run]
    # per rater the longest run (first one on ties)
    order_runs = np.lexsort((-run_len, run_rater))
    first = np.ones(order_runs.size, dtype=bool)
    first[1:] = run_rater[order_runs][1:] != run_rater[order_runs][:-1]
    best = order_runs[first]
    n_labels = np.bincount(r_code, minlength=ru.size)
    counts = np.bincount(r_code * au.size + a_code, minlength=ru.size * au.size).reshape(
        ru.size, au.size
    )
    p = counts[np.arange(ru.size), run_answer[best]] / n_labels
    longest = run_len[best]
    expected = n_labels * (1 - p) * p**longest
    expected = np.where(p >= 1, 1.0, expected)  # one answer only: runs are the whole record
    return RunResult(ru, longest, au[run_answer[best]], n_labels, expected)


def dawid_skene_rater_rates(error_rates: np.ndarray, priors: np.ndarray) -> tuple:
    """Per-class sensitivity and specificity of each rater from a Dawid-Skene fit.

    sensitivity_jk = pi_jkk = P(j answers k | true k); specificity_jk = P(j does not answer k |
    true class is not k) = sum_{t != k} p_t (1 - pi_jtk) / sum_{t != k} p_t (Dawid & Skene 1979,
    the rates of their eq. 2.3 and the class priors p). Arrays raters x K; NaN where undefined.
    """
    rates = np.asarray(error_rates, dtype=float)
    priors = np.asarray(priors, dtype=float)
    k = priors.size
    sens = np.diagonal(rates, axis1=1, axis2=2).copy()
    spec = np.full(sens.shape, np.nan)
    for c in range(k):  # K classes, vectorised over raters
        others = np.arange(k) != c
        w = priors[others]
        miss = 1 - rates[:, others, c]  # P(not answering c | true t), t != c
        with np.errstate(invalid="ignore"):
            valid = ~np.isnan(miss)
            num = np.nansum(miss * w, axis=1)
            den = (valid * w).sum(axis=1)
            spec[:, c] = np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)
    return sens, spec
