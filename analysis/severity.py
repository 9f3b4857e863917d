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

__all__ = ["RaterOffsets", "rater_offsets"]


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
        se = np.sqrt(var)
        half = stats.t.ppf(0.5 + confidence / 2, df) * se
        sd = float(np.sqrt(sigma2))
    else:
        se = np.full(n_raters, np.nan)
        half = se
        sd = np.nan
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
    )
