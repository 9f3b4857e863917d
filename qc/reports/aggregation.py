"""The aggregation section: majority vote, Dawid-Skene and soft labels per item, the items where
they disagree, and the optional (always labelled) unanimous-items view."""

from __future__ import annotations

import numpy as np

from analysis import agreement as ag
from analysis import labelmodels as lm
from qc.loaders import ReportConfig, Snapshot
from qc.reports.agreement import chance_corrected
from qc.reports.common import category_label, num
from qc.reports.labels import Labels

PREVIEW_ROWS = 50


def _tokens(snap: Snapshot, units: np.ndarray) -> np.ndarray:
    if snap.unit_ids.size == 0:
        return np.full(units.size, "", dtype=object)
    pos = np.minimum(np.searchsorted(snap.unit_ids, units), snap.unit_ids.size - 1)
    found = snap.unit_ids[pos] == units
    return np.where(found, snap.unit_tokens[pos], "")


def _class_counts(labels: np.ndarray, classes: np.ndarray) -> list[dict]:
    idx = np.searchsorted(classes, labels)
    counts = np.bincount(idx, minlength=classes.size)
    total = max(int(counts.sum()), 1)
    return [
        {"label": category_label(c), "value": c, "count": int(n), "share": n / total}
        for c, n in zip(classes.tolist(), counts.tolist(), strict=True)
    ]


def aggregation_section(t: Labels, snap: Snapshot, config: ReportConfig) -> tuple[dict, dict]:
    """(summary for the page, per-item columns for downloads). Classes are shown by their label
    ("3", not "3.0"); `class_values` and the per-item columns keep the raw values."""
    it, ra, la = t.items, t.raters, t.labels
    mv = lm.majority_vote(it, ra, la, tie_break="random", seed=config.seed)
    ds = lm.dawid_skene(it, ra, la)
    soft = lm.soft_labels(it, ra, la)
    classes = soft.classes
    if not (np.array_equal(mv.items, soft.items) and np.array_equal(ds.items, soft.items)):
        raise ValueError("label models returned different item sets")
    names = [category_label(c) for c in classes.tolist()]
    ds_labels = ds.item_labels
    ds_conf = ds.posteriors.max(axis=1)
    disagree = mv.item_labels != ds_labels
    tokens = _tokens(snap, soft.items)
    n_per_item = soft.counts.sum(axis=1)
    preview = np.flatnonzero(disagree)[:PREVIEW_ROWS]
    majority = _class_counts(mv.item_labels, classes)
    dawid_skene = _class_counts(ds_labels, classes)
    summary = {
        "classes": names,
        "class_values": classes.tolist(),
        "n_items": int(soft.items.size),
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
        "dawid_skene_reason": ds.reason or "",
        "disagreements": [
            {
                "unit": str(tokens[i]),
                "labels": int(n_per_item[i]),
                "majority": category_label(mv.item_labels[i]),
                "majority_tied": bool(mv.tied[i]),
                "dawid_skene": category_label(ds_labels[i]),
                "dawid_skene_posterior": num(ds_conf[i]),
                # A list, not a dict: a class named like a dict method ("items") stays readable.
                "votes": [
                    {"label": c, "count": int(n)}
                    for c, n in zip(names, soft.counts[i], strict=True)
                    if n
                ],
            }
            for i in preview.tolist()
        ],
    }
    if config.unanimous_view:
        summary["unanimous"] = unanimous_view(t, soft, mv, classes)
    items = {
        "classes": names,
        "class_values": classes.tolist(),
        "unit": tokens.tolist(),
        "labels": n_per_item.tolist(),
        "majority": mv.item_labels.tolist(),  # raw values; the CSV shows their labels
        "majority_tied": mv.tied.tolist(),
        "dawid_skene": ds_labels.tolist(),
        "dawid_skene_posterior": np.round(ds_conf, 6).tolist(),
        "soft": np.round(soft.proportions, 6).tolist(),
    }
    return summary, items


def unanimous_view(t: Labels, soft, mv, classes) -> dict:
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
        "majority_full": _class_counts(mv.item_labels[pairable], classes),
        "majority_unanimous": _class_counts(mv.item_labels[unanimous], classes),
    }
