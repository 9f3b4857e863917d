"""The per-system means section: each system's raw mean rating with its 95% CI and counts, for
Likert, continuous and ordinal studies and for the Likert ratings on SPA pages.

Raw means only; the severity-adjusted means (rater quality) sit beside them on the dashboard.
Same definition as there: the mean over the system's items of each item's mean rating, with a
Student-t interval over items (an item's ratings are not independent of each other).
"""

from __future__ import annotations

import numpy as np

from analysis import summaries
from annotation.models import Study
from qc.loaders import ReportConfig, Snapshot
from qc.reports.common import num
from qc.reports.labels import Labels

DEFINITION = (
    "Mean over the system's items of each item's mean rating; 95% Student-t interval over items."
)


def _system_of_units(snap: Snapshot, units: np.ndarray) -> np.ndarray:
    """The system of each unit's only output (0 when the unit shows several or none)."""
    m_unit, m_system = snap.member_unit, snap.member_system
    if m_unit.size == 0:
        return np.zeros(units.size, dtype=np.int64)
    order = np.argsort(m_unit, kind="stable")
    m_unit, m_system = m_unit[order], m_system[order]
    lo = np.searchsorted(m_unit, units, side="left")
    hi = np.searchsorted(m_unit, units, side="right")
    single = (hi - lo) == 1
    return np.where(single, m_system[np.minimum(lo, m_unit.size - 1)], 0)


def _rows(t: Labels, snap: Snapshot, config: ReportConfig):
    """(items, systems, values, scale description) of the ratings, or a reason string."""
    kind = config.task_kind
    if kind == Study.TaskKind.SPA:
        if snap.spa is None or snap.spa["ratings"].size == 0:
            return "no Likert ratings on the SPA pages"
        r = snap.spa["ratings"]
        scale = "Likert ratings of each output on the SPA pages"
        return r["output"], r["system"], r["score"].astype(float), scale
    if kind in (Study.TaskKind.LIKERT, Study.TaskKind.CONTINUOUS):
        scale = "Likert rating" if kind == Study.TaskKind.LIKERT else "rating (0-100)"
        return t.items, _system_of_units(snap, t.items), t.labels.astype(float), scale
    if kind == Study.TaskKind.ORDINAL:
        cats = list(config.categories)
        if not cats or not set(np.unique(t.labels).tolist()) <= set(cats):
            return "the ordinal scale is not declared for every label"
        position = {c: i + 1 for i, c in enumerate(cats)}
        values = np.array([position[c] for c in t.labels.tolist()], dtype=float)
        scale = f"position on the ordinal scale (1 = {cats[0]}, {len(cats)} = {cats[-1]})"
        return t.items, _system_of_units(snap, t.items), values, scale
    return "means are shown for rated scales (Likert, continuous, ordinal, SPA ratings)"


def systems_section(t: Labels | None, snap: Snapshot, config: ReportConfig) -> dict:
    if t is None and config.task_kind != Study.TaskKind.SPA:
        return {"reason": "no ratings yet"}
    found = _rows(t, snap, config)
    if isinstance(found, str):
        return {"reason": found}
    items, systems, values, scale = found
    keep = systems != 0
    if not keep.any():
        return {"reason": "no ratings of single outputs yet"}
    items, systems, values = items[keep], systems[keep], values[keep]
    # one value per item: the mean of its ratings
    item_vals, inv, per_item = np.unique(items, return_inverse=True, return_counts=True)
    inv = inv.reshape(-1)
    item_mean = np.bincount(inv, weights=values) / per_item
    item_system = np.zeros(item_vals.size, dtype=np.int64)
    item_system[inv] = systems
    means = summaries.group_means(item_system, item_mean)
    ratings = {int(s): int(n) for s, n in zip(*np.unique(systems, return_counts=True), strict=True)}
    names = dict(config.systems)
    order = {s: i for i, (s, _) in enumerate(config.systems)}
    rows = [
        {
            "system": names.get(int(s), str(s)),
            "n_items": int(n),
            "n_ratings": ratings.get(int(s), 0),
            "mean": num(m),
            "ci_low": num(lo),
            "ci_high": num(hi),
            "reason": str(reason),
        }
        for s, n, m, lo, hi, reason in sorted(
            zip(
                means.groups.tolist(),
                means.n.tolist(),
                means.mean.tolist(),
                means.ci_low.tolist(),
                means.ci_high.tolist(),
                means.reasons.tolist(),
                strict=True,
            ),
            key=lambda row: order.get(int(row[0]), len(order)),
        )
    ]
    return {"scale": scale, "definition": DEFINITION, "systems": rows}
