"""Rater severity: additive offsets y_ij = mu + q_i + b_j + e_ij on an incomplete design.

Exact least squares through the rater x rater reduced normal equations (Schur complement).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import scipy.linalg as la
import scipy.sparse as sp
from scipy import stats
from scipy.sparse.csgraph import connected_components

from analysis._long import as_array, check_same_length, encode

__all__ = ["GroupMeans", "RaterOffsets", "group_means", "rater_offsets"]


@dataclass(frozen=True, eq=False)
class RaterOffsets:
    """Additive rater offsets (severity) with item effects; arrays aligned with `raters`/`items`.

    offset > 0: the rater scores higher (more lenient) than the average rater on the same items.
    When `identifiable` is False (disconnected design) the offsets, their SEs and CIs, `mu` and
    the item effects are NaN and `reason` says why; `components` lists the connected parts.
    """

    raters: np.ndarray
    offset_values: np.ndarray  # b_j, sum_j b_j = 0
    se: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    n_per_rater: np.ndarray
    items: np.ndarray
    item_effects: np.ndarray  # q_i, sum_i q_i = 0
    mu: float
    residual_sd: float
    df_resid: int
    n: int
    n_dropped: int  # rows with a non-finite score
    identifiable: bool
    components: tuple  # one (raters, items) pair of arrays per connected component
    reason: str
    # sigma^2 C^+ (raters x raters), the covariance of the offsets; None when undefined
    offset_cov: np.ndarray | None = None

    @functools.cached_property
    def offsets(self) -> dict:
        """rater -> b_j."""
        return dict(zip(self.raters.tolist(), self.offset_values.tolist(), strict=True))

    @functools.cached_property
    def standard_errors(self) -> dict:
        """rater -> SE(b_j)."""
        return dict(zip(self.raters.tolist(), self.se.tolist(), strict=True))

    @functools.cached_property
    def intervals(self) -> dict:
        """rater -> (95% CI low, high)."""
        return {
            r: (lo, hi)
            for r, lo, hi in zip(
                self.raters.tolist(), self.ci_low.tolist(), self.ci_high.tolist(), strict=True
            )
        }


def rater_offsets(items, raters, scores, confidence: float = 0.95) -> RaterOffsets:
    """Least-squares rater offsets in the two-way additive model without interaction.

    y_ij = mu + q_i + b_j + e_ij, e ~ (0, sigma^2), constraints sum_j b_j = 0, sum_i q_i = 0,
    on an incomplete (unbalanced) design: the intra-block analysis of incomplete block designs
    (Yates 1936; Montgomery, Design and Analysis of Experiments, sec. 4.4), with items as
    blocks and raters as treatments. Item effects are eliminated exactly (Schur complement):
    C b = r with C = diag(n_j) - N' diag(1/n_i) N and r_j = sum_{obs of j} (y - ybar_i), where
    N is the item x rater count matrix; C is a dense rater x rater matrix solved directly with
    (C + 11') b = r. Item effects by back substitution: q_i + mu = mean_i(y - b_rater).
    Var(b) = sigma^2 C^+ with sigma^2 = RSS / (n - n_items - n_raters + 1); CIs are Student-t
    at `confidence`. Several responses of one rater on one item are separate observations.

    The offsets are identifiable only if the rater-item graph is connected; otherwise
    `identifiable=False`, the components are listed and the estimates are NaN (fit each
    component on its own). Residual df <= 0 (no more observations than parameters): sigma,
    SEs and CIs are NaN with a reason; the offsets are still reported. Rows with a non-finite
    score are dropped and counted.
    """
    items = as_array(items, "items")
    raters = as_array(raters, "raters")
    y = as_array(scores, "scores", allow_nan=True)  # a non-finite score is dropped and counted
    check_same_length(items=items, raters=raters, scores=y)
    if y.dtype.kind not in "iufb":
        raise ValueError(f"scores: expected numbers, got dtype {y.dtype}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence: expected a number in (0, 1), got {confidence!r}")
    y = y.astype(float)
    keep = np.isfinite(y)
    n_dropped = int(keep.size - np.count_nonzero(keep))
    if n_dropped:
        items, raters, y = items[keep], raters[keep], y[keep]
    if y.size == 0:
        raise ValueError("scores: no finite scores")

    ii, item_vals = encode(items, "items", ordered=True)
    jj, rater_vals = encode(raters, "raters", ordered=True)
    n_items, n_raters, n = item_vals.size, rater_vals.size, y.size

    # item x rater incidence with counts; duplicates summed
    incidence = sp.csr_matrix((np.ones(n), (ii, jj)), shape=(n_items, n_raters))
    n_i = np.bincount(ii, minlength=n_items).astype(float)
    n_j = np.bincount(jj, minlength=n_raters).astype(float)
    sum_i = np.bincount(ii, weights=y, minlength=n_items)

    # N' diag(1/n_i) N: rater x rater, nonzero where two raters share an item
    scaled = incidence.copy()
    scaled.data /= np.repeat(n_i, np.diff(scaled.indptr))
    shared = (incidence.T @ scaled).tocsr()

    # every item hangs off its raters, so the rater-item graph is connected iff the
    # rater co-occurrence graph is; an item's component is that of its first rater
    n_comp, comp_raters = connected_components(shared, directed=False)
    if n_comp > 1:
        comp_items = comp_raters[incidence.indices[incidence.indptr[:-1]]]
        order_r = np.argsort(comp_raters, kind="stable")
        order_i = np.argsort(comp_items, kind="stable")
        split_r = np.searchsorted(comp_raters[order_r], np.arange(1, n_comp))
        split_i = np.searchsorted(comp_items[order_i], np.arange(1, n_comp))
        components = tuple(
            zip(
                np.split(rater_vals[order_r], split_r),
                np.split(item_vals[order_i], split_i),
                strict=True,
            )
        )
        nan_r = np.full(n_raters, np.nan)
        return RaterOffsets(
            raters=rater_vals,
            offset_values=nan_r,
            se=nan_r.copy(),
            ci_low=nan_r.copy(),
            ci_high=nan_r.copy(),
            n_per_rater=n_j.astype(np.int64),
            items=item_vals,
            item_effects=np.full(n_items, np.nan),
            mu=np.nan,
            residual_sd=np.nan,
            df_resid=n - n_items - n_raters + n_comp,
            n=n,
            n_dropped=n_dropped,
            identifiable=False,
            components=components,
            reason=(
                f"the rater-item graph has {n_comp} connected components; offsets are not "
                "comparable across components (fit each component separately)"
            ),
        )
    components = ((rater_vals, item_vals),)

    # reduced normal equations for b: C = diag(n_j) - N' diag(1/n_i) N
    reduced = -shared.toarray()
    reduced[np.diag_indices(n_raters)] += n_j
    item_mean = sum_i / n_i
    rhs = np.bincount(jj, weights=y - item_mean[ii], minlength=n_raters)
    augmented = reduced + 1.0  # C + 11', positive definite on a connected design
    factor = la.cho_factor(augmented, lower=True, check_finite=False)
    b = la.cho_solve(factor, rhs, check_finite=False)
    b -= b.mean()  # exact in theory; removes rounding drift

    a_i = (sum_i - incidence @ b) / n_i  # mu + q_i
    mu = float(a_i.mean())
    q = a_i - mu
    resid = y - a_i[ii] - b[jj]
    rss = float(resid @ resid)
    df = n - n_items - n_raters + 1

    reason = ""
    if df > 0:
        sigma2 = rss / df
        # C^+ = (C + 11')^-1 - 11'/J^2; only the diagonal is needed:
        # diag((L L')^-1) = column sums of (L^-1)^2, one triangular solve
        l_inv = la.solve_triangular(
            np.tril(factor[0]), np.eye(n_raters), lower=True, check_finite=False
        )
        diag_inv = np.einsum("ij,ij->j", l_inv, l_inv)
        var = np.clip(diag_inv - 1.0 / n_raters**2, 0.0, None) * sigma2
        cov = (l_inv.T @ l_inv - 1.0 / n_raters**2) * sigma2
        se = np.sqrt(var)
        half = stats.t.ppf(0.5 + confidence / 2, df) * se
        sd = float(np.sqrt(sigma2))
    else:
        se = np.full(n_raters, np.nan)
        half = se
        sd = np.nan
        cov = None
        reason = f"no residual degrees of freedom (df={df}); SEs and CIs undefined"
    if n_raters == 1:
        reason = reason or "one rater: the offset is 0 by the sum-to-zero constraint"

    return RaterOffsets(
        raters=rater_vals,
        offset_values=b,
        se=se,
        ci_low=b - half,
        ci_high=b + half,
        n_per_rater=n_j.astype(np.int64),
        items=item_vals,
        item_effects=q,
        mu=mu,
        residual_sd=sd,
        df_resid=int(df),
        n=n,
        n_dropped=n_dropped,
        identifiable=True,
        components=components,
        reason=reason,
        offset_cov=cov,
    )


@dataclass(frozen=True, eq=False)
class GroupDifference:
    """Mean of group `a` minus mean of group `b`, raw and severity-adjusted, with t-intervals."""

    a: object
    b: object
    raw: float
    raw_ci_low: float
    raw_ci_high: float
    adjusted: float
    adjusted_ci_low: float
    adjusted_ci_high: float
    df_raw: float
    df_adjusted: float
    reason: str


@dataclass(frozen=True, eq=False)
class GroupMeans:
    """Per group (e.g. system): raw and severity-adjusted means over its items, with t-intervals.

    raw = mean over the group's items of each item's mean score; adjusted = mean over the
    group's items of mu + q_i, the item mean with each rating's rater offset removed. Arrays are
    aligned with `groups`; `weights[g, j]` is rater j's share of group g's raw mean (so
    raw - adjusted = weights @ offsets).
    """

    groups: np.ndarray
    n_items: np.ndarray
    n_labels: np.ndarray
    raw: np.ndarray
    raw_se: np.ndarray
    raw_ci_low: np.ndarray
    raw_ci_high: np.ndarray
    adjusted: np.ndarray
    adjusted_se: np.ndarray
    adjusted_ci_low: np.ndarray
    adjusted_ci_high: np.ndarray
    confidence: float
    weights: np.ndarray
    item_var_raw: np.ndarray  # per group: sample variance of the item means
    item_var_adjusted: np.ndarray
    offset_cov: np.ndarray | None
    reason: str

    def difference(self, a, b) -> GroupDifference:
        """Group a minus group b (Welch t-intervals over items; the adjusted interval also
        carries the offsets' estimation error, (w_a - w_b)' Cov(b) (w_a - w_b))."""
        where = {g: i for i, g in enumerate(self.groups.tolist())}
        if a not in where or b not in where:
            raise ValueError(f"groups: {a!r} or {b!r} not among {self.groups.tolist()}")
        ia, ib = where[a], where[b]
        na, nb = self.n_items[ia], self.n_items[ib]
        if na < 2 or nb < 2:
            nan = float("nan")
            raw = float(self.raw[ia] - self.raw[ib])
            adj = float(self.adjusted[ia] - self.adjusted[ib])
            why = "fewer than two items in a group: no interval"
            return GroupDifference(a, b, raw, nan, nan, adj, nan, nan, nan, nan, why)

        def welch(va, vb, extra=0.0):
            sa, sb = va / na, vb / nb
            se2 = sa + sb + extra
            denom = sa**2 / (na - 1) + sb**2 / (nb - 1)
            df = se2**2 / denom if denom > 0 else float(na + nb - 2)
            return float(np.sqrt(se2)), float(df)

        w = self.weights[ia] - self.weights[ib]
        extra = float(w @ self.offset_cov @ w) if self.offset_cov is not None else 0.0
        se_raw, df_raw = welch(self.item_var_raw[ia], self.item_var_raw[ib])
        se_adj, df_adj = welch(self.item_var_adjusted[ia], self.item_var_adjusted[ib], extra)
        t_raw = stats.t.ppf(0.5 + self.confidence / 2, df_raw) if se_raw > 0 else 0.0
        t_adj = stats.t.ppf(0.5 + self.confidence / 2, df_adj) if se_adj > 0 else 0.0
        raw = float(self.raw[ia] - self.raw[ib])
        adj = float(self.adjusted[ia] - self.adjusted[ib])
        return GroupDifference(
            a,
            b,
            raw,
            raw - t_raw * se_raw,
            raw + t_raw * se_raw,
            adj,
            adj - t_adj * se_adj,
            adj + t_adj * se_adj,
            df_raw,
            df_adj,
            "",
        )


def group_means(fit: RaterOffsets, items, raters, scores, groups) -> GroupMeans:
    """Raw and severity-adjusted means per group of items (a system), from a fitted offset model.

    `items`, `raters`, `scores` are the rows `fit` was computed from; `groups` gives each row's
    group, and every item must lie in exactly one group. Per group g with items I_g (m_g of them):
    raw_g = mean_{i in I_g} ybar_i and adjusted_g = mean_{i in I_g} (mu + q_i) = raw_g - w_g' b,
    with w_gj = (1/m_g) sum_{i in I_g} n_ij / n_i. Items are the sampled units: the SE of a mean
    is the sample SD of its item values / sqrt(m_g); the adjusted SE adds w_g' Cov(b) w_g (the
    offsets' estimation error, Cov(b) = sigma^2 C^+). Student-t intervals with m_g - 1 df at the
    fit's confidence (0.95). The adjustment is the additive model's (Montgomery sec. 4.4, the
    "adjusted treatment means" of an incomplete block design, with roles of blocks and
    treatments swapped: here items are compared and raters eliminated). A fit that is not
    identifiable gives NaN adjusted values with its reason.
    """
    items = as_array(items, "items")
    raters = as_array(raters, "raters")
    y = as_array(scores, "scores", allow_nan=True).astype(float)
    groups = as_array(groups, "groups")
    check_same_length(items=items, raters=raters, scores=y, groups=groups)
    keep = np.isfinite(y)
    items, raters, y, groups = items[keep], raters[keep], y[keep], groups[keep]
    if y.size != fit.n:
        raise ValueError(f"scores: {y.size} finite rows, but the fit used {fit.n}")
    ii = np.searchsorted(fit.items, items)
    jj = np.searchsorted(fit.raters, raters)
    gg, group_vals = encode(groups, "groups", ordered=True)
    n_items_all, n_raters, n_groups = fit.items.size, fit.raters.size, group_vals.size
    group_of_item = np.full(n_items_all, -1)
    group_of_item[ii] = gg
    if np.any(group_of_item[ii] != gg):
        bad = fit.items[ii[group_of_item[ii] != gg][0]]
        raise ValueError(f"groups: item {bad!r} belongs to more than one group")

    n_i = np.bincount(ii, minlength=n_items_all).astype(float)
    ybar = np.bincount(ii, weights=y, minlength=n_items_all) / n_i
    adjusted_item = fit.mu + fit.item_effects  # NaN when not identifiable
    m_g = np.bincount(group_of_item, minlength=n_groups).astype(float)
    n_labels = np.bincount(gg, minlength=n_groups)

    def mean_var(values):
        mean = np.bincount(group_of_item, weights=values, minlength=n_groups) / m_g
        dev = values - mean[group_of_item]
        with np.errstate(invalid="ignore", divide="ignore"):
            var = np.bincount(group_of_item, weights=dev * dev, minlength=n_groups) / (m_g - 1)
        return mean, np.where(m_g > 1, var, np.nan)

    raw, var_raw = mean_var(ybar)
    adj, var_adj = mean_var(adjusted_item)
    weights = np.zeros((n_groups, n_raters))
    np.add.at(weights, (gg, jj), 1.0 / (n_i[ii] * m_g[gg]))
    cov = fit.offset_cov
    extra = np.einsum("gj,jk,gk->g", weights, cov, weights) if cov is not None else 0.0
    raw_se = np.sqrt(var_raw / m_g)
    adj_se = np.sqrt(var_adj / m_g + extra)
    confidence = 0.95
    with np.errstate(invalid="ignore"):
        t = stats.t.ppf(0.5 + confidence / 2, np.where(m_g > 1, m_g - 1, np.nan))
    reason = fit.reason if not fit.identifiable else ""
    if cov is None and fit.identifiable:
        reason = "offsets have no residual degrees of freedom: adjusted intervals omit their error"
    return GroupMeans(
        groups=group_vals,
        n_items=m_g.astype(np.int64),
        n_labels=n_labels.astype(np.int64),
        raw=raw,
        raw_se=raw_se,
        raw_ci_low=raw - t * raw_se,
        raw_ci_high=raw + t * raw_se,
        adjusted=adj,
        adjusted_se=adj_se,
        adjusted_ci_low=adj - t * adj_se,
        adjusted_ci_high=adj + t * adj_se,
        confidence=confidence,
        weights=weights,
        item_var_raw=var_raw,
        item_var_adjusted=var_adj,
        offset_cov=cov,
        reason=reason,
    )
