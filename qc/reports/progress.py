"""The progress section: units complete, in progress and waiting; labels and annotators per day.

Counts only, from the snapshot's arrays; no statistics.
"""

from __future__ import annotations

import numpy as np

from qc.loaders import Snapshot


def progress_section(snap: Snapshot) -> dict:
    n_units = snap.unit_ids.size
    pos = np.searchsorted(snap.unit_ids, snap.unit)
    pos = np.minimum(pos, max(n_units - 1, 0))
    on_unit = (snap.unit_ids[pos] == snap.unit) if n_units else np.zeros(0, dtype=bool)
    per_unit = np.bincount(pos[on_unit], minlength=n_units)
    complete = per_unit >= snap.unit_overlap
    leased = np.isin(snap.unit_ids, snap.leased_units)
    in_progress = ~complete & ((per_unit > 0) | leased)
    return {
        "units": {
            "total": int(n_units),
            "complete": int(complete.sum()),
            "in_progress": int(in_progress.sum()),
            "waiting": int(n_units - complete.sum() - in_progress.sum()),
        },
        "labels": int(snap.label_id.size),
        "labels_all_purposes": int(snap.label_count),
        "annotators_total": snap.annotators_total,
        "annotators_active_7d": snap.annotators_active_7d,
        "labels_per_day": [
            {"day": day, "labels": n, "annotators": a} for day, n, _last, a in snap.days
        ],
    }
