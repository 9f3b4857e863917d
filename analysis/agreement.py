"""Inter-rater agreement and reliability statistics over long-format labels (item, rater, label).

Percent, specific and preference agreement; Cohen/Fleiss kappa, Krippendorff's alpha, ICC.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy import stats

from analysis._long import as_array, check_same_length, encode, unique_inverse

__all__ = [
    "ICC_FORMS",
    "LEVELS",
    "AlphaResult",
    "BootstrapResult",
    "FleissKappaResult",
    "ICCResult",
    "KappaResult",
    "LabelDistributionResult",
    "PairwiseKappaResult",
    "PercentAgreementResult",
    "PreferenceAgreementResult",
    "SpecificAgreementResult",
    "bootstrap",
    "bootstrap_many",
    "cohen_kappa",
    "fleiss_kappa",
    "icc",
    "krippendorff_alpha",
    "label_distribution",
    "pairwise_kappas",
    "percent_agreement",
    "preference_agreement",
    "specific_agreement",
]

LEVELS = ("nominal", "ordinal", "interval", "ratio")
ICC_FORMS = ("ICC(1,1)", "ICC(2,1)", "ICC(3,1)", "ICC(1,k)", "ICC(2,k)", "ICC(3,k)")
_WEIGHTS = (None, "linear", "quadratic")
_TIES = ("include", "exclude")
_TIE = "tie"

# An items x categories count table is kept dense when it has at most this many cells per label
# (and K is small); otherwise it is a scipy.sparse CSR matrix.
_DENSE_CELLS_PER_LABEL = 4
_DENSE_CELLS_MIN = 1 << 20
_DENSE_MAX_CATEGORIES = 1024
# Distances over all category pairs are evaluated in blocks of about this many cells.
_BLOCK_CELLS = 1 << 22
# Coincidences o_ck are summed over blocks of items of about this many table cells.
_COINCIDENCE_BLOCK = 1 << 16
# The bootstrap takes its replicates' sums as one matrix product (counts x features) for scales of
# at most this many categories; the count matrix of a block of replicates has about this many cells.
_LINEAR_MAX_CATS = 8
_REPLICATE_BLOCK_CELLS = 1 << 22

_NO_LABELS = "no labels"
_ONE_RATER = "only one rater: agreement needs at least two"
_NO_PAIRS = "no item has two or more labels"


# --------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class _Result:
    value: float
    reason: str | None = None  # why value is NaN; None when it is defined
    n_items: int  # items that entered the statistic
    n_dropped_items: int  # items present in the data that did not
    n_labels: int  # labels (rows) that entered the statistic
    n_raters: int  # distinct raters in the data


@dataclass(frozen=True, kw_only=True)
class PercentAgreementResult(_Result):
    """Mean share of agreeing rater pairs per item (Fleiss' P-bar)."""


@dataclass(frozen=True, kw_only=True)
class KappaResult(_Result):
    """Cohen's (weighted) kappa; agreement = 1 - weighted disagreement, weights scaled to max 1."""

    observed_agreement: float
    expected_agreement: float
    weights: str | None
    categories: tuple
    raters: tuple  # (rater of the rows, rater of the columns) of the contingency table


@dataclass(frozen=True, kw_only=True)
class FleissKappaResult(_Result):
    """Fleiss' kappa with its observed (P-bar) and chance (P_e) agreement."""

    observed_agreement: float
    expected_agreement: float
    categories: tuple


@dataclass(frozen=True, kw_only=True)
class AlphaResult(_Result):
    """Krippendorff's alpha and its disagreements; n_pairable_values is n.. (Krippendorff 2011)."""

    n_pairable_values: int
    level: str
    observed_disagreement: float
    expected_disagreement: float
    categories: tuple


@dataclass(frozen=True, kw_only=True)
class ICCResult(_Result):
    """Shrout & Fleiss intraclass correlation with its F test and F-based confidence interval."""

    form: str
    ci_low: float
    ci_high: float
    confidence: float
    f_stat: float
    df1: float
    df2: float
    p_value: float
    ms_rows: float  # BMS, between-items mean square
    ms_within: float  # WMS, within-items mean square (one-way model)
    ms_raters: float  # JMS, between-raters mean square
    ms_error: float  # EMS, residual mean square (two-way model)


@dataclass(frozen=True, kw_only=True)
class SpecificAgreementResult(_Result):
    """Overall agreement (value) and Uebersax's specific agreement per category."""

    per_category: dict


@dataclass(frozen=True, kw_only=True)
class PreferenceAgreementResult(_Result):
    """Share of agreeing rater pairs pooled over items for pairwise-preference judgments."""

    n_pairs: int
    n_agreeing_pairs: int
    ties: str


@dataclass(frozen=True, kw_only=True)
class PairwiseKappaResult(_Result):
    """Cohen's kappa for each rater pair with shared items; value is their mean (Light's kappa)."""

    rater_a: np.ndarray
    rater_b: np.ndarray
    kappa: np.ndarray
    n_shared: np.ndarray
    weights: str | None
    categories: tuple


@dataclass(frozen=True, kw_only=True)
class LabelDistributionResult(_Result):
    """Label counts and shares overall and per rater; value is the share of the modal category."""

    categories: tuple
    counts: np.ndarray
    shares: np.ndarray
    raters: tuple
    rater_counts: np.ndarray  # raters x categories
    rater_shares: np.ndarray


@dataclass(frozen=True, kw_only=True)
class BootstrapResult:
    """Point estimate and percentile bootstrap interval from resampling items with replacement."""

    statistic: str
    value: float
    reason: str | None
    ci_low: float
    ci_high: float
    confidence: float
    n_boot: int
    n_valid: int  # replicates where the statistic was defined
    seed: int
    n_items: int
    n_dropped_items: int
    replicates: np.ndarray


# --------------------------------------------------------------------------------------------
# Input handling
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Long:
    item: np.ndarray  # codes 0..I-1
    rater: np.ndarray  # codes 0..R-1
    label: np.ndarray  # codes 0..K-1 into categories
    item_ids: np.ndarray
    rater_ids: np.ndarray
    categories: np.ndarray
    item_counts: np.ndarray  # labels per item, m_i

    @property
    def n(self) -> int:
        return int(self.label.size)

    @property
    def n_items(self) -> int:
        return int(self.item_ids.size)

    @property
    def n_raters(self) -> int:
        return int(self.rater_ids.size)

    @property
    def n_cats(self) -> int:
        return int(self.categories.size)


def _read(items, raters, labels, categories=None, labels_name: str = "labels") -> _Long:
    """Validate and encode the three long-format columns (and the declared categories)."""
    items_a = as_array(items, "items")
    raters_a = as_array(raters, "raters")
    labels_a = as_array(labels, labels_name)
    check_same_length(items=items_a, raters=raters_a, **{labels_name: labels_a})
    item, item_ids, item_counts = encode(items_a, "items", return_counts=True)
    rater, rater_ids = encode(raters_a, "raters")
    label, uniques = encode(labels_a, labels_name)
    if categories is not None:
        label, uniques = _apply_categories(label, uniques, categories, labels_name)
    return _Long(item, rater, label, item_ids, rater_ids, uniques, item_counts)


def _apply_categories(codes, uniques, categories, labels_name):
    """Re-code labels as positions in the declared `categories` (a loop over categories only)."""
    cats = as_array(categories, "categories")
    cat_list = cats.tolist()
    position = {}
    for j, c in enumerate(cat_list):
        if not isinstance(c, Hashable):  # e.g. categories given as a list of lists
            raise ValueError(f"categories: {c!r} at position {j} is not a single category")
        if c in position:
            raise ValueError(f"categories: {c!r} appears more than once")
        position[c] = j
    remap = np.empty(uniques.size, dtype=np.intp)
    for u, value in enumerate(uniques.tolist()):
        if value not in position:
            raise ValueError(f"{labels_name}: value {value!r} is not among the declared categories")
        remap[u] = position[value]
    return remap[codes], cats


def _check_choice(value, allowed, name):
    if value not in allowed:
        raise ValueError(f"{name}: expected one of {allowed}, got {value!r}")


def _as_tuple(arr: np.ndarray) -> tuple:
    return tuple(arr.tolist())


def _nan(reason: str) -> tuple[float, str]:
    return float("nan"), reason


# --------------------------------------------------------------------------------------------
# Items x categories counts n_ic
# --------------------------------------------------------------------------------------------


class _Counts:
    """Items x categories count table n_ic (dense when small, else CSR) and item totals m_i.

    The dense table is stored transposed, categories x items (`table_t`), so that reductions
    over K and the coincidence products run along contiguous rows.
    """

    def __init__(self, t: _Long):
        item, label, n_items, n_cats = t.item, t.label, t.n_items, t.n_cats
        self.n_items, self.n_cats = n_items, n_cats
        self.m = t.item_counts.astype(np.float64)
        cells = n_items * n_cats
        limit = max(_DENSE_CELLS_PER_LABEL * item.size, _DENSE_CELLS_MIN)
        self.dense = cells <= limit and n_cats <= _DENSE_MAX_CATEGORIES
        if self.dense:
            if n_cats > 1:
                key = label * n_items
                key += item
            else:
                key = item
            table = np.bincount(key, minlength=cells)
            del key
            # int64 -> float64 in place (same itemsize): saves a table-sized copy
            as_float = table.view(np.float64)
            np.copyto(as_float, table, casting="unsafe")
            self.table_t = as_float.reshape(n_cats, n_items)
        else:
            key = item.astype(np.int64) * n_cats + label
            cell_keys, cell_codes = unique_inverse(key)
            count = np.bincount(cell_codes).astype(np.float64)
            self.cell_item, self.cell_cat = np.divmod(cell_keys, n_cats)
            self.cell_count = count
            self.table = sp.csr_array(
                (count, (self.cell_item, self.cell_cat)), shape=(n_items, n_cats)
            )

    def row_sum(self, f: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> np.ndarray:
        """Per item: sum over categories of f(n_ic, m_i); f(0, m) must be 0."""
        if self.dense:
            return np.add.reduce(f(self.table_t, self.m[None, :]), axis=0)
        values = f(self.cell_count, self.m[self.cell_item])
        return np.bincount(self.cell_item, weights=values, minlength=self.n_items)

    def col_sum(self, f: Callable[[np.ndarray, np.ndarray], np.ndarray], w: np.ndarray):
        """Per category: sum over items of w_i f(n_ic, m_i); f(0, m) must be 0."""
        if self.dense:
            return f(self.table_t, self.m[None, :]) @ w
        values = f(self.cell_count, self.m[self.cell_item]) * w[self.cell_item]
        return np.bincount(self.cell_cat, weights=values, minlength=self.n_cats)

    def coincidences(self, v: np.ndarray):
        """Unnormalised o_ck = sum_i v_i n_ic n_ik as (rows, cols, values) or a dense K x K."""
        if self.dense:
            # blocks of items: the scaled copy stays in cache and is reused, never table-sized
            table_t, n_cats = self.table_t, self.n_cats
            block = max(1, _COINCIDENCE_BLOCK // max(n_cats, 1))
            o = np.zeros((n_cats, n_cats))
            scaled = np.empty((n_cats, min(block, self.n_items)))
            for start in range(0, self.n_items, block):
                part = table_t[:, start : start + block]
                out = scaled[:, : part.shape[1]]
                np.multiply(part, v[start : start + block], out=out)
                o += out @ part.T
            return o
        o = (self.table.T @ (sp.diags_array(v) @ self.table)).tocoo()
        return o.row, o.col, o.data


def _pairs_in_items(n_c, m):
    return n_c * (n_c - 1.0)


def _values_times_rest(n_c, m):
    return n_c * (m - 1.0)


def _identity(n_c, m):
    return n_c


class _Prepared:
    """Per-item sufficient statistics of one statistic; value(w) recomputes it for item weights w.

    `eligible` are the item codes that enter the statistic; the bootstrap redraws them.
    """

    reason: str | None = None
    eligible: np.ndarray
    n_items_total: int

    def base_weights(self) -> np.ndarray:
        w = np.zeros(self.n_items_total)
        w[self.eligible] = 1.0
        return w

    def value(self, w: np.ndarray) -> tuple[float, str | None]:  # pragma: no cover - abstract
        raise NotImplementedError

    def linear(self) -> np.ndarray | None:
        """Per-item features F (n_items_total x d) such that the statistic is a function of the
        item-weighted sums w @ F alone (`from_sums`), or None: then the bootstrap calls value(w)
        per replicate. Lets the bootstrap take all replicates' sums in one matrix product."""
        return None

    def from_sums(self, s: np.ndarray) -> float:  # pragma: no cover - only with linear()
        raise NotImplementedError


class _ItemShare(_Prepared):
    """Statistics built from per-item pair counts (percent, Fleiss, specific, preference)."""

    def __init__(self, t: _Long, kind: str):
        self.kind, self.t = kind, t
        self.n_items_total = t.n_items
        self.counts = c = _Counts(t)
        pairable = c.m >= 2
        self.eligible = np.flatnonzero(pairable)
        self.n_labels = int(c.m[pairable].sum())
        if t.n == 0:
            self.reason = _NO_LABELS
        elif t.n_raters < 2:
            self.reason = _ONE_RATER
        elif self.eligible.size == 0:
            self.reason = _NO_PAIRS
        self.agree = c.row_sum(_pairs_in_items)  # sum_c n_ic (n_ic - 1)
        self.pairs = c.m * (c.m - 1.0)  # m_i (m_i - 1)
        with np.errstate(invalid="ignore", divide="ignore"):
            self.p_item = np.where(pairable, self.agree / self.pairs, 0.0)

    def value(self, w):
        if self.reason:
            return _nan(self.reason)
        if self.kind == "percent":
            return float(w @ self.p_item / w.sum()), None
        if self.kind == "pooled":
            return float((w @ self.agree) / (w @ self.pairs)), None
        if self.kind == "fleiss":
            observed, expected = self.fleiss_parts(w)
            if expected >= 1.0 - 1e-15:
                return _nan("chance agreement is 1: every label is the same category")
            return (observed - expected) / (1.0 - expected), None
        raise AssertionError(self.kind)

    def linear(self):
        m = self.counts.m
        if self.kind == "percent":
            return np.column_stack([self.p_item, np.ones_like(m)])
        if self.kind == "pooled":
            return np.column_stack([self.agree, self.pairs])
        if self.kind == "fleiss" and self.counts.dense and self.counts.n_cats <= _LINEAR_MAX_CATS:
            return np.column_stack([self.p_item, np.ones_like(m), m, self.counts.table_t.T])
        return None

    def from_sums(self, s):
        if self.kind == "fleiss":
            observed = s[0] / s[1]
            p_cat = s[3:] / s[2]
            expected = float(p_cat @ p_cat)
            if expected >= 1.0 - 1e-15:
                return float("nan")
            return float((observed - expected) / (1.0 - expected))
        return float(s[0] / s[1])

    def fleiss_parts(self, w):
        observed = float(w @ self.p_item / w.sum())
        p_cat = self.counts.col_sum(_identity, w) / (w @ self.counts.m)
        return observed, float(p_cat @ p_cat)

    def specific_parts(self, w):
        num = self.counts.col_sum(_pairs_in_items, w)
        den = self.counts.col_sum(_values_times_rest, w)
        return num, den


# --------------------------------------------------------------------------------------------
# Percent agreement, Fleiss' kappa, specific agreement, preference agreement
# --------------------------------------------------------------------------------------------


def _share_fields(prep: _ItemShare) -> dict[str, Any]:
    t = prep.t
    return {
        "n_items": int(prep.eligible.size),
        "n_dropped_items": t.n_items - int(prep.eligible.size),
        "n_labels": prep.n_labels,
        "n_raters": t.n_raters,
    }


def percent_agreement(items, raters, labels) -> PercentAgreementResult:
    """Mean over items of the share of agreeing rater pairs: P-bar = mean_i P_i.

    P_i = sum_c n_ic (n_ic - 1) / (n_i (n_i - 1)) over items with n_i >= 2 labels (Fleiss 1971,
    eq. 2-4); items with a single label are dropped. The rater column only counts raters.
    """
    prep = _ItemShare(_read(items, raters, labels), "percent")
    value, reason = prep.value(prep.base_weights())
    return PercentAgreementResult(value=value, reason=reason, **_share_fields(prep))


def fleiss_kappa(items, raters, labels, categories=None) -> FleissKappaResult:
    """Fleiss' kappa: (P-bar - P_e) / (1 - P_e), P_e = sum_c p_c^2 (Fleiss 1971).

    P-bar is percent_agreement; p_c = sum_i n_ic / sum_i n_i over items with n_i >= 2. With unequal
    n_i each item's P_i uses its own n_i and p_c pools all labels of the kept items, which reduces
    to Fleiss' formula when every item has the same number of labels. NaN when P_e = 1.
    """
    t = _read(items, raters, labels, categories)
    prep = _ItemShare(t, "fleiss")
    w = prep.base_weights()
    value, reason = prep.value(w)
    observed = expected = float("nan")
    if prep.reason is None:
        observed, expected = prep.fleiss_parts(w)
    return FleissKappaResult(
        value=value,
        reason=reason,
        observed_agreement=observed,
        expected_agreement=expected,
        categories=_as_tuple(t.categories),
        **_share_fields(prep),
    )


def specific_agreement(items, raters, labels, categories=None) -> SpecificAgreementResult:
    """Specific agreement per category: p_s(c) = sum_i n_ic (n_ic - 1) / sum_i n_ic (n_i - 1).

    Uebersax (1982); sums run over items with n_i >= 2. For two raters and a yes/no scale p_s(yes)
    is positive agreement 2a / (2a + b + c). `value` is the overall agreement
    sum_c sum_i n_ic (n_ic - 1) / sum_i n_i (n_i - 1). A declared category nobody used is NaN.
    """
    t = _read(items, raters, labels, categories)
    prep = _ItemShare(t, "pooled")
    w = prep.base_weights()
    value, reason = prep.value(w)
    if prep.reason is None:
        num, den = prep.specific_parts(w)
        with np.errstate(invalid="ignore", divide="ignore"):
            per = np.where(den > 0, num / den, np.nan)
    else:
        per = np.full(t.n_cats, np.nan)
    per_category = dict(zip(t.categories.tolist(), per.tolist(), strict=True))
    return SpecificAgreementResult(
        value=value, reason=reason, per_category=per_category, **_share_fields(prep)
    )


def _preference_long(items, raters, choices, ties) -> _Long:
    """Read pairwise-preference choices; ties="exclude" drops the "tie" rows and so their pairs."""
    _check_choice(ties, _TIES, "ties")
    t = _read(items, raters, choices, labels_name="choices")
    if ties == "include":
        return t
    keep_codes = np.array([c != _TIE for c in t.categories.tolist()], dtype=bool)
    keep = keep_codes[t.label] if t.n_cats else np.zeros(0, dtype=bool)
    item = t.item[keep]
    counts = np.bincount(item, minlength=t.n_items)
    return _Long(item, t.rater[keep], t.label[keep], t.item_ids, t.rater_ids, t.categories, counts)


def preference_agreement(items, raters, choices, ties="include") -> PreferenceAgreementResult:
    """Pooled share of agreeing rater pairs: sum_i sum_c n_ic (n_ic - 1) / sum_i n_i (n_i - 1).

    Choices are the winning system's canonical id or "tie"; two ties agree. ties="exclude" drops
    every pair in which either rater chose "tie" (the pairs among the non-tie choices remain).
    Pairwise agreement as in Fleiss (1971) pooled over items rather than averaged.
    """
    t = _preference_long(items, raters, choices, ties)
    prep = _ItemShare(t, "pooled")
    w = prep.base_weights()
    value, reason = prep.value(w)
    n_pairs = int(round(w @ prep.pairs / 2))
    n_agree = int(round(w @ prep.agree / 2))
    return PreferenceAgreementResult(
        value=value,
        reason=reason,
        n_pairs=n_pairs,
        n_agreeing_pairs=n_agree,
        ties=ties,
        **_share_fields(prep),
    )


# --------------------------------------------------------------------------------------------
# Krippendorff's alpha
# --------------------------------------------------------------------------------------------


def _distance(level, c, k, values, n_c):
    """Krippendorff's squared difference delta^2 between category codes c and k (2011, sec. E)."""
    if level == "nominal":
        return (c != k).astype(np.float64)
    if level == "ordinal":
        cum = np.cumsum(n_c)
        lo, hi = np.minimum(c, k), np.maximum(c, k)
        between = cum[hi] - cum[lo] + n_c[lo]  # sum of n_g for g from lo to hi
        return (between - (n_c[c] + n_c[k]) / 2.0) ** 2
    vc, vk = values[c], values[k]
    if level == "interval":
        return (vc - vk) ** 2
    total = vc + vk
    ratio = np.divide(vc - vk, total, out=np.zeros(np.broadcast(vc, vk).shape), where=total != 0)
    return ratio**2


def _expected_sum(level, values, n_c):
    """sum_c sum_k n_c n_k delta^2_ck, over all category pairs in blocks of rows."""
    n_cats = n_c.size
    if n_cats > _DENSE_MAX_CATEGORIES and level == "nominal":
        n = n_c.sum()
        return float(n * n - n_c @ n_c)
    if n_cats > _DENSE_MAX_CATEGORIES and level == "interval":
        n = n_c.sum()
        centred = values - (n_c @ values) / n
        s1, s2 = n_c @ centred, n_c @ centred**2
        return float(2.0 * (n * s2 - s1 * s1))
    block = max(1, _BLOCK_CELLS // max(n_cats, 1))
    k = np.arange(n_cats)
    total = 0.0
    for start in range(0, n_cats, block):  # one pass when K is small
        c = np.arange(start, min(start + block, n_cats))[:, None]
        total += float(n_c[c.ravel()] @ _distance(level, c, k[None, :], values, n_c) @ n_c)
    return total


class _Alpha(_Prepared):
    def __init__(self, t: _Long, level: str, values: np.ndarray):
        self.t, self.level, self.values = t, level, values
        self.n_items_total = t.n_items
        self.counts = c = _Counts(t)
        pairable = c.m >= 2
        self.eligible = np.flatnonzero(pairable)
        with np.errstate(divide="ignore"):
            self.inv_m1 = np.where(pairable, 1.0 / (c.m - 1.0), 0.0)
        if t.n == 0:
            self.reason = _NO_LABELS
        elif t.n_raters < 2:
            self.reason = _ONE_RATER
        elif self.eligible.size == 0:
            self.reason = "no pairable units: every unit has fewer than two values"

    def parts(self, w):
        """(alpha, reason, n.., D_o, D_e) for item weights w."""
        c = self.counts
        return self._alpha(c.col_sum(_identity, w), c.coincidences(w * self.inv_m1))

    def linear(self):
        c = self.counts
        if not (c.dense and c.n_cats <= _LINEAR_MAX_CATS):
            return None
        table = c.table_t.T  # n_items x K
        upper = np.triu_indices(c.n_cats)
        products = table[:, upper[0]] * table[:, upper[1]]
        products *= self.inv_m1[:, None]
        return np.column_stack([table, products])

    def from_sums(self, s):
        k = self.counts.n_cats
        o = np.zeros((k, k))
        o[np.triu_indices(k)] = s[k:]
        o = o + np.triu(o, 1).T
        alpha, reason, *_ = self._alpha(s[:k], o)
        return alpha if reason is None else float("nan")

    def _alpha(self, n_c, o):
        """(alpha, reason, n.., D_o, D_e) from the category totals n_c and coincidences o."""
        c = self.counts
        n = float(n_c.sum())
        k_all = np.arange(c.n_cats)
        if c.dense:
            delta = _distance(self.level, k_all[:, None], k_all[None, :], self.values, n_c)
            observed = float((o * delta).sum())
        else:
            rows, cols, data = o
            observed = float(data @ _distance(self.level, rows, cols, self.values, n_c))
        expected = _expected_sum(self.level, self.values, n_c)
        d_o, d_e = observed / n, expected / (n * (n - 1.0))
        if expected <= 0.0:
            reason = "expected disagreement is zero: all pairable values are the same"
            return float("nan"), reason, n, d_o, d_e
        return 1.0 - (n - 1.0) * observed / expected, None, n, d_o, d_e

    def value(self, w):
        if self.reason:
            return _nan(self.reason)
        alpha, reason, *_ = self.parts(w)
        return alpha, reason


def _alpha_prepare(items, raters, labels, level="nominal", categories=None) -> _Alpha:
    _check_choice(level, LEVELS, "level")
    t = _read(items, raters, labels, categories)
    cats = t.categories
    numeric = cats.dtype.kind in "iufb"
    if level in ("interval", "ratio"):
        if not numeric:
            raise ValueError(f"labels: {level} alpha needs numeric labels, got {cats.dtype}")
        values = cats.astype(np.float64)
        if level == "ratio" and values.size and values.min() < 0:
            raise ValueError("labels: ratio alpha needs non-negative values")
    else:
        values = np.arange(cats.size, dtype=np.float64)
        if level == "ordinal" and categories is None and not numeric:
            raise ValueError(
                "categories: ordinal alpha on non-numeric labels needs categories giving the order"
            )
        if level == "ordinal" and categories is None and cats.dtype == object:
            raise ValueError("categories: ordinal labels of mixed types need categories")
    return _Alpha(t, level, values)


def krippendorff_alpha(items, raters, labels, level="nominal", categories=None) -> AlphaResult:
    """Krippendorff's alpha = 1 - D_o / D_e = 1 - (n.. - 1) sum o_ck d_ck / sum n_c n_k d_ck.

    Coincidences o_ck = sum_u n_uc n_uk / (m_u - 1) (n_uc (n_uc - 1) on the diagonal) over units
    with m_u >= 2 values; units with one value are not pairable and are dropped entirely.
    Distances d_ck for level nominal, ordinal (by category order: `categories`, else sorted
    numbers), interval or ratio as in Krippendorff (2011), "Computing Krippendorff's
    Alpha-Reliability". NaN when no unit is pairable or D_e = 0 (a single value).
    """
    prep = _alpha_prepare(items, raters, labels, level, categories)
    t = prep.t
    pairable = prep.eligible.size
    fields = {
        "n_items": int(pairable),
        "n_dropped_items": t.n_items - int(pairable),
        "n_raters": t.n_raters,
        "level": level,
        "categories": _as_tuple(t.categories),
    }
    if prep.reason:
        value, reason = _nan(prep.reason)
        n_pairable, d_o, d_e = int(prep.counts.m[prep.eligible].sum()), np.nan, np.nan
    else:
        value, reason, n, d_o, d_e = prep.parts(prep.base_weights())
        n_pairable = int(round(n))
    return AlphaResult(
        value=value,
        reason=reason,
        n_labels=n_pairable,
        n_pairable_values=n_pairable,
        observed_disagreement=d_o,
        expected_disagreement=d_e,
        **fields,
    )


# --------------------------------------------------------------------------------------------
# Cohen's kappa and all pairwise kappas
# --------------------------------------------------------------------------------------------


def _disagreement_weights(weights: str | None, n_cats: int) -> np.ndarray:
    """Disagreement weights: 1 - identity, |i - j| / (K - 1), or its square (Cohen 1968)."""
    idx = np.arange(n_cats, dtype=np.float64)
    if weights is None:
        return 1.0 - np.eye(n_cats)
    dist = np.abs(idx[:, None] - idx[None, :]) / max(n_cats - 1, 1)
    return dist if weights == "linear" else dist**2


class _Cohen(_Prepared):
    def __init__(self, t: _Long, weights):
        self.t, self.weights = t, weights
        self.n_items_total = t.n_items
        if t.n_raters != 2:
            raise ValueError(f"raters: cohen_kappa needs exactly two raters, got {t.n_raters}")
        seen = np.bincount(t.item * 2 + t.rater, minlength=2 * t.n_items)
        if seen.max(initial=0) > 1:
            cell = int(np.argmax(seen))
            raise ValueError(
                f"raters: rater {t.rater_ids[cell % 2]!r} labelled item "
                f"{t.item_ids[cell // 2]!r} more than once"
            )
        first = np.full(t.n_items, -1, dtype=np.intp)
        second = np.full(t.n_items, -1, dtype=np.intp)
        is_a = t.rater == 0
        first[t.item[is_a]] = t.label[is_a]
        second[t.item[~is_a]] = t.label[~is_a]
        self.eligible = np.flatnonzero((first >= 0) & (second >= 0))
        self.a, self.b = first[self.eligible], second[self.eligible]
        self.K = t.n_cats
        self.W = _disagreement_weights(weights, self.K)
        if self.eligible.size == 0:
            self.reason = "no item was labelled by both raters"

    def parts(self, w):
        K = self.K
        table = np.bincount(self.a * K + self.b, weights=w[self.eligible], minlength=K * K).reshape(
            K, K
        )
        n = table.sum()
        d_o = float((self.W * table).sum()) / n
        d_e = float(table.sum(axis=1) @ self.W @ table.sum(axis=0)) / (n * n)
        if d_e <= 0.0:
            return float("nan"), _SAME_CATEGORY, d_o, d_e
        return 1.0 - d_o / d_e, None, d_o, d_e

    def value(self, w):
        if self.reason:
            return _nan(self.reason)
        kappa, reason, *_ = self.parts(w)
        return kappa, reason


_SAME_CATEGORY = "chance disagreement is zero: both raters used one and the same category"


def cohen_kappa(items, raters, labels, weights=None, categories=None) -> KappaResult:
    """Cohen's kappa for exactly two raters: kappa = 1 - sum w_ij O_ij / sum w_ij E_ij.

    O is the raters' contingency table over items both labelled (pairwise deletion), E_ij =
    O_i. O_.j / n, w = 1 - I (Cohen 1960) or |i - j| / (K - 1) ("linear") or its square
    ("quadratic", Cohen 1968). Unweighted this is (p_o - p_e) / (1 - p_e). The scale is
    `categories` in the given order, unused categories included, else the sorted labels seen.
    """
    _check_choice(weights, _WEIGHTS, "weights")
    t = _read(items, raters, labels, categories)
    prep = _Cohen(t, weights)
    fields = {
        "n_items": int(prep.eligible.size),
        "n_dropped_items": t.n_items - int(prep.eligible.size),
        "n_labels": 2 * int(prep.eligible.size),
        "n_raters": 2,
        "weights": weights,
        "categories": _as_tuple(t.categories),
        "raters": _as_tuple(t.rater_ids),
    }
    if prep.reason:
        value, reason = _nan(prep.reason)
        d_o = d_e = float("nan")
    else:
        value, reason, d_o, d_e = prep.parts(prep.base_weights())
    return KappaResult(
        value=value,
        reason=reason,
        observed_agreement=1.0 - d_o,
        expected_agreement=1.0 - d_e,
        **fields,
    )


def _within_item_pairs(item: np.ndarray, n_items: int) -> tuple[np.ndarray, np.ndarray]:
    """Row indices (first, second) of every unordered pair of rows sharing an item.

    `item` must be sorted. Vectorised: row j pairs with the rows after it in its item.
    """
    n = item.size
    ends = np.cumsum(np.bincount(item, minlength=n_items))
    partners = ends[item] - np.arange(1, n + 1)
    first = np.repeat(np.arange(n), partners)
    second = np.arange(first.size) - np.repeat(np.cumsum(partners) - partners, partners)
    second += first
    second += 1
    return first, second


def pairwise_kappas(items, raters, labels, weights=None, categories=None) -> PairwiseKappaResult:
    """Cohen's kappa for every rater pair with shared items; value = their mean (Light 1971).

    For each pair (a, b), kappa_ab = 1 - sum w_ij O_ij / sum w_ij E_ij over the items both
    labelled (Cohen 1960; weights as in cohen_kappa). All pairs at once from within-item row pairs
    and np.bincount; kappa is NaN for a pair whose chance disagreement is zero.
    """
    _check_choice(weights, _WEIGHTS, "weights")
    t = _read(items, raters, labels, categories)
    item, rater, label = t.item, t.rater, t.label
    if t.n > 1 and np.any(item[1:] < item[:-1]):
        order = np.argsort(item, kind="stable")
        item, rater, label = item[order], rater[order], label[order]
    first, second = _within_item_pairs(item, t.n_items)
    ra, rb = rater[first], rater[second]
    la, lb = label[first], label[second]
    item_of_pair = item[first]
    del first, second
    same = np.flatnonzero(ra == rb)
    if same.size:
        raise ValueError(
            f"raters: rater {t.rater_ids[ra[same[0]]]!r} labelled item "
            f"{t.item_ids[item_of_pair[same[0]]]!r} more than once"
        )
    del item_of_pair
    swap = ra > rb
    ra, rb = np.where(swap, rb, ra), np.where(swap, ra, rb)
    la, lb = np.where(swap, lb, la), np.where(swap, la, lb)
    R, K = t.n_raters, t.n_cats
    key = ra.astype(np.int64) * R + rb
    if max(4 * key.size, 1 << 20) >= R * R:
        present = np.bincount(key, minlength=R * R) > 0
        pair_keys = np.flatnonzero(present)
        pid = (np.cumsum(present) - 1)[key]
    else:
        pair_keys, pid = unique_inverse(key)
    n_pairs = pair_keys.size
    W = _disagreement_weights(weights, K)
    n_shared = np.bincount(pid, minlength=n_pairs).astype(np.float64)
    observed = np.bincount(pid, weights=W[la, lb], minlength=n_pairs)
    margin_a = np.bincount(pid * K + la, minlength=n_pairs * K).reshape(n_pairs, K)
    margin_b = np.bincount(pid * K + lb, minlength=n_pairs * K).reshape(n_pairs, K)
    expected = ((margin_a @ W) * margin_b).sum(axis=1) / np.maximum(n_shared, 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        kappa = np.where(expected > 0, 1.0 - observed / expected, np.nan)
    m = np.bincount(t.item, minlength=t.n_items)
    n_kept = int((m >= 2).sum())
    finite = np.isfinite(kappa)
    if t.n == 0:
        value, reason = _nan(_NO_LABELS)
    elif R < 2:
        value, reason = _nan(_ONE_RATER)
    elif n_pairs == 0:
        value, reason = _nan("no two raters share an item")
    elif not finite.any():
        value, reason = _nan("kappa is undefined for every rater pair (" + _SAME_CATEGORY + ")")
    else:
        value, reason = float(kappa[finite].mean()), None
    return PairwiseKappaResult(
        value=value,
        reason=reason,
        n_items=n_kept,
        n_dropped_items=t.n_items - n_kept,
        n_labels=int(m[m >= 2].sum()),
        n_raters=R,
        rater_a=t.rater_ids[pair_keys // max(R, 1)],
        rater_b=t.rater_ids[pair_keys % max(R, 1)],
        kappa=kappa,
        n_shared=n_shared.astype(np.int64),
        weights=weights,
        categories=_as_tuple(t.categories),
    )


# --------------------------------------------------------------------------------------------
# Intraclass correlation
# --------------------------------------------------------------------------------------------


def icc(items, raters, scores, form="ICC(2,1)", confidence=0.95) -> ICCResult:
    """Shrout & Fleiss (1979) intraclass correlation from the two-way ANOVA mean squares.

    ICC(1,1) = (BMS - WMS) / (BMS + (k-1) WMS); ICC(2,1) = (BMS - EMS) / (BMS + (k-1) EMS +
    k (JMS - EMS) / n); ICC(3,1) = (BMS - EMS) / (BMS + (k-1) EMS); the (.,k) forms average k
    raters: (BMS - WMS) / BMS, (BMS - EMS) / (BMS + (JMS - EMS) / n), (BMS - EMS) / BMS. The CI is
    F-based (Shrout & Fleiss 1979; McGraw & Wong 1996 for ICC(2,.)). Items missing any of the k
    raters are dropped listwise and counted in n_dropped_items.
    """
    _check_choice(form, ICC_FORMS, "form")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence: expected a level in (0, 1), got {confidence!r}")
    scores_a = as_array(scores, "scores")
    if scores_a.dtype.kind in "USM":
        raise ValueError(f"scores: expected numbers, got {scores_a.dtype}")
    if scores_a.dtype.kind not in "iufb":
        try:
            scores_a = scores_a.astype(np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"scores: expected numbers, got {scores_a.dtype}") from None
    y_all = scores_a.astype(np.float64)
    if not np.isfinite(y_all).all():
        raise ValueError("scores: contains an infinite value")
    items_a, raters_a = as_array(items, "items"), as_array(raters, "raters")
    check_same_length(items=items_a, raters=raters_a, scores=y_all)
    item, item_ids = encode(items_a, "items")
    rater, rater_ids = encode(raters_a, "raters")
    n_all, k = int(item_ids.size), int(rater_ids.size)
    key = item.astype(np.int64) * k + rater
    if n_all * k <= max(4 * key.size, 1 << 20):
        seen = np.bincount(key, minlength=n_all * k)
        dup = np.flatnonzero(seen > 1)
        dup_key = int(dup[0]) if dup.size else None
    else:
        uniq, codes = unique_inverse(key)
        seen_u = np.bincount(codes)
        dup_key = int(uniq[np.argmax(seen_u)]) if seen_u.size and seen_u.max() > 1 else None
    if dup_key is not None:
        raise ValueError(
            f"raters: rater {rater_ids[dup_key % k]!r} scored item {item_ids[dup_key // k]!r} "
            "more than once"
        )
    m = np.bincount(item, minlength=n_all)
    complete = m == k
    n = int(complete.sum())
    nan = float("nan")
    base = {
        "n_items": n,
        "n_dropped_items": n_all - n,
        "n_labels": n * k,
        "n_raters": k,
        "form": form,
        "confidence": confidence,
    }

    def undefined(reason, ms=(nan, nan, nan, nan)):
        return ICCResult(
            value=nan, reason=reason, ci_low=nan, ci_high=nan, f_stat=nan, df1=nan, df2=nan,
            p_value=nan, ms_rows=ms[0], ms_within=ms[1], ms_raters=ms[2], ms_error=ms[3], **base,
        )  # fmt: skip

    if y_all.size == 0:
        return undefined(_NO_LABELS)
    if k < 2:
        return undefined("fewer than two raters")
    if n < 2:
        return undefined("fewer than two items scored by every rater")
    keep = complete[item]
    it, rt, y = item[keep], rater[keep], y_all[keep]
    mean = y.mean()
    row_dev = np.bincount(it, weights=y, minlength=n_all)[complete] / k - mean
    col_dev = np.bincount(rt, weights=y, minlength=k) / n - mean
    ss_total = float(((y - mean) ** 2).sum())
    ss_rows = float(k * (row_dev @ row_dev))
    ss_cols = float(n * (col_dev @ col_dev))
    ss_err = ss_total - ss_rows - ss_cols
    bms = ss_rows / (n - 1)
    wms = (ss_total - ss_rows) / (n * (k - 1))
    jms = ss_cols / (k - 1)
    ems = ss_err / ((n - 1) * (k - 1))
    model = form[4]
    single = form.endswith("1)")
    if model == "1":
        denom_ms, df2 = wms, n * (k - 1)
        num, den = (bms - wms, bms + (k - 1) * wms) if single else (bms - wms, bms)
    else:
        denom_ms, df2 = ems, (n - 1) * (k - 1)
        if model == "2":
            extra = (jms - ems) / n
            den = bms + (k - 1) * ems + k * extra if single else bms + extra
        else:
            den = bms + (k - 1) * ems if single else bms
        num = bms - ems
    if den == 0 or denom_ms == 0:
        reason = "no variance to partition: every score is the same within and across items"
        return undefined(reason, (bms, wms, jms, ems))
    value = num / den
    df1 = n - 1
    f_stat = bms / denom_ms
    p_value = float(stats.f.sf(f_stat, df1, df2))
    q = 1.0 - (1.0 - confidence) / 2.0
    if model == "2":
        fj = jms / ems
        icc2 = (bms - ems) / (bms + (k - 1) * ems + k * (jms - ems) / n)
        a = n * (1 + (k - 1) * icc2) - k * icc2
        v = (k - 1) * (n - 1) * (k * icc2 * fj + a) ** 2 / ((n - 1) * k**2 * icc2**2 * fj**2 + a**2)
        f_up = stats.f.ppf(q, n - 1, v)
        f_lo = stats.f.ppf(q, v, n - 1)
        c = k * jms + (k * n - k - n) * ems
        low = n * (bms - f_up * ems) / (f_up * c + n * bms)
        high = n * (f_lo * bms - ems) / (c + n * f_lo * bms)
        if not single:
            low, high = low * k / (1 + low * (k - 1)), high * k / (1 + high * (k - 1))
    else:
        f_low = f_stat / stats.f.ppf(q, df1, df2)
        f_high = f_stat * stats.f.ppf(q, df2, df1)
        if single:
            low, high = (f_low - 1) / (f_low + k - 1), (f_high - 1) / (f_high + k - 1)
        else:
            low, high = 1 - 1 / f_low, 1 - 1 / f_high
    return ICCResult(
        value=float(value),
        ci_low=float(low),
        ci_high=float(high),
        f_stat=float(f_stat),
        df1=float(df1),
        df2=float(df2),
        p_value=p_value,
        ms_rows=bms,
        ms_within=wms,
        ms_raters=jms,
        ms_error=ems,
        **base,
    )


# --------------------------------------------------------------------------------------------
# Label distribution
# --------------------------------------------------------------------------------------------


def label_distribution(items, raters, labels, categories=None) -> LabelDistributionResult:
    """Counts n_c and shares n_c / n of each category, overall and per rater (raters x categories).

    `value` is the share of the most frequent category, max_c n_c / n: the prevalence that makes
    kappa-type statistics low despite high raw agreement (Feinstein & Cicchetti 1990).
    """
    t = _read(items, raters, labels, categories)
    K, R = t.n_cats, t.n_raters
    counts = np.bincount(t.label, minlength=K)
    per_rater = np.bincount(t.rater * K + t.label, minlength=R * K).reshape(R, K)
    with np.errstate(invalid="ignore", divide="ignore"):
        shares = counts / counts.sum()
        rater_shares = per_rater / per_rater.sum(axis=1, keepdims=True)
    value, reason = (float(shares.max()), None) if t.n else _nan(_NO_LABELS)
    return LabelDistributionResult(
        value=value,
        reason=reason,
        n_items=t.n_items,
        n_dropped_items=0,
        n_labels=t.n,
        n_raters=R,
        categories=_as_tuple(t.categories),
        counts=counts,
        shares=shares,
        raters=_as_tuple(t.rater_ids),
        rater_counts=per_rater,
        rater_shares=rater_shares,
    )


# --------------------------------------------------------------------------------------------
# Bootstrap
# --------------------------------------------------------------------------------------------


def _prepare_for_bootstrap(name: str, items, raters, labels, kwargs) -> _Prepared:
    if name == "krippendorff_alpha":
        return _alpha_prepare(items, raters, labels, **kwargs)
    if name == "cohen_kappa":
        weights = kwargs.get("weights")
        _check_choice(weights, _WEIGHTS, "weights")
        return _Cohen(_read(items, raters, labels, kwargs.get("categories")), weights)
    if name == "fleiss_kappa":
        return _ItemShare(_read(items, raters, labels, kwargs.get("categories")), "fleiss")
    if name == "percent_agreement":
        return _ItemShare(_read(items, raters, labels), "percent")
    if name == "specific_agreement":
        return _ItemShare(_read(items, raters, labels, kwargs.get("categories")), "pooled")
    if name == "preference_agreement":
        ties = kwargs.get("ties", "include")
        return _ItemShare(_preference_long(items, raters, labels, ties), "pooled")
    raise AssertionError(name)


_BOOTSTRAP_KWARGS = {
    "krippendorff_alpha": {"level", "categories"},
    "cohen_kappa": {"weights", "categories"},
    "fleiss_kappa": {"categories"},
    "percent_agreement": set(),
    "specific_agreement": {"categories"},
    "preference_agreement": {"ties"},
}


def _check_bootstrap(statistic, n_boot, ci, kwargs) -> str:
    name = statistic if isinstance(statistic, str) else getattr(statistic, "__name__", "")
    if name not in _BOOTSTRAP_KWARGS:
        raise ValueError(
            f"statistic: expected one of {sorted(_BOOTSTRAP_KWARGS)}, got {statistic!r}"
        )
    unknown = set(kwargs) - _BOOTSTRAP_KWARGS[name]
    if unknown:
        raise ValueError(f"{sorted(unknown)[0]}: not an argument of {name}")
    if isinstance(n_boot, bool) or not isinstance(n_boot, int | np.integer) or n_boot < 1:
        raise ValueError(f"n_boot: expected a positive integer, got {n_boot!r}")
    if not 0.0 < ci < 1.0:
        raise ValueError(f"ci: expected a level in (0, 1), got {ci!r}")
    return name


def _replicates(preps: list[_Prepared], n_boot: int, seed) -> list[np.ndarray]:
    """Replicate values of statistics that share their eligible items, from one set of draws.

    Replicate b draws the eligible items with rng.integers(0, n, size=n) from
    np.random.default_rng(seed), in order (the stream `bootstrap` has always used), and turns
    the draw into item multiplicities. Statistics with a linear form take the sums of all
    replicates of a block as one product (multiplicities x features); the others are
    recomputed from the weights, replicate by replicate.
    """
    eligible = preps[0].eligible
    n_items, n_total = int(eligible.size), preps[0].n_items_total
    out = [np.full(n_boot, np.nan) for _ in preps]
    features = [p.linear() for p in preps]
    linear = [i for i, f in enumerate(features) if f is not None]
    looped = [i for i, f in enumerate(features) if f is None]
    if linear:
        widths = [features[i].shape[1] for i in linear]
        stacked = np.column_stack([features[i][eligible] for i in linear])
        edges = np.cumsum([0, *widths])
    del features
    rng = np.random.default_rng(seed)
    block = max(1, min(n_boot, _REPLICATE_BLOCK_CELLS // max(n_items, 1)))
    counts = np.empty((block, n_items))
    w = np.zeros(n_total)
    for first in range(0, n_boot, block):
        rows = min(block, n_boot - first)
        for r in range(rows):  # the draws, in the order of the seeded stream
            counts[r] = np.bincount(rng.integers(0, n_items, size=n_items), minlength=n_items)
        with np.errstate(invalid="ignore", divide="ignore"):
            if linear:
                sums = counts[:rows] @ stacked
                for j, i in enumerate(linear):
                    part = sums[:, edges[j] : edges[j + 1]]
                    for r in range(rows):
                        out[i][first + r] = preps[i].from_sums(part[r])
            for r in range(rows):
                if not looped:
                    break
                w[eligible] = counts[r]
                for i in looped:
                    out[i][first + r] = preps[i].value(w)[0]
    return out


def _bootstrap_result(name, prep, replicates, n_boot, seed, ci) -> BootstrapResult:
    n_items = int(prep.eligible.size)
    value, reason = prep.value(prep.base_weights())
    valid = replicates[np.isfinite(replicates)]
    if valid.size:
        lo, hi = np.quantile(valid, [(1.0 - ci) / 2.0, (1.0 + ci) / 2.0])
    else:
        lo = hi = float("nan")
        reason = reason or "the statistic was undefined in every bootstrap replicate"
    return BootstrapResult(
        statistic=name,
        confidence=ci,
        n_boot=int(n_boot),
        seed=seed,
        n_items=n_items,
        n_dropped_items=prep.n_items_total - n_items,
        value=value,
        reason=reason,
        ci_low=float(lo),
        ci_high=float(hi),
        n_valid=int(valid.size),
        replicates=replicates,
    )


def bootstrap(
    statistic, items, raters, labels, *, n_boot=1000, seed=0, ci=0.95, **kwargs
) -> BootstrapResult:
    """Percentile bootstrap CI of an agreement statistic, resampling items with replacement.

    Each replicate draws the items that entered the statistic (sorted by id) uniformly with
    replacement, seeded by `seed`, and recomputes the statistic from per-item sufficient statistics
    weighted by each item's multiplicity (no copy of the label arrays); [ci_low, ci_high] are the
    (1 - ci)/2 and (1 + ci)/2 quantiles of the defined replicates (Efron & Tibshirani 1993, ch. 13;
    Krippendorff 2004 bootstraps alpha by units). `statistic` is krippendorff_alpha, cohen_kappa,
    fleiss_kappa, percent_agreement, specific_agreement or preference_agreement (or its name);
    kwargs go to it.
    """
    return bootstrap_many(
        [(statistic, kwargs)], items, raters, labels, n_boot=n_boot, seed=seed, ci=ci
    )[0]


def bootstrap_many(
    statistics, items, raters, labels, *, n_boot=1000, seed=0, ci=0.95
) -> list[BootstrapResult]:
    """`bootstrap` of several statistics of the same labels, sharing the resampled items.

    `statistics` is a sequence of (statistic, kwargs) pairs; result i equals
    bootstrap(statistic_i, items, raters, labels, n_boot=..., seed=..., ci=..., **kwargs_i):
    each of those calls would draw the same items from the same seed, so statistics with the same
    eligible items (e.g. percent agreement and alpha: the items with two or more labels) are
    computed from one set of draws.
    """
    specs = [(_check_bootstrap(stat, n_boot, ci, kw), dict(kw)) for stat, kw in statistics]
    preps = [_prepare_for_bootstrap(name, items, raters, labels, kw) for name, kw in specs]
    replicates = [np.full(int(n_boot), np.nan) for _ in preps]
    groups: dict[bytes, list[int]] = {}
    for i, prep in enumerate(preps):
        if prep.reason is None:
            key = prep.eligible.tobytes() + str(prep.n_items_total).encode()
            groups.setdefault(key, []).append(i)
    for members in groups.values():
        values = _replicates([preps[i] for i in members], int(n_boot), seed)
        for i, v in zip(members, values, strict=True):
            replicates[i] = v
    return [
        _bootstrap_result(name, prep, reps, n_boot, seed, ci)
        for (name, _), prep, reps in zip(specs, preps, replicates, strict=True)
    ]
