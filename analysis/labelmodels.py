"""Label models: majority and weighted vote, soft labels and Dawid-Skene EM.

Long-format inputs (one row per label); vectorised with np.bincount and sparse products.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from analysis._long import as_array, check_same_length, encode

__all__ = [
    "DawidSkeneResult",
    "SoftLabels",
    "VoteResult",
    "dawid_skene",
    "majority_vote",
    "soft_labels",
    "weighted_vote",
]

_TIE_BREAKS = ("random", "lowest")
_INITS = ("proportions", "majority")
# A cap that convergence, not the cap, ends in practice: a 5M-label study converges in ~60 EM
# iterations, small or weakly identified ones can need several hundred or a few thousand.
DS_MAX_ITER = 10_000
DS_TOL = 1e-6
# A report's budget for EM, in responses x E-steps: about 10-16 s of CPU at 1M labels (9-16 ms
# per E-step there). Where a design leaves some raters' confusion rows nearly flat (raters who
# rarely or never see a class), plain EM creeps along them for thousands of iterations; the
# budget stops it and the fit says so, with how many item labels were still moving.
DS_BUDGET = 1_000_000_000
_MOVED_EVERY = 100  # E-steps between the checkpoints that `labels_moved` is counted against


def iteration_cap(n_labels: int, budget: int | None = None) -> int:
    """The EM cap a report uses for `n_labels` responses: DS_MAX_ITER up to budget / DS_MAX_ITER
    labels (100k with DS_BUDGET), then fewer, so a fit costs at most `budget` response-iterations
    (1,000 at 1M labels, 200 at 5M), and never fewer than 100 (crowd-kit's default cap)."""
    budget = DS_BUDGET if budget is None else budget
    return int(min(DS_MAX_ITER, max(100, budget // max(int(n_labels), 1))))


# --------------------------------------------------------------------------- helpers


def _read(items, raters, labels) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The three long-format columns, validated (shared rules of analysis._long)."""
    items = as_array(items, "items")
    raters = as_array(raters, "raters")
    labels = as_array(labels, "labels")
    if items.size == 0:
        raise ValueError("items: no labels given")
    check_same_length(items=items, raters=raters, labels=labels)
    return items, raters, labels


def _class_index(labels: np.ndarray, classes) -> tuple[np.ndarray, np.ndarray]:
    """Classes (given order, or sorted observed labels) and each label's column index."""
    inv, uniq = encode(labels, "labels", ordered=True)
    if classes is None:
        return uniq, inv
    cls = as_array(classes, "classes")
    if cls.size == 0:
        raise ValueError("classes: empty")
    try:
        order = np.argsort(cls, kind="stable")
        sorted_cls = cls[order]
        if np.any(sorted_cls[1:] == sorted_cls[:-1]):
            raise ValueError("classes: contains duplicates")
        pos = np.searchsorted(sorted_cls, uniq)
    except TypeError as exc:
        raise ValueError(f"classes: not comparable with labels ({exc})") from None
    pos = np.minimum(pos, cls.size - 1)
    found = sorted_cls[pos] == uniq
    if not np.all(found):
        missing = uniq[~found][:5].tolist()
        raise ValueError(f"classes: does not contain the observed labels {missing}")
    return cls, order[pos][inv]


def _pick(scores_t: np.ndarray, tie_break: str, seed) -> tuple[np.ndarray, np.ndarray]:
    """Class of the largest score per item (scores_t is K x n_items) and whether it was tied.

    "lowest" takes the first tied class (class order); "random" draws uniformly among the
    tied classes with np.random.default_rng(seed), one draw per tied item in item order.
    """
    k = scores_t.shape[0]
    best = scores_t[0].copy()
    for c in range(1, k):  # loops over the K classes, vectorised over items
        np.maximum(best, scores_t[c], out=best)
    floor = best - 1e-12 * np.abs(best)
    choice = np.full(best.shape, -1, dtype=np.intp)
    n_max = np.zeros(best.shape, dtype=np.int8 if k < 127 else np.intp)
    for c in range(k):
        hit = scores_t[c] >= floor
        n_max += hit
        choice[(choice < 0) & hit] = c
    tied = n_max > 1
    if tie_break == "random" and tied.any():
        rows = np.flatnonzero(tied)
        is_max = scores_t[:, rows] >= floor[rows]
        draw = np.random.default_rng(seed).random((k, rows.size))
        choice[rows] = np.argmax(np.where(is_max, draw, -1.0), axis=0)
    return choice, tied


def _share_dicts(items: np.ndarray, classes: np.ndarray, proportions: np.ndarray) -> dict:
    """item -> {class: share} from an n_items x K array of shares (a Python loop: a view only)."""
    cls = classes.tolist()
    return {
        item: dict(zip(cls, row, strict=True))
        for item, row in zip(items.tolist(), proportions.tolist(), strict=True)
    }


def _check_tie_break(tie_break: str) -> None:
    if tie_break not in _TIE_BREAKS:
        raise ValueError(f"tie_break: expected one of {_TIE_BREAKS}, got {tie_break!r}")


# --------------------------------------------------------------------------- results


@dataclass(frozen=True, eq=False)
class VoteResult:
    """Majority or weighted vote. Arrays are aligned with `items` (rows) and `classes` (columns).

    `labels`, `shares` are dict views built on first access; the arrays are the primary data.
    """

    items: np.ndarray
    classes: np.ndarray
    item_labels: np.ndarray  # the winning label per item
    scores: np.ndarray  # n_items x K: vote counts (majority) or summed weights (weighted)
    tied: np.ndarray  # bool per item: several labels shared the top score
    no_weight: np.ndarray  # bool per item: total weight zero, label undefined (weighted vote)
    tie_break: str
    n_labels: int
    n_items: int

    @property
    def proportions(self) -> np.ndarray:
        """Per-item shares of the score (NaN rows where the item has no weight)."""
        total = self.scores.sum(axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.scores / total

    @property
    def ties(self) -> np.ndarray:
        """The items whose top score was shared by several labels."""
        return self.items[self.tied]

    @functools.cached_property
    def labels(self) -> dict:
        """item -> winning label."""
        return dict(zip(self.items.tolist(), self.item_labels.tolist(), strict=True))

    @functools.cached_property
    def shares(self) -> dict:
        """item -> {label: share} over all classes."""
        return _share_dicts(self.items, self.classes, self.proportions)


@dataclass(frozen=True, eq=False)
class SoftLabels:
    """Label distribution per item: `proportions[i, k]` = share of item i's labels in class k."""

    items: np.ndarray
    classes: np.ndarray
    counts: np.ndarray  # n_items x K integer counts
    n_labels: int

    @property
    def proportions(self) -> np.ndarray:
        return self.counts / self.counts.sum(axis=1, keepdims=True)

    @functools.cached_property
    def distributions(self) -> dict:
        """item -> {label: share} over all classes."""
        return _share_dicts(self.items, self.classes, self.proportions)


@dataclass(frozen=True, eq=False)
class DawidSkeneResult:
    """Dawid-Skene EM estimates; arrays aligned with `items`, `raters` and `classes`.

    `error_rates[j, k, l]` = P(rater j answers classes[l] | true class classes[k]); rows sum to 1,
    NaN rows where the rater had no posterior mass on that true class (the row is then
    unidentified). `posteriors` come from the last E-step, `priors` and `error_rates` from the
    M-step that follows it; `log_likelihood` is the observed-data log-likelihood at the
    parameters that produced `posteriors`.
    """

    items: np.ndarray
    raters: np.ndarray
    classes: np.ndarray
    posteriors: np.ndarray  # n_items x K
    priors: np.ndarray  # K
    error_rates: np.ndarray  # n_raters x K x K
    n_iter: int
    converged: bool
    log_likelihood: float
    log_likelihood_trace: np.ndarray  # one value per E-step
    n_labels: int
    init: str
    reason: str  # "" when converged
    tol: float = DS_TOL
    max_iter: int = DS_MAX_ITER
    n_clamped: int = 0  # items held at a given class (semi-supervised), 0 for plain EM
    # Items whose most probable class changed over the last `moved_over` E-steps (the E-steps
    # since the latest checkpoint: the first E-step, then every 100th): how settled the labels
    # were when EM stopped. 0 over 0 after a single E-step.
    labels_moved: int = 0
    moved_over: int = 0

    @property
    def item_labels(self) -> np.ndarray:
        """Most probable class per item (the first class in `classes` order on exact ties)."""
        return self.classes[np.argmax(self.posteriors, axis=1)]

    @property
    def log_likelihood_change(self) -> float:
        """Change of the log-likelihood over the last iteration (NaN after a single E-step)."""
        trace = self.log_likelihood_trace
        return float(trace[-1] - trace[-2]) if trace.size >= 2 else float("nan")

    @functools.cached_property
    def labels(self) -> dict:
        """item -> most probable class."""
        return dict(zip(self.items.tolist(), self.item_labels.tolist(), strict=True))

    @functools.cached_property
    def confusion(self) -> dict:
        """rater -> K x K array (rows = true class, columns = given label)."""
        return dict(zip(self.raters.tolist(), self.error_rates, strict=True))


# --------------------------------------------------------------------------- votes


def _vote(items, labels, weights_per_label, tie_break, seed) -> VoteResult:
    """Scores per item and class (counts, or summed weights) and the winning class per item."""
    item_idx, item_vals = encode(items, "items", ordered=True)
    label_idx, classes = encode(labels, "labels", ordered=True)
    n_items, k = item_vals.size, classes.size
    flat = label_idx * n_items + item_idx  # K x n_items layout: contiguous rows per class
    scores_t = np.bincount(flat, weights=weights_per_label, minlength=n_items * k)
    scores_t = scores_t.reshape(k, n_items)
    choice, tied = _pick(scores_t, tie_break, seed)
    scores = scores_t.T
    return VoteResult(
        items=item_vals,
        classes=classes,
        item_labels=classes[choice],
        scores=scores,
        tied=tied,
        no_weight=scores.sum(axis=1) == 0,  # never with counts: every item has a label
        tie_break=tie_break,
        n_labels=int(items.size),
        n_items=int(n_items),
    )


def majority_vote(items, raters, labels, tie_break: str = "random", seed=0) -> VoteResult:
    """Majority vote: the label given most often to each item.

    label_i = argmax_k n_ik, n_ik = number of responses of class k on item i (every response
    counts, also repeated ones by the same rater). A tie is resolved within the tied labels:
    tie_break="random" draws uniformly with numpy's default_rng(seed), one draw per tied item in
    sorted item order (reproducible for a seed); "lowest" takes the first tied label in sorted
    class order (crowd-kit's MajorityVote rule). `tied` flags every tied item either way.
    Source: the plurality rule, as the baseline in Dawid & Skene (1979) and Snow et al. (2008).
    """
    items, raters, labels = _read(items, raters, labels)
    _check_tie_break(tie_break)
    return _vote(items, labels, None, tie_break, seed)


def weighted_vote(items, raters, labels, weights, tie_break: str = "random", seed=0) -> VoteResult:
    """Weighted vote: each response counts with its rater's weight.

    label_i = argmax_k sum_{responses r on i with label k} w_rater(r). `weights` maps every rater
    to a finite weight >= 0 (e.g. log-odds of accuracy, Nitzan & Paroush 1982; Littlestone &
    Warmuth 1994 for weighted majority). Ties as in `majority_vote`. An item whose raters all
    have weight 0 has no defined winner: `no_weight` flags it, its proportions row is NaN and
    its label is drawn by the tie rule among all classes.
    """
    items, raters, labels = _read(items, raters, labels)
    _check_tie_break(tie_break)
    if not hasattr(weights, "keys"):
        raise ValueError("weights: expected a mapping rater -> float")
    rater_idx, rater_vals = encode(raters, "raters", ordered=True)
    keys = np.asarray(list(weights.keys()))
    vals = np.asarray(list(weights.values()), dtype=float)
    if vals.size and (not np.all(np.isfinite(vals)) or np.any(vals < 0)):
        raise ValueError("weights: every weight must be finite and >= 0")
    try:
        key_order = np.argsort(keys, kind="stable")
        pos = np.searchsorted(keys[key_order], rater_vals) if keys.size else None
    except TypeError as exc:
        raise ValueError(f"weights: keys not comparable with raters ({exc})") from None
    if pos is None:
        raise ValueError("weights: empty mapping")
    pos = np.minimum(pos, keys.size - 1)
    found = keys[key_order][pos] == rater_vals
    if not np.all(found):
        raise ValueError(f"weights: no weight for raters {rater_vals[~found][:5].tolist()}")
    per_rater = vals[key_order][pos]
    return _vote(items, labels, per_rater[rater_idx], tie_break, seed)


def soft_labels(items, raters, labels) -> SoftLabels:
    """The empirical label distribution per item.

    p_ik = n_ik / n_i, the share of item i's responses in class k (every response counts);
    this is Dawid & Skene's (1979) eq. 3.1 starting point and the "soft label" target of
    Peterson et al. (2019) and Uma et al. (2021).
    """
    items, raters, labels = _read(items, raters, labels)
    item_idx, item_vals = encode(items, "items", ordered=True)
    label_idx, classes = encode(labels, "labels", ordered=True)
    k = classes.size
    counts = np.bincount(item_idx * k + label_idx, minlength=item_vals.size * k)
    return SoftLabels(
        items=item_vals,
        classes=classes,
        counts=counts.reshape(item_vals.size, k),
        n_labels=int(items.size),
    )


# --------------------------------------------------------------------------- Dawid-Skene


_UNDERFLOW = 1e-250
# Items with at most this many responses take the product path of the E-step (Python steps per
# E-step: one per response position of each such group); items with more take the log path.
_PRODUCT_MAX_RESPONSES = 16


@dataclass(frozen=True, eq=False)
class _Design:
    """The responses as the EM steps read them, items in their internal order (by number of
    responses, then item): `design[i, j*K + l]` = times rater j answered l on item i (CSR),
    `groups` = (first row, rows, codes m x rows) of the items with m <= _PRODUCT_MAX_RESPONSES
    responses each (codes j*K + l), contiguous row ranges; rows from `log_rows` on take the log
    path."""

    design: sp.csr_matrix
    design_t: sp.csc_matrix
    groups: tuple
    log_rows: int
    n_raters: int
    k: int


def _layout(item_idx, rater_idx, label_idx, n_items, n_raters, k) -> tuple[_Design, np.ndarray]:
    """The design in internal item order, and `order` (internal row r is sorted item order[r])."""
    per_item = np.bincount(item_idx, minlength=n_items)
    order = np.lexsort((np.arange(n_items), per_item))  # by number of responses, then item
    rank = np.empty(n_items, dtype=np.intp)
    rank[order] = np.arange(n_items)
    row = rank[item_idx]
    code = rater_idx.astype(np.intp) * k + label_idx
    design = sp.csr_matrix(
        (np.ones(row.size), (row, code)), shape=(n_items, n_raters * k)
    )  # sums duplicate responses; indices sorted within rows
    by_row = np.lexsort((code, row))
    codes_sorted = code[by_row]
    sizes = per_item[order]
    groups = []
    start = 0
    label_start = 0
    for m in np.unique(sizes).tolist():
        n_rows = int(np.count_nonzero(sizes == m))
        if m > _PRODUCT_MAX_RESPONSES:
            break
        block = codes_sorted[label_start : label_start + n_rows * m]
        groups.append((start, n_rows, np.ascontiguousarray(block.reshape(n_rows, m).T)))
        start += n_rows
        label_start += n_rows * m
    return _Design(design, design.T, tuple(groups), start, n_raters, k), order


def _m_step(d: _Design, post, col_sums, smoothing):
    """Priors and error rates from posteriors (n_items x K, C order; col_sums = its column sums).

    Returns priors (K), rates (J x K_true x K_given; undefined rows set to 1 so their log is 0,
    they carry no posterior mass) and the mask of undefined rows.
    """
    n_raters, k = d.n_raters, d.k
    priors = col_sums / post.shape[0]
    # counts[j*K + l, k] = sum over responses l of rater j of T[item, k]
    counts = d.design_t @ post
    counts = np.asarray(counts).reshape(n_raters, k, k).transpose(0, 2, 1)
    if smoothing:
        counts = counts + smoothing
    totals = counts.sum(axis=2, keepdims=True)
    undefined = totals <= 0
    with np.errstate(invalid="ignore", divide="ignore"):
        rates = np.where(undefined, 1.0, counts / totals)
    return priors, rates, undefined[..., 0]


def _e_step(d: _Design, priors, rates):
    """Posteriors (n_items x K), their column sums and the observed-data log-likelihood.

    prob[k, i] = p_k prod_{responses (j, l) on i} pi_jkl on a K x n_items array (reductions over
    K contiguous rows are several times faster than over a short last axis): items with few
    responses as products of the rates gathered per response position, the others as exp of
    the sparse sum of log-rates. Log-probabilities are <= 0, so nothing overflows; an item
    whose total underflows is redone in log space with the max-shift.
    """
    n_raters, k = d.n_raters, d.k
    n_items = d.design.shape[0]
    # table[k, j*K + l] = P(rater j says l | class k)
    table = np.ascontiguousarray(rates.transpose(1, 0, 2).reshape(k, n_raters * k))
    with np.errstate(divide="ignore"):
        log_priors = np.log(priors)
        log_table = np.log(table.T) if d.log_rows < n_items else None
    whole = len(d.groups) == 1 and d.log_rows == n_items  # e.g. every item has `overlap` labels
    prob = None if whole else np.empty((k, n_items))
    with np.errstate(under="ignore"):
        for start, n_rows, codes in d.groups:
            part = np.take(table, codes[0], axis=1)
            for position in range(1, codes.shape[0]):
                part *= np.take(table, codes[position], axis=1)
            part *= priors[:, None]
            if whole:
                prob = part
            else:
                prob[:, start : start + n_rows] = part
        if log_table is not None:
            logp = (d.design[d.log_rows :] @ log_table).T
            logp += log_priors[:, None]
            np.exp(logp, out=prob[:, d.log_rows :])
    total = np.add.reduce(prob, axis=0)
    small = np.flatnonzero(total < _UNDERFLOW)
    shift = 0.0
    if small.size:  # rare: tiny rates or many labels per item; redo these items in log space
        if log_table is None:
            with np.errstate(divide="ignore"):
                log_table = np.log(table.T)
        logp = np.ascontiguousarray((d.design[small] @ log_table).T)
        logp += log_priors[:, None]
        top = np.maximum.reduce(logp, axis=0)
        with np.errstate(under="ignore", invalid="ignore"):
            prob[:, small] = np.exp(logp - top)
        total[small] = np.add.reduce(prob[:, small], axis=0)
        shift = float(np.sum(top))
    prob /= total
    loglik = float(shift + np.sum(np.log(total)))
    col_sums = np.add.reduce(prob, axis=1)
    return np.ascontiguousarray(prob.T), col_sums, loglik


def dawid_skene(
    items,
    raters,
    labels,
    classes=None,
    init="proportions",
    max_iter: int = DS_MAX_ITER,
    tol: float = DS_TOL,
    smoothing: float = 0.0,
    clamp=None,
) -> DawidSkeneResult:
    """Dawid-Skene maximum-likelihood label model, fitted by EM.

    Model: item i has true class k with prior p_k; rater j answers l with probability
    pi_jkl, independently; the likelihood is prod_i sum_k p_k prod_{responses (j,l) on i}
    pi_jkl (Dawid & Skene 1979, eq. 2.7). EM: E-step T_ik ∝ p_k prod pi_jkl (eq. 2.5, in log
    space); M-step p_k = mean_i T_ik (eq. 2.4), pi_jkl = sum_{i: j said l} T_ik / sum_l (same)
    (eq. 2.3). Every response counts, also repeated ones by the same rater on one item (the 1979
    data has observer 1 rating each patient three times).

    init: "proportions" starts from T_ik = n_ik / n_i, the per-item shares of all responses
    (eq. 3.1; crowd-kit's DawidSkene starts the same way); "majority" from the hard majority
    vote (a tie split equally among the tied classes); or an n_items x K array of starting
    posteriors aligned with the sorted unique items. Then M-step, and E/M pairs until the
    largest absolute change of priors and error rates between two M-steps is below `tol`, or
    `max_iter` E-steps. `smoothing` adds a pseudo-count to every cell of each rater's count
    matrix before normalising (0 = the plain MLE). `classes` fixes the class set and column
    order (default: the sorted observed labels); classes nobody used get prior 0 under the
    default init. Not converged within max_iter: `converged=False` with a reason that says how
    many item labels changed over the last (up to 100) iterations (`labels_moved`). The default
    cap (DS_MAX_ITER = 10,000) rarely binds; reports pass `iteration_cap(n_labels)`, which
    bounds the work on large studies. Report `n_iter` and `log_likelihood_change` beside the
    result.

    clamp: optional (items, labels) pair, known true classes (e.g. gold items' expert answers):
    those items' posteriors are held at the one-hot of their class in every E-step (the
    semi-supervised variant, Dawid & Skene 1979 sec. 4; Raykar et al. 2010). Clamped items
    still count in the log-likelihood as unclamped ones would (it is then no longer the EM
    objective, so it may fall). Items not in the data are ignored; a label not in the classes
    raises ValueError.
    """
    items, raters, labels = _read(items, raters, labels)
    if not (isinstance(max_iter, int | np.integer) and max_iter >= 1):
        raise ValueError(f"max_iter: expected an integer >= 1, got {max_iter!r}")
    if not (np.isfinite(tol) and tol >= 0):
        raise ValueError(f"tol: expected a finite number >= 0, got {tol!r}")
    if not (np.isfinite(smoothing) and smoothing >= 0):
        raise ValueError(f"smoothing: expected a finite number >= 0, got {smoothing!r}")
    item_idx, item_vals = encode(items, "items", ordered=True)
    rater_idx, rater_vals = encode(raters, "raters", ordered=True)
    cls, label_idx = _class_index(labels, classes)
    n_items, n_raters, k = item_vals.size, rater_vals.size, cls.size

    d, order = _layout(item_idx, rater_idx, label_idx, n_items, n_raters, k)

    if isinstance(init, str):
        if init not in _INITS:
            raise ValueError(f"init: expected one of {_INITS} or an array, got {init!r}")
        counts = np.bincount(item_idx * k + label_idx, minlength=n_items * k).reshape(n_items, k)
        if init == "proportions":
            post = counts / counts.sum(axis=1, keepdims=True)
        else:
            top = counts == counts.max(axis=1, keepdims=True)
            post = top / top.sum(axis=1, keepdims=True)
        init_name = init
    else:
        start = np.asarray(init, dtype=float)
        if start.shape != (n_items, k) or not np.all(np.isfinite(start)) or np.any(start < 0):
            raise ValueError(
                f"init: expected a non-negative finite array of shape {(n_items, k)}, "
                f"got shape {start.shape}"
            )
        row = start.sum(axis=1, keepdims=True)
        if np.any(row <= 0):
            raise ValueError("init: every row needs positive mass")
        post = start / row
        init_name = "array"
    post = np.ascontiguousarray(post[order], dtype=float)  # internal item order from here
    fixed_rows, fixed_cols = _clamp_rows(clamp, item_vals, cls)
    rank = np.empty(n_items, dtype=np.intp)
    rank[order] = np.arange(n_items)
    fixed_rows = rank[fixed_rows]
    if fixed_rows.size:
        post[fixed_rows] = 0.0
        post[fixed_rows, fixed_cols] = 1.0

    priors, rates, undefined = _m_step(d, post, post.sum(axis=0), smoothing)
    trace = []
    converged = False
    n_iter = 0
    mark, mark_at, previous = None, 0, None
    for n_iter in range(1, max_iter + 1):  # noqa: B007 - n_iter is reported
        if previous is not None and (n_iter - 1 == 1 or (n_iter - 1) % _MOVED_EVERY == 0):
            mark, mark_at = np.argmax(previous, axis=1), n_iter - 1
        post, col_sums, loglik = _e_step(d, priors, rates)
        if fixed_rows.size:
            post[fixed_rows] = 0.0
            post[fixed_rows, fixed_cols] = 1.0
            col_sums = post.sum(axis=0)
        previous = post
        trace.append(loglik)
        new_priors, new_rates, undefined = _m_step(d, post, col_sums, smoothing)
        change = max(np.max(np.abs(new_priors - priors)), np.max(np.abs(new_rates - rates)))
        priors, rates = new_priors, new_rates
        if change < tol:
            converged = True
            break
    moved = 0 if mark is None else int(np.count_nonzero(np.argmax(post, axis=1) != mark))
    moved_over = 0 if mark is None else n_iter - mark_at

    error_rates = rates.copy()
    error_rates[undefined] = np.nan
    return DawidSkeneResult(
        items=item_vals,
        raters=rater_vals,
        classes=cls,
        posteriors=post[rank],  # back to sorted item order
        priors=priors,
        error_rates=error_rates,
        n_iter=n_iter,
        converged=converged,
        log_likelihood=trace[-1],
        log_likelihood_trace=np.asarray(trace),
        n_labels=int(items.size),
        init=init_name,
        reason=""
        if converged
        else (
            f"no convergence within max_iter={max_iter} (tol={tol}); {moved} item label"
            f"{'' if moved == 1 else 's'} changed over the last {moved_over} iterations"
        ),
        tol=float(tol),
        max_iter=int(max_iter),
        n_clamped=int(fixed_rows.size),
        labels_moved=moved,
        moved_over=moved_over,
    )


def _clamp_rows(clamp, item_vals: np.ndarray, cls: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row (item) and column (class) indices of the clamped items present in the data."""
    empty = np.zeros(0, dtype=np.intp)
    if clamp is None:
        return empty, empty
    try:
        c_items, c_labels = clamp
    except (TypeError, ValueError):
        raise ValueError("clamp: expected an (items, labels) pair") from None
    c_items = np.asarray(c_items)
    c_labels = np.asarray(c_labels)
    if c_items.shape != c_labels.shape or c_items.ndim != 1:
        raise ValueError("clamp: items and labels must be 1-d and of equal length")
    if c_items.size == 0:
        return empty, empty
    try:
        pos = np.minimum(np.searchsorted(item_vals, c_items), item_vals.size - 1)
        present = item_vals[pos] == c_items
    except TypeError as exc:
        raise ValueError(f"clamp: items not comparable with the data's items ({exc})") from None
    col_order = np.argsort(cls, kind="stable")
    try:
        col = np.minimum(np.searchsorted(cls[col_order], c_labels), cls.size - 1)
        known = cls[col_order][col] == c_labels
    except TypeError as exc:
        raise ValueError(f"clamp: labels not comparable with the classes ({exc})") from None
    if not np.all(known):
        raise ValueError(f"clamp: labels not among the classes: {c_labels[~known][:5].tolist()}")
    return pos[present].astype(np.intp), col_order[col][present].astype(np.intp)
