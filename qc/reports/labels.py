"""The long-format label columns a task kind's agreement and aggregation run on.

One `Labels` per report: items, raters and labels aligned, plus the scale's order and level.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from annotation.models import Study
from qc.loaders import ReportConfig, Snapshot

TIE = "tie"


@dataclass(frozen=True)
class Labels:
    """The long-format columns a task kind's agreement and aggregation run on."""

    items: np.ndarray
    raters: np.ndarray
    labels: np.ndarray
    label_ids: np.ndarray  # for cutting the data by time
    categories: tuple | None  # scale order when declared and covering every label
    level: str  # nominal, ordinal, interval, preference
    what: str  # what the items are, for the page


def _declared(labels: np.ndarray, categories: tuple) -> tuple | None:
    if not categories or labels.size == 0:
        return tuple(categories) or None
    seen = np.unique(labels)
    return tuple(categories) if set(seen.tolist()) <= set(categories) else None


def task_labels(snap: Snapshot, config: ReportConfig) -> Labels | None:
    kind = config.task_kind
    if kind in (Study.TaskKind.CATEGORICAL, Study.TaskKind.ORDINAL):
        keep = snap.choice != ""
        labels = snap.choice[keep].astype(str)
        level = "nominal" if kind == Study.TaskKind.CATEGORICAL else "ordinal"
        return Labels(
            snap.unit[keep],
            snap.annotator[keep],
            labels,
            snap.label_id[keep],
            _declared(labels, config.categories),
            level,
            "units",
        )
    if kind in (Study.TaskKind.LIKERT, Study.TaskKind.CONTINUOUS):
        keep = np.isfinite(snap.score)
        labels = snap.score[keep]
        if kind == Study.TaskKind.LIKERT:
            return Labels(
                snap.unit[keep],
                snap.annotator[keep],
                labels,
                snap.label_id[keep],
                _declared(labels, config.categories),
                "ordinal",
                "units",
            )
        return Labels(
            snap.unit[keep],
            snap.annotator[keep],
            labels,
            snap.label_id[keep],
            None,
            "interval",
            "units",
        )
    if kind == Study.TaskKind.PAIRWISE:
        names = dict(config.systems)
        winners, codes = np.unique(snap.winner, return_inverse=True)
        lookup = np.array([names.get(int(w), str(w)) for w in winners.tolist()], dtype=object)
        labels = lookup[codes.reshape(-1)]
        labels[snap.winner == 0] = TIE
        cats = tuple(name for _, name in config.systems) + (TIE,)
        return Labels(
            snap.unit,
            snap.annotator,
            labels.astype(str),
            snap.label_id,
            _declared(labels.astype(str), cats),
            "preference",
            "units",
        )
    if kind == Study.TaskKind.SPA and snap.spa is not None and snap.spa["ratings"].size:
        r = snap.spa["ratings"]
        return Labels(
            r["output"].copy(),
            r["annotator"].copy(),
            r["score"].copy(),
            r["label"].copy(),
            _declared(r["score"], config.categories),
            "ordinal",
            "outputs rated on the SPA pages (Likert)",
        )
    return None
