"""The aggregation section: majority vote, Dawid-Skene and soft labels per item, the items where
they disagree, how well each recovers the gold answers, and the optional (always labelled)
unanimous-items view.

Gold items are aggregated like any other item (their first labels count); their expert answers
are only used to check the aggregation, unless the lead clamps them (ReportOptions.clamp_gold).
"""

from __future__ import annotations

import numpy as np

from analysis import agreement as ag
from analysis import labelmodels as lm
from analysis import summaries
from qc.loaders import ReportConfig, Snapshot
from qc.reports.agreement import chance_corrected
from qc.reports.common import category_label, display_label, num
from qc.reports.labels import Labels

PREVIEW_ROWS = 50


def unit_column(snap: Snapshot, units: np.ndarray, column: np.ndarray, missing="") -> np.ndarray:
    """A per-unit column of the snapshot (aligned with unit_ids) looked up for `units`."""
    if snap.unit_ids.size == 0 or column.size == 0:
        return np.full(units.size, missing, dtype=object)
    pos = np.minimum(np.searchsorted(snap.unit_ids, units), snap.unit_ids.size - 1)
    found = snap.unit_ids[pos] == units
    return np.where(found, column[pos], missing)


def _tokens(snap: Snapshot, units: np.ndarray) -> np.ndarray:
    return unit_column(snap, units, snap.unit_tokens)


def gold_answers(snap: Snapshot, items: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """Per item: the expert answer when it is a gold item with an answer among `classes`, else
    None (object array aligned with `items`)."""
    out = np.full(items.size, None, dtype=object)
    if snap.gold_units.size == 0 or items.size == 0:
        return out
    pos = np.minimum(np.searchsorted(items, snap.gold_units), items.size - 1)
    present = items[pos] == snap.gold_units
    known = np.array([v in set(classes.tolist()) for v in snap.gold_values.tolist()], dtype=bool)
    keep = present & known
    out[pos[keep]] = snap.gold_values[keep]
    return out


def _accuracy(predicted: np.ndarray, gold: np.ndarray, has_gold: np.ndarray) -> dict:
    right = int((predicted[has_gold] == gold[has_gold]).sum())
    result = summaries.proportion(right, int(has_gold.sum()))
    return {
        "value": num(result.value),
        "ci_low": num(result.ci_low),
        "ci_high": num(result.ci_high),
        "right": result.successes,
        "n": result.n,
    }


def _small(x: float) -> str:
    """A small number as the page prints it: 3.2e-07, not 0.000."""
    return f"{x:.2g}" if np.isfinite(x) else ""


def gold_check(mv_labels, ds_labels, gold: np.ndarray, clamped: bool) -> dict:
    """Accuracy of majority vote and Dawid-Skene on the gold items (Wilson 95% intervals)."""
    has_gold = np.array([g is not None for g in gold.tolist()], dtype=bool)
    gold_arr = np.where(has_gold, gold, None)
    out = {
        "n_items": int(has_gold.sum()),
        "clamped": clamped,
        "majority": _accuracy(np.asarray(mv_labels, dtype=object), gold_arr, has_gold),
        "dawid_skene": _accuracy(np.asarray(ds_labels, dtype=object), gold_arr, has_gold),
        "interval": "Wilson 95% score interval",
    }
    if clamped:
        out["note"] = (
            "Gold items are clamped to their expert answers, so both methods are right on every "
            "gold item by construction: this is not a check of the aggregation."
        )
    elif not out["n_items"]:
        out["note"] = "No gold item has labels yet: the aggregation cannot be checked."
    return out


def _class_counts(labels: np.ndarray, classes: np.ndarray, texts=()) -> list[dict]:
    idx = np.searchsorted(classes, labels)
    counts = np.bincount(idx, minlength=classes.size)
    total = max(int(counts.sum()), 1)
    return [
        {"label": display_label(c, texts), "value": c, "count": int(n), "share": n / total}
        for c, n in zip(classes.tolist(), counts.tolist(), strict=True)
    ]


def aggregation_section(
    t: Labels, snap: Snapshot, config: ReportConfig, fits: dict | None = None
) -> tuple[dict, dict]:
    """(summary for the page, per-item columns for downloads). Classes are shown by their label
    ("3", not "3.0"); `class_values` and the per-item columns keep the raw values.

    `fits`, if given, receives the unclamped Dawid-Skene fit as "dawid_skene": (t, fit), the
    rater pages' own fit, so the worker does not fit the same labels twice."""
    it, ra, la = t.items, t.raters, t.labels
    soft = lm.soft_labels(it, ra, la)
    classes = soft.classes
    gold = gold_answers(snap, soft.items, classes)
    has_gold = np.array([g is not None for g in gold.tolist()], dtype=bool)
    clamp = None
    if config.clamp_gold and has_gold.any():
        clamp = (soft.items[has_gold], np.array(gold[has_gold].tolist(), dtype=classes.dtype))
    mv = lm.majority_vote(it, ra, la, tie_break="random", seed=config.seed)
    ds = lm.dawid_skene(it, ra, la, clamp=clamp, max_iter=lm.iteration_cap(la.size))
    if fits is not None and clamp is None:
        fits["dawid_skene"] = (t, ds)
    if not (np.array_equal(mv.items, soft.items) and np.array_equal(ds.items, soft.items)):
        raise ValueError("label models returned different item sets")
    mv_labels = mv.item_labels.copy()
    if clamp is not None:  # the vote of a clamped gold item is its expert answer
        mv_labels[has_gold] = clamp[1]
    names = [category_label(c) for c in classes.tolist()]  # raw, for downloads
    texts = config.category_texts
    shown = [display_label(c, texts) for c in classes.tolist()]  # as the page reads them
    ds_labels = ds.item_labels
    ds_conf = ds.posteriors.max(axis=1)
    disagree = mv_labels != ds_labels
    tokens = _tokens(snap, soft.items)
    is_gold = unit_column(snap, soft.items, snap.unit_gold, missing=False).astype(bool)
    n_per_item = soft.counts.sum(axis=1)
    prompts = unit_column(snap, soft.items, snap.unit_prompt)
    systems = unit_column(snap, soft.items, snap.unit_systems)
    outputs = unit_column(snap, soft.items, snap.unit_output)
    preview = np.flatnonzero(disagree)[:PREVIEW_ROWS]
    majority = _class_counts(mv_labels, classes, texts)
    dawid_skene = _class_counts(ds_labels, classes, texts)
    summary = {
        "classes": shown,
        "class_values": classes.tolist(),
        "n_items": int(soft.items.size),
        "n_gold_items": int(is_gold.sum()),
        "n_labels": int(soft.n_labels),
        "n_disagree": int(disagree.sum()),
        "n_majority_ties": int(mv.tied.sum()),
        "majority": majority,
        "dawid_skene": dawid_skene,
        # One row per class with both counts, so the page only reads.
        "class_counts": [
            {
                "label": m["label"],
                "value": m["value"],
                "majority": m["count"],
                "dawid_skene": d["count"],
            }
            for m, d in zip(majority, dawid_skene, strict=True)
        ],
        "dawid_skene_converged": bool(ds.converged),
        "dawid_skene_iterations": int(ds.n_iter),
        "dawid_skene_max_iter": int(ds.max_iter),
        "dawid_skene_tol": float(ds.tol),
        "dawid_skene_tol_text": f"{ds.tol:g}",
        "dawid_skene_loglik": num(ds.log_likelihood),
        "dawid_skene_loglik_change": num(ds.log_likelihood_change),
        "dawid_skene_loglik_change_text": _small(ds.log_likelihood_change),
        "dawid_skene_priors": [
            {"label": n, "prior": num(p)} for n, p in zip(shown, ds.priors.tolist(), strict=True)
        ],
        "dawid_skene_reason": ds.reason or "",
        # item labels still changing when EM stopped: over the last `moved_over` iterations
        "dawid_skene_labels_moved": int(ds.labels_moved),
        "dawid_skene_moved_over": int(ds.moved_over),
        "clamped_gold": int(ds.n_clamped),
        "gold_check": gold_check(mv_labels, ds_labels, gold, clamped=clamp is not None),
        "disagreements": [
            {
                "unit": str(tokens[i]),
                "prompt": str(prompts[i]),
                "systems": str(systems[i]),
                "gold": bool(is_gold[i]),
                "gold_answer": display_label(gold[i], texts) if gold[i] is not None else "",
                "labels": int(n_per_item[i]),
                "majority": display_label(mv_labels[i], texts),
                "majority_tied": bool(mv.tied[i]),
                "dawid_skene": display_label(ds_labels[i], texts),
                "dawid_skene_posterior": num(ds_conf[i]),
                # A list, not a dict: a class named like a dict method ("items") stays readable.
                "votes": [
                    {"label": c, "count": int(n)}
                    for c, n in zip(shown, soft.counts[i], strict=True)
                    if n
                ],
            }
            for i in preview.tolist()
        ],
    }
    if config.unanimous_view:
        summary["unanimous"] = unanimous_view(t, soft, mv_labels, classes, texts)
    items = {
        "classes": names,
        "class_values": classes.tolist(),
        "unit": tokens.tolist(),
        "prompt": prompts.tolist(),
        "systems": systems.tolist(),
        "output": outputs.tolist(),
        "gold": is_gold.tolist(),
        "gold_answer": gold.tolist(),  # raw expert answer, None for items without one
        "labels": n_per_item.tolist(),
        "majority": mv_labels.tolist(),  # raw values; the CSV shows their labels
        "majority_tied": mv.tied.tolist(),
        "dawid_skene": ds_labels.tolist(),
        "dawid_skene_posterior": np.round(ds_conf, 6).tolist(),
        "soft": np.round(soft.proportions, 6).tolist(),
    }
    return summary, items


def unanimous_view(t: Labels, soft, mv_labels, classes, texts=()) -> dict:
    """The same summaries on the items every rater agreed on, always beside the full set."""
    n_i = soft.counts.sum(axis=1)
    pairable = n_i >= 2
    unanimous = pairable & (soft.counts.max(axis=1) == n_i)
    keep = np.isin(t.items, soft.items[unanimous])
    name, label, kwargs = chance_corrected(t)
    if t.level == "preference":
        name, kwargs = "specific_agreement", {}
    full = getattr(ag, name)(t.items, t.raters, t.labels, **kwargs)
    subset = (
        getattr(ag, name)(t.items[keep], t.raters[keep], t.labels[keep], **kwargs)
        if keep.any()
        else None
    )
    return {
        "note": "Unanimous items only: restricting to items every rater agreed on removes the "
        "hardest items and inflates every metric; the full-set result is shown beside it.",
        "n_items": int(unanimous.sum()),
        "n_items_full": int(pairable.sum()),
        "statistic": label,
        "value_full": num(full.value),
        "value_unanimous": num(subset.value) if subset is not None else None,
        "reason_unanimous": (subset.reason or "") if subset is not None else "no unanimous items",
        "majority_full": _class_counts(mv_labels[pairable], classes, texts),
        "majority_unanimous": _class_counts(mv_labels[unanimous], classes, texts),
    }
