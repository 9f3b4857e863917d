"""One report from one snapshot: runs each section, records a failing section in place of its
numbers, and returns the JSON-safe summary (for the page) and item tables (for downloads)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from annotation.models import Study
from qc.loaders import ReportConfig, Snapshot
from qc.reports.aggregation import aggregation_section
from qc.reports.agreement import agreement_over_time, agreement_section
from qc.reports.common import clean
from qc.reports.design import design_section
from qc.reports.labels import task_labels
from qc.reports.pairwise import pairwise_section
from qc.reports.progress import progress_section
from qc.reports.severity import severity_section
from qc.reports.spa import spa_section
from qc.reports.systems import systems_section

logger = logging.getLogger(__name__)

KINDS_WITH_CATEGORIES = (
    Study.TaskKind.CATEGORICAL,
    Study.TaskKind.ORDINAL,
    Study.TaskKind.LIKERT,
    Study.TaskKind.PAIRWISE,
)

# Kinds with a rating scale: their per-system means are shown.
RATED_KINDS = (
    Study.TaskKind.LIKERT,
    Study.TaskKind.CONTINUOUS,
    Study.TaskKind.ORDINAL,
    Study.TaskKind.SPA,
)

Progress = Callable[[str, int], None]


@dataclass(frozen=True)
class Report:
    summary: dict  # what the dashboard shows (small)
    items: dict  # per-item tables for download (aggregated and soft labels)
    # fits the rater pages reuse in the same run (not stored): "dawid_skene" -> (labels, fit)
    fits: dict = field(default_factory=dict, compare=False, repr=False)


def _section(name: str, fn, *args):
    """Run one section; a failure is recorded in the report instead of losing the whole report."""
    try:
        return fn(*args)
    except Exception as exc:  # one bad section must not hide the others
        logger.exception("report section %s failed", name)
        return {"error": f"{type(exc).__name__}: {exc}"}


def build_report(snap: Snapshot, config: ReportConfig, progress: Progress | None = None) -> Report:
    step = progress or (lambda stage, pct: None)
    summary: dict = {
        "version": config.version,
        "task_kind": config.task_kind,
        "settings": config.as_dict(),
        "snapshot": {
            "label_count": snap.label_count,
            "newest_label_id": snap.newest_label_id,
            "taken_at": snap.taken_at.isoformat(),
        },
    }
    items: dict = {}
    fits: dict = {}
    step("progress", 5)
    summary["progress"] = _section("progress", progress_section, snap)
    summary["design"] = _section("design", design_section, snap, config)
    summary["severity"] = _section("severity", severity_section, snap, config)
    t = task_labels(snap, config)
    if config.task_kind in RATED_KINDS:
        summary["systems"] = _section("systems", systems_section, t, snap, config)
    if t is None or t.labels.size == 0:
        summary["agreement"] = {"reason": "no labels to compare yet"}
    else:
        step("agreement", 15)
        summary["agreement"] = _section("agreement", agreement_section, t, config)
        step("agreement over time", 40)
        summary["agreement_over_time"] = _section("over time", agreement_over_time, t, snap, config)
        if config.task_kind in KINDS_WITH_CATEGORIES:
            step("aggregation", 60)
            both = _section("aggregation", aggregation_section, t, snap, config, fits)
            if isinstance(both, tuple):
                summary["aggregation"], items = both
            else:
                summary["aggregation"] = both
    if config.task_kind == Study.TaskKind.SPA:
        step("spa", 75)
        summary["spa"] = _section("spa", spa_section, snap, config)
    if config.task_kind == Study.TaskKind.PAIRWISE:
        step("bradley-terry", 80)
        summary["pairwise"] = _section("pairwise", pairwise_section, snap, config)
    step("done", 90)
    return Report(summary=clean(summary), items=clean(items), fits=fits)
