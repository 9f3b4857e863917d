"""The design section: per system, its production labels, how many raters gave them, the share of
its top rater, and the engine's design warnings (the week-1 / week-2 confound), from the snapshot.

The rule is `annotation.diagnostics.balance_of`, the one the engine's selector applies.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from annotation.diagnostics import balance_of
from qc.loaders import ReportConfig, Snapshot


def annotator_system_counts(snap: Snapshot) -> dict:
    """{(annotator id, system id): labels}: a label counts once for each system of its unit."""
    order = np.argsort(snap.member_unit, kind="stable")
    m_unit, m_system = snap.member_unit[order], snap.member_system[order]
    start = np.searchsorted(m_unit, snap.unit, side="left")
    stop = np.searchsorted(m_unit, snap.unit, side="right")
    per_label = stop - start
    label_of = np.repeat(np.arange(snap.unit.size), per_label)
    # position of each (label, system) pair within m_unit: start of its label plus a running offset
    offset = np.arange(label_of.size) - np.repeat(np.cumsum(per_label) - per_label, per_label)
    systems = m_system[start[label_of] + offset]
    if systems.size == 0:
        return {}
    # one integer key per (annotator, system): a bincount, not a row-wise unique over 1M pairs
    raters, r_code = np.unique(snap.annotator[label_of], return_inverse=True)
    kinds, s_code = np.unique(systems, return_inverse=True)
    n = np.bincount(r_code.reshape(-1) * kinds.size + s_code.reshape(-1))
    return {
        (int(raters[k // kinds.size]), int(kinds[k % kinds.size])): int(n[k])
        for k in np.flatnonzero(n).tolist()
    }


def design_section(snap: Snapshot, config: ReportConfig) -> dict:
    counts = annotator_system_counts(snap)
    if not counts:
        return {"reason": "no production labels yet"}
    names = dict(config.systems)
    balance = balance_of(counts, names)
    raters = Counter(system_id for _annotator, system_id in counts)
    who = snap.annotator_names
    order = [s for s, _ in config.systems if s in balance.per_system]
    order += sorted(s for s in balance.per_system if s not in names)
    return {
        "systems": [
            {
                "system": names.get(s, str(s)),
                "labels": balance.per_system[s],
                "annotators": raters[s],
                "top_raters": [who.get(a, str(a)) for a in balance.top_raters[s]],
                "top_share": balance.top_share[s],
                "warnings": list(balance.system_warnings[s]),
            }
            for s in order
        ],
        "annotators": len(balance.per_annotator),
        "warnings": list(balance.warnings),
    }
