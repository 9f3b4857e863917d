"""The progress section: production units complete, in progress and waiting; every label of the
study by purpose (what the report counts and what it leaves out); labels and annotators per day.

Counts only, from the snapshot's arrays; no statistics.
"""

from __future__ import annotations

import numpy as np

from qc.loaders import Snapshot

# The order the page explains label counts in; counted purposes first.
PURPOSE_ORDER = ("production", "gold", "repeat", "attention", "qualification", "calibration")
PURPOSE_TEXT = {
    "production": "production",
    "gold": "hidden gold",
    "repeat": "blind repeats",
    "attention": "attention checks",
    "qualification": "qualification",
    "calibration": "calibration",
}


def label_accounting(snap: Snapshot) -> dict:
    """Every label of the study, by purpose, and how they add up to the labels the report uses."""
    purposes = dict(snap.label_purposes)
    gold_counted = int(snap.label_gold.sum())
    production_counted = int(snap.label_id.size - gold_counted)
    rows = [
        {
            "purpose": p,
            "text": PURPOSE_TEXT.get(p, p),
            "count": int(purposes.get(p, 0)),
            "counted": p in ("production", "gold"),
        }
        for p in PURPOSE_ORDER
    ]
    rows += [
        {"purpose": p, "text": p, "count": int(n), "counted": False}
        for p, n in sorted(purposes.items())
        if p not in PURPOSE_ORDER
    ]
    return {
        "total": int(snap.label_count),
        "counted": int(snap.label_id.size),
        "counted_production": production_counted,
        "counted_gold": gold_counted,
        # later labels by the same annotator on the same unit: only the first one counts
        "later_duplicates": int(snap.later_duplicates),
        "by_purpose": rows,
        "not_counted": sum(r["count"] for r in rows if not r["counted"]),
    }


def progress_section(snap: Snapshot) -> dict:
    production = ~snap.unit_gold if snap.unit_gold.size else np.ones(snap.unit_ids.size, bool)
    unit_ids = snap.unit_ids[production]
    overlap = snap.unit_overlap[production]
    n_units = unit_ids.size
    on_production = ~snap.label_gold if snap.label_gold.size else np.ones(snap.unit.size, bool)
    units = snap.unit[on_production]
    pos = np.minimum(np.searchsorted(unit_ids, units), max(n_units - 1, 0))
    on_unit = (unit_ids[pos] == units) if n_units else np.zeros(0, dtype=bool)
    per_unit = np.bincount(pos[on_unit], minlength=n_units)
    complete = per_unit >= overlap
    leased = np.isin(unit_ids, snap.leased_units)
    in_progress = ~complete & ((per_unit > 0) | leased)
    return {
        "units": {
            "total": int(n_units),
            "complete": int(complete.sum()),
            "in_progress": int(in_progress.sum()),
            "waiting": int(n_units - complete.sum() - in_progress.sum()),
            "gold": int(snap.unit_ids.size - n_units),
            "labels_needed": int(np.maximum(overlap - per_unit, 0).sum()),
            "labels_planned": int(overlap.sum()),
        },
        "labels": int(snap.label_id.size),
        "labels_all_purposes": int(snap.label_count),
        "accounting": label_accounting(snap),
        "annotators_total": snap.annotators_total,
        "annotators_active_7d": snap.annotators_active_7d,
        "labels_per_day": [
            {"day": day, "labels": n, "annotators": a} for day, n, _last, a in snap.days
        ],
    }
