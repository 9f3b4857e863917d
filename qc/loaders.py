"""Load a study's labels as numpy arrays from one consistent database snapshot.

`values_list` rows are streamed (server-side cursor on PostgreSQL) straight into numpy: no model
objects. The snapshot's fingerprint (label count, newest label id, settings hash) keys the report.
"""

from __future__ import annotations

import hashlib
import json
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta

import numpy as np
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.db.models import Count, Max, Q, Value
from django.db.models.functions import Coalesce, TruncDate
from django.utils import timezone

from annotation.models import (
    Assignment,
    Comparison,
    Label,
    OutputRating,
    SpaAnswer,
    Study,
    Unit,
    UnitOutput,
)
from qc.models import ReportOptions

# Bumped whenever the report's content changes, so old snapshots are recomputed.
REPORT_VERSION = 4
CHUNK = 20_000
PRODUCTION = Assignment.Purpose.PRODUCTION


@dataclass(frozen=True)
class ReportConfig:
    """Everything besides the labels that a report depends on (hashed into the fingerprint)."""

    task_kind: str
    categories: tuple = ()  # declared scale, in order (categorical, ordinal, likert)
    spa_tau: float | None = None
    spa_both_directions: bool = False
    comparisons: tuple = ()  # (id, x id, x name, y id, y name, expected)
    systems: tuple = ()  # (id, name)
    unanimous_view: bool = False
    pool: str = ""  # a cut: only this annotator pool's labels
    guide_version: int | None = None  # a cut: only labels made under this guide version
    n_boot: int = 1000
    n_boot_over_time: int = 100
    seed: int = 0
    version: int = REPORT_VERSION

    def as_dict(self) -> dict:
        return {
            "task_kind": self.task_kind,
            "categories": list(self.categories),
            "spa_tau": self.spa_tau,
            "spa_both_directions": self.spa_both_directions,
            "comparisons": [list(c) for c in self.comparisons],
            "systems": [list(s) for s in self.systems],
            "unanimous_view": self.unanimous_view,
            "pool": self.pool,
            "guide_version": self.guide_version,
            "n_boot": self.n_boot,
            "n_boot_over_time": self.n_boot_over_time,
            "seed": self.seed,
            "version": self.version,
        }

    @property
    def settings_hash(self) -> str:
        raw = json.dumps(self.as_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(raw.encode()).hexdigest()


def declared_categories(study: Study) -> tuple:
    scheme = study.label_scheme or {}
    if study.task_kind in (Study.TaskKind.CATEGORICAL, Study.TaskKind.ORDINAL):
        return tuple(str(item["value"]) for item in scheme.get("labels", []))
    if study.task_kind == Study.TaskKind.LIKERT:
        return tuple(float(p["value"]) for p in scheme.get("points", []))
    if study.task_kind == Study.TaskKind.SPA:
        return tuple(float(p["value"]) for p in scheme.get("likert_points", []))
    return ()


def report_config(study: Study) -> ReportConfig:
    from django.conf import settings

    options = ReportOptions.objects.filter(study=study).first()
    comparisons = tuple(
        (c.id, c.system_x_id, c.system_x.name, c.system_y_id, c.system_y.name, c.expected)
        for c in Comparison.objects.filter(study=study).select_related("system_x", "system_y")
    )
    return ReportConfig(
        task_kind=study.task_kind,
        categories=declared_categories(study),
        spa_tau=study.spa_tau,
        spa_both_directions=study.spa_both_directions,
        comparisons=comparisons,
        systems=tuple(study.systems.order_by("id").values_list("id", "name")),
        unanimous_view=bool(options and options.unanimous_view),
        pool=options.pool if options else "",
        guide_version=options.guide_version if options else None,
        n_boot=int(getattr(settings, "CONCORD_QC_BOOTSTRAP", 1000)),
        n_boot_over_time=int(getattr(settings, "CONCORD_QC_BOOTSTRAP_OVER_TIME", 100)),
    )


def label_counts(study_id: int) -> tuple[int, int | None]:
    """(label count, newest label id) of a study: the label part of the fingerprint."""
    row = Label.objects.filter(study_id=study_id).aggregate(n=Count("id"), newest=Max("id"))
    return int(row["n"]), row["newest"]


def fingerprint(label_count: int, newest_label_id: int | None, settings_hash: str) -> str:
    raw = f"{label_count}:{newest_label_id}:{settings_hash}"
    return hashlib.sha256(raw.encode()).hexdigest()


@dataclass(frozen=True)
class Snapshot:
    """One study's labels and context, as arrays; production labels only, sorted by label id."""

    study_id: int
    label_count: int
    newest_label_id: int | None
    taken_at: object
    label_id: np.ndarray
    unit: np.ndarray
    annotator: np.ndarray
    choice: np.ndarray  # object array of str ("" when unused)
    score: np.ndarray  # float, NaN when unused
    winner: np.ndarray  # system id, 0 for a tie / unused
    unit_ids: np.ndarray  # production units, sorted
    unit_overlap: np.ndarray
    unit_tokens: np.ndarray  # object
    leased_units: np.ndarray
    days: list = field(default_factory=list)  # [(iso day, labels, last label id, annotators)]
    annotators_total: int = 0
    annotators_active_7d: int = 0
    pair_unit: np.ndarray | None = None  # pairwise: unit -> canonical (left, right) systems
    pair_left: np.ndarray | None = None
    pair_right: np.ndarray | None = None
    spa: dict | None = None  # arrays of SPA answers and Likert ratings
    # every unit's systems (a unit of any role, as the engine's design diagnostics count them)
    member_unit: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype="i8"))
    member_system: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype="i8"))
    annotator_names: dict = field(default_factory=dict)  # annotator id -> username


def _stream(queryset, dtype: np.dtype) -> np.ndarray:
    """values_list rows (tuples) into a structured array, chunk by chunk."""
    return np.fromiter(queryset.iterator(chunk_size=CHUNK), dtype=dtype)


@contextmanager
def _consistent_read():
    """A read-only transaction whose queries all see one snapshot (REPEATABLE READ on PostgreSQL;
    a SQLite read transaction already is one)."""
    if connection.in_atomic_block:  # e.g. inside a test's transaction: already one snapshot
        yield
        return
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        yield


def load_snapshot(study: Study) -> Snapshot:
    with _consistent_read():
        return _load(study)


def _cut(study: Study, prefix: str = "") -> Q:
    """The report options' cut (pool, guide version) as a filter on labels (or on `prefix`)."""
    options = ReportOptions.objects.filter(study=study).first()
    q = Q()
    if options and options.pool:
        # Enrolment is unique per (study, user): the join adds no rows.
        q &= Q(
            **{
                f"{prefix}annotator__enrolments__study_id": study.id,
                f"{prefix}annotator__enrolments__pool": options.pool,
            }
        )
    if options and options.guide_version is not None:
        q &= Q(**{f"{prefix}guide_version__number": options.guide_version})
    return q


def _load(study: Study) -> Snapshot:
    label_count, newest = label_counts(study.id)
    cut = _cut(study)
    labels = _stream(
        Label.objects.filter(cut, study_id=study.id, purpose=PRODUCTION)
        .order_by("id")
        .values_list(
            "id",
            "unit_id",
            "annotator_id",
            "choice",
            Coalesce("score", Value(-1.0)),
            Coalesce("winner_id", Value(0)),
        ),
        np.dtype(
            [
                ("id", "i8"),
                ("unit", "i8"),
                ("annotator", "i8"),
                ("choice", "O"),
                ("score", "f8"),
                ("winner", "i8"),
            ]
        ),
    )
    score = labels["score"].copy()
    score[score < 0] = np.nan  # scores live in [0, 100]; -1 stood for "none"
    units = _stream(
        Unit.objects.filter(study_id=study.id, role=Unit.Role.PRODUCTION)
        .order_by("id")
        .values_list("id", "overlap", "token"),
        np.dtype([("id", "i8"), ("overlap", "i8"), ("token", "O")]),
    )
    leased = np.fromiter(
        Assignment.objects.filter(
            study_id=study.id, purpose=PRODUCTION, status=Assignment.Status.LEASED
        )
        .values_list("unit_id", flat=True)
        .distinct()
        .iterator(chunk_size=CHUNK),
        dtype="i8",
    )
    per_day = (
        Label.objects.filter(cut, study_id=study.id, purpose=PRODUCTION)
        .annotate(day=TruncDate("created_at"))
        .values("day")
        .annotate(n=Count("id"), last=Max("id"), annotators=Count("annotator_id", distinct=True))
        .order_by("day")
    )
    days = [(r["day"].isoformat(), r["n"], r["last"], r["annotators"]) for r in per_day]
    since = timezone.now() - timedelta(days=7)
    production = Label.objects.filter(cut, study_id=study.id, purpose=PRODUCTION)
    active = production.filter(created_at__gte=since).values("annotator_id").distinct().count()
    total = production.values("annotator_id").distinct().count()

    unit_systems = _stream(
        UnitOutput.objects.filter(unit__study_id=study.id)
        .order_by("unit_id", "output__system_id")
        .values_list("unit_id", "output__system_id")
        .distinct(),
        np.dtype([("unit", "i8"), ("system", "i8")]),
    )
    user = get_user_model()
    names = dict(
        user.objects.filter(id__in=production.values("annotator_id")).values_list(
            "id", user.USERNAME_FIELD
        )
    )

    extra: dict = {}
    if study.task_kind == Study.TaskKind.PAIRWISE:
        members = _stream(
            UnitOutput.objects.filter(unit__study_id=study.id, unit__role=Unit.Role.PRODUCTION)
            .order_by("unit_id", "position")
            .values_list("unit_id", "position", "output__system_id"),
            np.dtype([("unit", "i8"), ("position", "i8"), ("system", "i8")]),
        )
        first = members[members["position"] == 0]
        second = members[members["position"] == 1]
        common, i0, i1 = np.intersect1d(first["unit"], second["unit"], return_indices=True)
        extra = {
            "pair_unit": common,
            "pair_left": first["system"][i0],
            "pair_right": second["system"][i1],
        }
    if study.task_kind == Study.TaskKind.SPA:
        extra["spa"] = {
            "answers": _stream(
                SpaAnswer.objects.filter(
                    _cut(study, "label__"), label__study_id=study.id, label__purpose=PRODUCTION
                )
                .order_by("id")
                .values_list(
                    "label_id", "label__annotator_id", "comparison_id", "reverse", "probability"
                ),
                np.dtype(
                    [
                        ("label", "i8"),
                        ("annotator", "i8"),
                        ("comparison", "i8"),
                        ("reverse", "?"),
                        ("probability", "f8"),
                    ]
                ),
            ),
            "ratings": _stream(
                OutputRating.objects.filter(
                    _cut(study, "label__"), label__study_id=study.id, label__purpose=PRODUCTION
                )
                .order_by("id")
                .values_list(
                    "label_id", "label__annotator_id", "output__system_id", "output_id", "score"
                ),
                np.dtype(
                    [
                        ("label", "i8"),
                        ("annotator", "i8"),
                        ("system", "i8"),
                        ("output", "i8"),
                        ("score", "f8"),
                    ]
                ),
            ),
        }
    return Snapshot(
        study_id=study.id,
        label_count=label_count,
        newest_label_id=newest,
        taken_at=timezone.now(),
        label_id=labels["id"].copy(),
        unit=labels["unit"].copy(),
        annotator=labels["annotator"].copy(),
        choice=labels["choice"].copy(),
        score=score,
        winner=labels["winner"].copy(),
        unit_ids=units["id"].copy(),
        unit_overlap=units["overlap"].copy(),
        unit_tokens=units["token"].copy(),
        leased_units=leased,
        days=days,
        annotators_total=total,
        annotators_active_7d=active,
        member_unit=unit_systems["unit"].copy(),
        member_system=unit_systems["system"].copy(),
        annotator_names=names,
        **extra,
    )
