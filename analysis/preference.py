"""Preference tests: SPA and Likert protocols with Holm correction, Bradley-Terry, power.

Long-format inputs (one row per annotator and comparison); per-comparison statistics by bincount.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from scipy import stats
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from analysis._long import as_array, check_same_length, encode

__all__ = [
    "BradleyTerryResult",
    "PowerResult",
    "ProtocolComparison",
    "SpaResult",
    "TestResult",
    "TestRow",
    "bradley_terry",
    "compare_protocols",
    "holm",
    "likert_paired",
    "power",
    "spa",
]

NO_DIFFERENCE = "no significant difference"
UNDEFINED = "undefined"
_TAU_EPS = 1e-9


# --------------------------------------------------------------------------- helpers


def _numeric(values, name: str, annotators: np.ndarray) -> np.ndarray:
    """A finite number per answer, aligned with `annotators`."""
    a = as_array(values, name)
    check_same_length(annotators=annotators, **{name: a})
    if a.dtype.kind not in "iufb":
        raise ValueError(f"{name}: expected numbers, got dtype {a.dtype}")
    a = a.astype(float)
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: contains NaN or infinite values; leave missing answers out")
    return a


def _check_alpha(alpha: float) -> None:
    if not (isinstance(alpha, int | float | np.floating) and 0 < alpha < 1):
        raise ValueError(f"alpha: expected a number in (0, 1), got {alpha!r}")


# --------------------------------------------------------------------------- Holm


def holm(pvalues) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values (Holm 1979), in the input order.

    With the m finite p-values sorted ascending, p~_(i) = max_{k <= i} min(1, (m - k + 1) p_(k));
    rejecting p~ <= alpha controls the family-wise error rate at alpha. NaN entries (undefined
    tests) are left out of m and stay NaN.
    """
    p = as_array(pvalues, "pvalues", allow_nan=True).astype(float)  # NaN: an undefined test
    if np.any((p < 0) | (p > 1)):
        raise ValueError("pvalues: expected values in [0, 1] (or NaN)")
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    m = ok.size
    if m == 0:
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    scaled = (m - np.arange(m)) * p[order]
    out[order] = np.minimum(np.maximum.accumulate(scaled), 1.0)
    return out


# --------------------------------------------------------------------------- t-test rows


@dataclass(frozen=True, eq=False)
class TestRow:
    """One comparison: n answers, their mean with a 95% CI, Student t against the null value,
    two-sided p, Holm-adjusted p and a verdict ("X>Y", "Y>X", "no significant difference",
    "undefined"); `reason` says why t is undefined."""

    __test__ = False  # not a pytest class

    comparison: object
    n: int
    mean: float
    ci_low: float
    ci_high: float
    t: float
    df: float
    p: float
    p_holm: float
    verdict: str
    reason: str = ""


@dataclass(frozen=True, eq=False)
class TestResult:
    """A table of per-comparison tests (Likert protocol)."""

    __test__ = False

    rows: tuple
    null: float
    alpha: float
    n_annotators: int

    @functools.cached_property
    def by_comparison(self) -> dict:
        return {row.comparison: row for row in self.rows}


@dataclass(frozen=True, eq=False)
class SpaResult:
    """SPA table after the optional tau filter (`rows`), the table without it (`unfiltered`) and
    the annotators the filter removed (`dropped`)."""

    rows: tuple
    unfiltered: tuple
    dropped: np.ndarray
    n_annotators: int
    tau: float | None
    alpha: float
    null: float = 0.5

    @property
    def n_dropped(self) -> int:
        return int(self.dropped.size)

    @functools.cached_property
    def by_comparison(self) -> dict:
        return {row.comparison: row for row in self.rows}


def _t_rows(comp_vals, comp_idx, values, null, alpha, confidence=0.95) -> tuple:
    """Per-comparison one-sample Student t-tests of `values` against `null`, Holm across them."""
    k = comp_vals.size
    n = np.bincount(comp_idx, minlength=k).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.bincount(comp_idx, weights=values, minlength=k) / n
        dev = values - mean[comp_idx]
        ss = np.bincount(comp_idx, weights=dev * dev, minlength=k)
        df = n - 1
        sd = np.sqrt(ss / df)
        se = sd / np.sqrt(n)
        t = (mean - null) / se
    reason = np.full(k, "", dtype=object)
    no_var = sd <= 1e-12 * np.maximum(np.abs(mean), 1.0)
    reason[no_var] = "no variance: every answer is the same, t is undefined"
    reason[n < 2] = "one answer: t is undefined"
    reason[n == 0] = "no answers"
    bad = reason != ""
    t = np.where(bad, np.nan, t)
    se = np.where(n < 2, np.nan, se)
    p = np.where(bad, np.nan, 2 * stats.t.sf(np.abs(t), np.maximum(df, 1)))
    half = stats.t.ppf(0.5 + confidence / 2, np.maximum(df, 1)) * se
    p_holm = holm(p)
    verdict = np.where(
        bad,
        UNDEFINED,
        np.where(p_holm <= alpha, np.where(mean > null, "X>Y", "Y>X"), NO_DIFFERENCE),
    )
    return tuple(
        TestRow(
            comparison=comp_vals[c].item() if hasattr(comp_vals[c], "item") else comp_vals[c],
            n=int(n[c]),
            mean=float(mean[c]),
            ci_low=float(mean[c] - half[c]),
            ci_high=float(mean[c] + half[c]),
            t=float(t[c]),
            df=float(df[c]),
            p=float(p[c]),
            p_holm=float(p_holm[c]),
            verdict=str(verdict[c]),
            reason=str(reason[c]),
        )
        for c in range(k)  # one row per comparison: a handful
    )


def _pairs(annotators, comparisons) -> tuple:
    ann = as_array(annotators, "annotators")
    comp = as_array(comparisons, "comparisons")
    if ann.size == 0:
        raise ValueError("annotators: no answers given")
    check_same_length(annotators=ann, comparisons=comp)
    ann_idx, ann_vals = encode(ann, "annotators", ordered=True)
    comp_idx, comp_vals = encode(comp, "comparisons", ordered=True)
    key = ann_idx.astype(np.int64) * comp_vals.size + comp_idx
    if np.unique(key).size != key.size:
        raise ValueError(
            "annotators: an annotator answers a comparison more than once; give one answer per "
            "annotator and comparison (average repeated answers first)"
        )
    return ann_vals, ann_idx, comp_vals, comp_idx


# --------------------------------------------------------------------------- SPA, Likert


def spa(annotators, comparisons, p_xy, p_yx=None, tau=None, alpha: float = 0.05) -> SpaResult:
    """System-level probabilistic assessment (Ethayarajh & Jurafsky 2022, sec. 5.2).

    Per comparison X vs Y: mean of the stated P[X>Y] (shares in [0, 1]) over annotators, its 95%
    Student-t CI, t = (mean - 0.5) / (s / sqrt(n)) with n - 1 df (two-sided one-sample Student
    t-test against 0.5), Holm (1979) adjusted p across the comparisons, and the verdict "X>Y" /
    "Y>X" (direction of the mean) when p_holm <= alpha, else "no significant difference".
    Optional filter (paper's step 3, tau = 1.1): with `p_yx` (the stated P[Y>X] for the same
    comparison) and `tau`, an annotator with p_xy + p_yx > tau + 1e-9 on ANY comparison is
    dropped from all comparisons (exactly tau is kept; the 1e-9 absorbs float rounding such as
    0.45 + 0.65). `rows` is the filtered table, `unfiltered` the table without the filter.
    Undefined t (one answer, or all answers equal): t, p, p_holm NaN, verdict "undefined" with
    a reason, and the comparison is left out of Holm.
    """
    _check_alpha(alpha)
    ann_vals, ann_idx, comp_vals, comp_idx = _pairs(annotators, comparisons)
    pxy = _numeric(p_xy, "p_xy", ann_idx)
    if np.any((pxy < 0) | (pxy > 1)):
        raise ValueError("p_xy: expected shares in [0, 1] (divide percentages by 100)")
    if p_yx is not None:
        pyx = _numeric(p_yx, "p_yx", ann_idx)
        if np.any((pyx < 0) | (pyx > 1)):
            raise ValueError("p_yx: expected shares in [0, 1] (divide percentages by 100)")
    if tau is not None:
        if p_yx is None:
            raise ValueError("tau: the filter needs p_yx (the reverse question)")
        if not (np.isfinite(tau) and tau >= 1):
            raise ValueError(f"tau: expected a number >= 1 (the paper uses 1.1), got {tau!r}")

    unfiltered = _t_rows(comp_vals, comp_idx, pxy, 0.5, alpha)
    dropped = ann_vals[:0]
    rows = unfiltered
    if tau is not None:
        fails = (pxy + pyx) > tau + _TAU_EPS
        bad = np.bincount(ann_idx, weights=fails, minlength=ann_vals.size) > 0
        dropped = ann_vals[bad]
        if bad.any():
            keep = ~bad[ann_idx]
            rows = _t_rows(comp_vals, comp_idx[keep], pxy[keep], 0.5, alpha)
    return SpaResult(
        rows=rows,
        unfiltered=unfiltered,
        dropped=dropped,
        n_annotators=int(ann_vals.size),
        tau=tau,
        alpha=alpha,
    )


def likert_paired(annotators, comparisons, likert_x, likert_y, alpha: float = 0.05) -> TestResult:
    """The standard protocol: paired t-test on per-annotator Likert differences, Holm-adjusted.

    Per comparison: d = likert_x - likert_y per annotator (one rating of each system per
    annotator, or the annotator's mean rating), mean d with 95% CI, t = mean(d) / (s_d /
    sqrt(n)) with n - 1 df (Student's paired t-test, = scipy.stats.ttest_rel), Holm (1979)
    across comparisons, verdict "X>Y" / "Y>X" / "no significant difference" at alpha as in
    `spa`, so both protocols can be set side by side (`compare_protocols`). This is the
    "outcome-level absolute assessment" that Ethayarajh & Jurafsky (2022, sec. 3, Prop. 1)
    show can reverse a preference through rounding. Undefined t handled as in `spa`.
    """
    _check_alpha(alpha)
    ann_vals, ann_idx, comp_vals, comp_idx = _pairs(annotators, comparisons)
    x = _numeric(likert_x, "likert_x", ann_idx)
    y = _numeric(likert_y, "likert_y", ann_idx)
    rows = _t_rows(comp_vals, comp_idx, x - y, 0.0, alpha)
    return TestResult(rows=rows, null=0.0, alpha=alpha, n_annotators=int(ann_vals.size))


@dataclass(frozen=True, eq=False)
class ProtocolComparison:
    """SPA and Likert verdicts for one comparison; `reversal` when both are significant in
    opposite directions, `direction_disagrees` when the point estimates point opposite ways."""

    comparison: object
    spa_verdict: str
    likert_verdict: str
    spa_mean: float
    likert_mean_difference: float
    reversal: bool
    direction_disagrees: bool


def compare_protocols(spa_result: SpaResult, likert_result: TestResult) -> tuple:
    """Side-by-side SPA and Likert verdicts per comparison, flagging reversals.

    reversal: SPA says "X>Y" and Likert "Y>X" or vice versa (both Holm-significant);
    direction_disagrees: sign(mean P[X>Y] - 0.5) != sign(mean Likert difference), both non-zero
    (Ethayarajh & Jurafsky 2022, Prop. 1: the mean Likert difference can reverse the preference
    when systems are close). Comparisons present in only one table are skipped.
    """
    likert = likert_result.by_comparison
    out = []
    for row in spa_result.rows:  # one per comparison
        other = likert.get(row.comparison)
        if other is None:
            continue
        s_dir = np.sign(row.mean - spa_result.null)
        l_dir = np.sign(other.mean - likert_result.null)
        out.append(
            ProtocolComparison(
                comparison=row.comparison,
                spa_verdict=row.verdict,
                likert_verdict=other.verdict,
                spa_mean=row.mean,
                likert_mean_difference=other.mean,
                reversal={row.verdict, other.verdict} == {"X>Y", "Y>X"},
                direction_disagrees=bool(s_dir * l_dir < 0),
            )
        )
    return tuple(out)


# --------------------------------------------------------------------------- Bradley-Terry


@dataclass(frozen=True, eq=False)
class PositionBias:
    """Per rater: non-tie judgments, share choosing the left item, exact two-sided binomial p
    against 0.5."""

    raters: np.ndarray
    n: np.ndarray
    share_left: np.ndarray
    p: np.ndarray
    overall_share_left: float
    overall_p: float

    @functools.cached_property
    def shares(self) -> dict:
        return dict(zip(self.raters.tolist(), self.share_left.tolist(), strict=True))


@dataclass(frozen=True, eq=False)
class BradleyTerryResult:
    """System strengths theta (log scale, sum zero: P[a beats b] = 1 / (1 + exp(theta_b -
    theta_a)) without ties) with percentile bootstrap CIs, the tie model, and position bias."""

    systems: np.ndarray
    strength_values: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    ties: str  # "half" or "davidson"
    tie_parameter: float  # Davidson's nu; NaN for "half"
    log_likelihood: float
    n_judgments: int
    n_ties: int
    n_items: int
    n_boot: int
    n_boot_used: int  # replicates where the MLE exists
    converged: bool
    position_bias: PositionBias
    reason: str

    @functools.cached_property
    def strengths(self) -> dict:
        """system -> theta."""
        return dict(zip(self.systems.tolist(), self.strength_values.tolist(), strict=True))


def _bt_design(pair_a, pair_b, n_sys, davidson):
    """Linear map A (pairs x outcomes x params): outcome logits from the parameters."""
    n_pairs = pair_a.size
    n_out = 3 if davidson else 2
    n_par = n_sys + (1 if davidson else 0)
    design = np.zeros((n_pairs, n_out, n_par))
    rows = np.arange(n_pairs)
    design[rows, 0, pair_a] = 1.0
    design[rows, 1, pair_b] = 1.0
    if davidson:
        design[rows, 2, pair_a] = 0.5
        design[rows, 2, pair_b] = 0.5
        design[:, 2, n_sys] = 1.0
    return design


def _bt_objective(design, counts, x, n_sys):
    lin = np.einsum("pcq,bq->bpc", design, x)
    top = lin.max(axis=2, keepdims=True)
    lse = top[..., 0] + np.log(np.exp(lin - top).sum(axis=2))
    total = counts.sum(axis=2)
    ll = (counts * lin).sum(axis=(1, 2)) - (total * lse).sum(axis=1)
    return ll - 0.5 * x[:, :n_sys].sum(axis=1) ** 2, ll, lin, lse, total


def _bt_fit(design, counts, n_sys, max_iter=200, tol=1e-10):
    """Batched Newton-Raphson for the concave (penalised) multinomial-logit log-likelihood.

    counts: B x pairs x outcomes. The penalty -(sum theta)^2 / 2 only fixes the location
    (the likelihood is shift-invariant), so the optimum has sum theta = 0.
    """
    n_b, _, _ = counts.shape
    n_par = design.shape[2]
    x = np.zeros((n_b, n_par))
    ones = np.zeros(n_par)
    ones[:n_sys] = 1.0
    obj, ll, lin, lse, total = _bt_objective(design, counts, x, n_sys)
    converged = np.zeros(n_b, dtype=bool)
    stuck = np.zeros(n_b, dtype=bool)  # a singular Hessian: running off to infinity
    for _ in range(max_iter):  # Newton iterations, vectorised over the replicates
        prob = np.exp(lin - lse[..., None])
        resid = counts - total[..., None] * prob
        grad = np.einsum("pcq,bpc->bq", design, resid) - x @ np.outer(ones, ones)
        weighted = total[..., None, None] * (
            np.einsum("bpc,cd->bpcd", prob, np.eye(prob.shape[2]))
            - prob[..., :, None] * prob[..., None, :]
        )
        hess = np.einsum("pcq,bpcd,pdr->bqr", design, weighted, design) + np.outer(ones, ones)
        hess += 1e-12 * np.eye(n_par)
        step, singular = _newton_steps(hess, grad)
        stuck |= singular
        step[converged] = 0.0  # a stuck replicate's step is already 0
        scale = np.ones(n_b)
        for _ in range(30):  # backtracking: halve where the objective did not improve
            new_x = x + scale[:, None] * step
            new = _bt_objective(design, counts, new_x, n_sys)
            worse = new[0] < obj - 1e-12 * np.abs(obj)
            if not worse.any():
                break
            scale[worse] *= 0.5
        x = new_x
        obj, ll, lin, lse, total = new
        converged |= (np.max(np.abs(scale[:, None] * step), axis=1) < tol) & ~stuck
        if (converged | stuck).all():
            break
    return x, ll, converged


def _newton_steps(hess, grad):
    """Solve hess @ step = grad per replicate, and which replicates' Hessians are singular.

    A fit running off to infinity (no finite MLE) can drive its probabilities to exactly 0 or 1,
    and with them a direction's curvature to 0 in floating point: that replicate gets no step
    and is not converged, and the others go on as they would alone.
    """
    singular = np.zeros(grad.shape[0], dtype=bool)
    try:
        return np.linalg.solve(hess, grad[..., None])[..., 0], singular
    except np.linalg.LinAlgError:
        steps = np.zeros_like(grad)
        for i in range(grad.shape[0]):
            try:
                steps[i] = np.linalg.solve(hess[i], grad[i])
            except np.linalg.LinAlgError:
                singular[i] = True
        return steps, singular


def _strongly_connected(wins: np.ndarray) -> np.ndarray:
    """Per replicate (B x S x S win weights): is the 'beat or tied' digraph strongly connected?
    (Zermelo/Ford condition for a finite Bradley-Terry MLE.)"""
    n_sys = wins.shape[1]
    reach = (wins > 0) | np.eye(n_sys, dtype=bool)
    steps = 1
    while steps < n_sys:  # transitive closure by repeated squaring: log2(S) products
        reach = (reach.astype(np.int32) @ reach.astype(np.int32)) > 0
        steps *= 2
    return reach.all(axis=(1, 2))


def bradley_terry(
    items,
    raters,
    left,
    right,
    choice,
    ties: str = "half",
    n_boot: int = 1000,
    seed=0,
    confidence: float = 0.95,
) -> BradleyTerryResult:
    """Bradley-Terry system strengths from pairwise judgments, with bootstrap CIs.

    Model (Bradley & Terry 1952): P[a beats b] = pi_a / (pi_a + pi_b), theta = log pi with
    sum theta = 0, fitted by maximum likelihood (Newton-Raphson on the concave log-likelihood;
    Hunter 2004 for the MM alternative). ties="half": a tie counts as half a win for each side.
    ties="davidson" (Davidson 1970): P[a beats b] = pi_a / D, P[tie] = nu sqrt(pi_a pi_b) / D,
    D = pi_a + pi_b + nu sqrt(pi_a pi_b); nu is reported as `tie_parameter`.
    choice: "left", "right" or "tie" per judgment. CIs: percentile bootstrap over judgments
    (n_boot resamples with replacement, numpy default_rng(seed)); a resample whose comparison
    digraph is not strongly connected has no finite MLE and is left out (`n_boot_used`), as is
    one whose fit does not converge. If the data themselves fail that condition (a system that
    never wins, or never loses, counting ties both ways), or, with ties="davidson", the fit does
    not converge (mostly a system that ties and loses but never wins), the strengths are NaN with
    a reason. Position bias per rater:
    share of "left" among the rater's non-tie judgments with an exact two-sided binomial test
    against 0.5 (ties excluded). `items` are the prompts judged; they are counted only.
    """
    items = as_array(items, "items")
    raters = as_array(raters, "raters")
    left = as_array(left, "left")
    right = as_array(right, "right")
    choice = as_array(choice, "choice")
    n = items.size
    if n == 0:
        raise ValueError("items: no judgments given")
    check_same_length(items=items, raters=raters, left=left, right=right, choice=choice)
    if ties not in ("half", "davidson"):
        raise ValueError(f"ties: expected 'half' or 'davidson', got {ties!r}")
    if not (isinstance(n_boot, int | np.integer) and n_boot >= 0):
        raise ValueError(f"n_boot: expected an integer >= 0, got {n_boot!r}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence: expected a number in (0, 1), got {confidence!r}")
    choice = choice.astype(str)
    is_left, is_right, is_tie = choice == "left", choice == "right", choice == "tie"
    if not np.all(is_left | is_right | is_tie):
        bad = np.unique(choice[~(is_left | is_right | is_tie)])[:5].tolist()
        raise ValueError(f"choice: expected 'left', 'right' or 'tie', got {bad}")
    codes, systems = encode(np.concatenate([left, right]), "left", ordered=True)
    a_idx, b_idx = codes[:n], codes[n:]
    if np.any(a_idx == b_idx):
        raise ValueError("right: a judgment compares a system with itself")
    n_sys = systems.size
    davidson = ties == "davidson"

    # position bias (before anything is dropped)
    rater_idx, rater_vals = encode(raters, "raters", ordered=True)
    non_tie = ~is_tie
    n_r = np.bincount(rater_idx, weights=non_tie, minlength=rater_vals.size)
    k_r = np.bincount(rater_idx, weights=is_left, minlength=rater_vals.size)
    bias = _position_bias(rater_vals, n_r, k_r)

    # unordered pair cells: (lo, hi) with outcome lo wins / hi wins / tie
    lo, hi = np.minimum(a_idx, b_idx), np.maximum(a_idx, b_idx)
    lo_wins = (is_left & (a_idx == lo)) | (is_right & (b_idx == lo))
    outcome = np.where(is_tie, 2, np.where(lo_wins, 0, 1))
    pair_code = lo * n_sys + hi
    pair_vals, pair_idx = np.unique(pair_code, return_inverse=True)
    pair_a, pair_b = pair_vals // n_sys, pair_vals % n_sys
    cells = np.bincount(pair_idx * 3 + outcome, minlength=pair_vals.size * 3)
    cells = cells.reshape(1, pair_vals.size, 3).astype(float)

    if n_boot:
        draws = np.random.default_rng(seed).multinomial(n, cells.ravel() / n, size=n_boot)
        cells = np.concatenate([cells, draws.reshape(n_boot, pair_vals.size, 3)], axis=0)

    # half model: a tie is half a win for each side
    counts = cells if davidson else cells[..., :2] + 0.5 * cells[..., 2:3]

    # Zermelo/Ford existence condition per replicate
    wins = np.zeros((cells.shape[0], n_sys, n_sys))
    beat_or_tie_lo = cells[..., 0] + cells[..., 2]
    beat_or_tie_hi = cells[..., 1] + cells[..., 2]
    wins[:, pair_a, pair_b] = beat_or_tie_lo
    wins[:, pair_b, pair_a] = beat_or_tie_hi
    exists = _strongly_connected(wins)
    if davidson:
        exists &= cells[..., 2].sum(axis=1) > 0  # nu = 0 boundary otherwise

    design = _bt_design(pair_a, pair_b, n_sys, davidson)
    params = np.full((cells.shape[0], design.shape[2]), np.nan)
    ll = np.full(cells.shape[0], np.nan)
    converged = np.zeros(cells.shape[0], dtype=bool)
    if exists.any():
        params[exists], ll[exists], converged[exists] = _bt_fit(design, counts[exists], n_sys)

    # Newton on this concave objective converges in a few steps where a finite MLE exists; a fit
    # that does not is running off to infinity. The half model's condition above is necessary
    # for Davidson but not sufficient: a system with ties and losses but no win mostly has no
    # finite estimate there (its strength falls as nu grows without bound), though one that ties
    # a rival who ties everyone can have one.
    usable = exists & converged
    params[~usable] = np.nan
    ll[~usable] = np.nan
    theta = params[0, :n_sys]
    reason = ""
    if exists[0] and not converged[0]:
        reason = (
            "no finite MLE: the fit does not converge (with ties='davidson', a system that "
            "ties and loses but never wins mostly has none)"
        )
    if not exists[0]:
        graph = csr_matrix(wins[0] > 0)
        n_comp, _ = connected_components(graph, directed=True, connection="strong")
        reason = (
            f"no finite MLE: the 'beats or ties' graph has {n_comp} strongly connected parts "
            "(a system never wins or never loses)"
        )
        if davidson and cells[0, :, 2].sum() == 0:
            reason = "no ties: the Davidson tie parameter is 0; use ties='half'"
    boot = params[1:, :n_sys][usable[1:]]
    if boot.shape[0] >= 2 and usable[0]:
        tail = (1 - confidence) / 2 * 100
        ci_low, ci_high = np.percentile(boot, [tail, 100 - tail], axis=0)
    else:
        ci_low = ci_high = np.full(n_sys, np.nan)
        if usable[0]:
            reason = reason or "fewer than two usable bootstrap replicates: no CI"
    return BradleyTerryResult(
        systems=systems,
        strength_values=theta,
        ci_low=ci_low,
        ci_high=ci_high,
        ties=ties,
        tie_parameter=float(np.exp(params[0, n_sys])) if davidson else np.nan,
        log_likelihood=float(ll[0]),
        n_judgments=int(n),
        n_ties=int(is_tie.sum()),
        n_items=int(np.unique(items).size),
        n_boot=int(n_boot),
        n_boot_used=int(usable[1:].sum()),
        converged=bool(converged[0]),
        position_bias=bias,
        reason=reason,
    )


def _binom_two_sided(k, n):
    """Exact two-sided binomial p against 0.5 (symmetric: twice the smaller tail), vectorised."""
    with np.errstate(invalid="ignore"):
        tail = np.minimum(stats.binom.cdf(k, n, 0.5), stats.binom.sf(k - 1, n, 0.5))
        p = np.minimum(1.0, 2 * tail)
    return np.where(n > 0, p, np.nan)


def _position_bias(rater_vals, n_r, k_r) -> PositionBias:
    with np.errstate(invalid="ignore", divide="ignore"):
        share = k_r / n_r
    total_n, total_k = n_r.sum(), k_r.sum()
    return PositionBias(
        raters=rater_vals,
        n=n_r.astype(np.int64),
        share_left=share,
        p=_binom_two_sided(k_r, n_r),
        overall_share_left=float(total_k / total_n) if total_n else np.nan,
        overall_p=float(_binom_two_sided(np.array([total_k]), np.array([total_n]))[0]),
    )


# --------------------------------------------------------------------------- power


@dataclass(frozen=True, eq=False)
class PowerResult:
    """Power of the two-sided one-sample/paired t-test at n, and the n reaching `target`."""

    effect: float
    n: int
    alpha: float
    power: float
    target: float
    n_for_target: float  # smallest integer n with power >= target; NaN if none
    reason: str


def _t_power(d, n, alpha):
    n = np.asarray(n, dtype=float)
    df = n - 1
    crit = stats.t.isf(alpha / 2, df)
    nc = d * np.sqrt(n)
    # the lower tail P(T' < -crit) as P(T' > crit) at -nc: scipy's nct.cdf is NaN far in that
    # tail for small df (df = 1, nc = 11.3), which stopped the search for n with a NaN power
    return stats.nct.sf(crit, df, nc) + stats.nct.sf(crit, df, -nc)


def power(effect, n, alpha: float = 0.05, target: float = 0.8) -> PowerResult:
    """Power of the two-sided one-sample (or paired) Student t-test for Cohen's d = `effect`.

    power = P(|T'| > t_{1-alpha/2, n-1}) with T' ~ noncentral t(df = n - 1, nc = d sqrt(n))
    (Cohen 1988, ch. 2; as statsmodels' TTestPower). Also the smallest integer n >= 2 whose
    power reaches `target` (0.8 by default). effect = 0: power = alpha and the n is NaN.
    """
    _check_alpha(alpha)
    if not (isinstance(n, int | np.integer) and n >= 2):
        raise ValueError(f"n: expected an integer >= 2, got {n!r}")
    if not np.isfinite(effect):
        raise ValueError(f"effect: expected a finite Cohen's d, got {effect!r}")
    if not 0 < target < 1:
        raise ValueError(f"target: expected a number in (0, 1), got {target!r}")
    d = abs(float(effect))
    pw = float(_t_power(d, n, alpha))
    if d == 0:
        return PowerResult(
            float(effect), int(n), alpha, pw, target, np.nan, "no effect: power = alpha"
        )
    hi = 2
    while _t_power(d, hi, alpha) < target:  # doubling, then bisection: O(log n) evaluations
        hi *= 2
        if hi > 2**40:
            return PowerResult(float(effect), int(n), alpha, pw, target, np.nan, "n too large")
    lo = max(2, hi // 2)
    if _t_power(d, lo, alpha) >= target:
        hi = lo
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _t_power(d, mid, alpha) >= target:
            hi = mid
        else:
            lo = mid
    return PowerResult(float(effect), int(n), alpha, pw, target, float(hi), "")
