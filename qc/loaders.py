"""Load a study's labels as numpy arrays from one consistent database snapshot.

`values_list` rows are streamed (server-side cursor on PostgreSQL) straight into numpy: no model
objects. The snapshot's fingerprint (label count, newest label id, settings hash) keys the report.

Which labels count (DESIGN.md, invariants): every real judgment of a real item. The first label
of each annotator on each production or hidden-gold unit enters agreement, the label models and
the votes; blind repeats, attention checks, qualification and calibration labels never do (they
feed rater quality). `label_purposes` keeps the count of every label by purpose, so the page can
say what the report leaves out.
"""

from __future__ import annotations

import hashlib
import json
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from datetime import time as dtime

import numpy as np
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.db.models import BooleanField, Count, ExpressionWrapper, Max, Q, Value
from django.db.models.expressions import RawSQL
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotation.models import (
    Assignment,
    Comparison,
    GoldAnswer,
    Label,
    OutputRating,
    SpaAnswer,
    Study,
    Unit,
    UnitOutput,
)
from qc.models import ReportOptions

# Bumped whenever the report's content changes, so old snapshots are recomputed.
REPORT_VERSION = 6
CHUNK = 20_000
PRODUCTION = Assignment.Purpose.PRODUCTION
# The purposes whose (first) labels are judgments of real items; the units they are on.
COUNTED_PURPOSES = (Assignment.Purpose.PRODUCTION, Assignment.Purpose.GOLD)
COUNTED_ROLES = (Unit.Role.PRODUCTION, Unit.Role.GOLD)


@dataclass(frozen=True)
class ReportConfig:
    """Everything besides the labels that a report depends on (hashed into the fingerprint)."""

    task_kind: str
    categories: tuple = ()  # declared scale, in order (categorical, ordinal, likert)
    category_texts: tuple = ()  # (value, display text) of the declared scale
    spa_tau: float | None = None
    spa_both_directions: bool = False
    comparisons: tuple = ()  # (id, x id, x name, y id, y name, expected)
    systems: tuple = ()  # (id, name)
    unanimous_view: bool = False
    clamp_gold: bool = False  # fix gold items to their expert answers in the label models
    pool: str = ""  # a cut: only this annotator pool's labels
    guide_version: int | None = None  # a cut: only labels made under this guide version
    # the lead's choice: an ordinal study's levels scored as numbers in the severity model
    ordinal_as_interval: bool = False
    n_boot: int = 1000
    n_boot_over_time: int = 100
    seed: int = 0
    version: int = REPORT_VERSION

    def as_dict(self) -> dict:
        return {
            "task_kind": self.task_kind,
            "categories": list(self.categories),
            "category_texts": [list(c) for c in self.category_texts],
            "spa_tau": self.spa_tau,
            "spa_both_directions": self.spa_both_directions,
            "comparisons": [list(c) for c in self.comparisons],
            "systems": [list(s) for s in self.systems],
            "unanimous_view": self.unanimous_view,
            "clamp_gold": self.clamp_gold,
            "pool": self.pool,
            "guide_version": self.guide_version,
            "ordinal_as_interval": self.ordinal_as_interval,
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


def declared_texts(study: Study) -> tuple:
    """(value, display text) per declared category: "Medium" for "mid", "3 (Fair)" for 3."""
    scheme = study.label_scheme or {}
    if study.task_kind in (Study.TaskKind.CATEGORICAL, Study.TaskKind.ORDINAL):
        return tuple(
            (str(item["value"]), str(item.get("text") or item["value"]))
            for item in scheme.get("labels", [])
        )
    points = scheme.get("points" if study.task_kind == Study.TaskKind.LIKERT else "likert_points")
    if study.task_kind in (Study.TaskKind.LIKERT, Study.TaskKind.SPA):
        out = []
        for p in points or []:
            value = float(p["value"])
            shown = str(int(value)) if value.is_integer() else repr(value)
            text = str(p.get("text") or "")
            out.append((value, f"{shown} ({text})" if text and text != shown else shown))
        return tuple(out)
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
        category_texts=declared_texts(study),
        spa_tau=study.spa_tau,
        spa_both_directions=study.spa_both_directions,
        comparisons=comparisons,
        systems=tuple(study.systems.order_by("id").values_list("id", "name")),
        unanimous_view=bool(options and options.unanimous_view),
        clamp_gold=bool(options and options.clamp_gold),
        pool=options.pool if options else "",
        guide_version=options.guide_version if options else None,
        ordinal_as_interval=bool(options and options.ordinal_as_interval),
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
    """One study's counted labels and their context, as arrays sorted by label id.

    Counted labels: the first label of each annotator on each production or gold unit (see the
    module docstring). Units are the production and gold units, sorted by id.
    """

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
    unit_ids: np.ndarray  # production and gold units, sorted
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
    # aligned with unit_ids: hidden gold or production, and the lead's external ids
    unit_gold: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    unit_prompt: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=object))
    unit_systems: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=object))
    unit_output: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=object))
    # aligned with label_id: the purpose the label was given under (production or gold)
    label_gold: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    # gold units with an expert answer, and that answer in the report's label space
    gold_units: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype="i8"))
    gold_values: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=object))
    # every label of the study by purpose, and how many later labels on the same unit by the
    # same annotator were left out (the first one counts)
    label_purposes: dict = field(default_factory=dict)
    later_duplicates: int = 0
    system_names: dict = field(default_factory=dict)  # system id -> name

    @property
    def production_units(self) -> np.ndarray:
        return self.unit_ids[~self.unit_gold] if self.unit_gold.size else self.unit_ids


def _stream(queryset, dtype: np.dtype) -> np.ndarray:
    """values_list rows (tuples) into a structured array, chunk by chunk."""
    return np.fromiter(queryset.iterator(chunk_size=CHUNK), dtype=dtype)


def stream_raw(queryset, dtype: np.dtype) -> np.ndarray:
    """Like `_stream`, but rows come straight from the database cursor (server-side on
    PostgreSQL): no Django converters per row, so only for plain numbers, booleans and strings
    (a converter per row cost more than the query on 1M labels)."""
    sql, params = queryset.query.sql_with_params()
    if connection.vendor == "postgresql" and connection.in_atomic_block:
        # Every row is read: plan for the whole result, not the first 10% (the default for a
        # cursor chose, on 1M labels, an index walk over every study's labels in id order).
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL cursor_tuple_fraction = 1.0")
    with connection.chunked_cursor() as cursor:
        cursor.execute(sql, params)

        def rows():
            while batch := cursor.fetchmany(CHUNK):
                yield from batch

        return np.fromiter(rows(), dtype=dtype)


def epoch_seconds():
    """A label's created_at as seconds since the epoch, computed by the database (no datetime
    objects per row)."""
    if connection.vendor == "postgresql":
        return RawSQL("EXTRACT(EPOCH FROM annotation_label.created_at)::float8", [])
    return RawSQL("CAST(strftime('%%s', annotation_label.created_at) AS REAL)", [])


def local_days(seconds: np.ndarray) -> tuple[np.ndarray, list]:
    """(day index of each time, the days) in the current time zone, as TruncDate reads them:
    each time is placed between local midnights (computed once per day, DST-aware)."""
    if seconds.size == 0:
        return np.zeros(0, dtype=np.int64), []
    tz = timezone.get_current_timezone()
    first = datetime.fromtimestamp(float(seconds.min()), tz).date()
    last = datetime.fromtimestamp(float(seconds.max()), tz).date()
    days = [first + timedelta(days=d) for d in range((last - first).days + 1)]
    starts = np.array([datetime.combine(d, dtime(), tzinfo=tz).timestamp() for d in days])
    index = np.searchsorted(starts, seconds, side="right") - 1
    return np.clip(index, 0, len(days) - 1), days


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


def _cut(study: Study) -> Q:
    """The report options' cut (pool, guide version) as a filter on labels."""
    options = ReportOptions.objects.filter(study=study).first()
    q = Q()
    if options and options.pool:
        # Enrolment is unique per (study, user): the join adds no rows.
        q &= Q(annotator__enrolments__study_id=study.id, annotator__enrolments__pool=options.pool)
    if options and options.guide_version is not None:
        q &= Q(guide_version__number=options.guide_version)
    return q


def first_labels(label_id: np.ndarray, annotator: np.ndarray, unit: np.ndarray) -> np.ndarray:
    """Mask of the first label (lowest id) of each annotator on each unit; rows sorted by id."""
    if label_id.size == 0:
        return np.zeros(0, dtype=bool)
    a, u = annotator.astype(np.int64), unit.astype(np.int64)
    if a.max() < 2**31 and u.max() < 2**31 and a.min() >= 0 and u.min() >= 0:
        _, first = np.unique((a << 32) | u, return_index=True)  # stable: first occurrence
    else:
        _, first = np.unique(np.stack([a, u], axis=1), axis=0, return_index=True)
    keep = np.zeros(label_id.size, dtype=bool)
    keep[first] = True
    return keep


def gold_value(task_kind: str, value, system_names: dict):
    """An expert answer (GoldAnswer.value, in the study's label format) in the report's label
    space, or None when it cannot be read: a choice (categorical, ordinal), a score (Likert,
    continuous), a winning system's name or "tie" (pairwise); SPA batches have no gold."""
    raw = value
    if isinstance(value, dict):
        raw = value.get({"pairwise": "winner"}.get(task_kind, "choice"))
        if raw is None:
            raw = value.get("score", value.get("choice", value.get("value")))
    if raw is None or raw == "":
        return None
    if task_kind in (Study.TaskKind.CATEGORICAL, Study.TaskKind.ORDINAL):
        return str(raw)
    if task_kind in (Study.TaskKind.LIKERT, Study.TaskKind.CONTINUOUS):
        try:
            return float(raw)
        except (TypeError, ValueError):
            return None
    if task_kind == Study.TaskKind.PAIRWISE:
        if raw == "tie":
            return "tie"
        if isinstance(raw, int) and raw in system_names:
            return system_names[raw]
        return str(raw) if str(raw) in system_names.values() else None
    return None


def _unit_external_ids(study: Study, unit_ids: np.ndarray, names: dict) -> tuple:
    """Per unit (aligned with unit_ids): the prompt's external id, the systems shown (canonical
    order) and the output as "prompt:system" (outputs have no external id of their own)."""
    rows = stream_raw(
        UnitOutput.objects.filter(unit__study_id=study.id, unit__role__in=COUNTED_ROLES)
        .order_by("unit_id", "position")
        .values_list("unit_id", "output__system_id", "output__prompt__external_id"),
        np.dtype([("unit", "i8"), ("system", "i8"), ("prompt", "O")]),
    )
    n = unit_ids.size
    prompt = np.full(n, "", dtype=object)
    systems = np.full(n, "", dtype=object)
    output = np.full(n, "", dtype=object)
    if rows.size == 0 or n == 0:
        return prompt, systems, output
    units, first, count = np.unique(rows["unit"], return_index=True, return_counts=True)
    at = np.searchsorted(unit_ids, units)
    ok = (at < n) & (unit_ids[np.minimum(at, n - 1)] == units)
    units, first, count, at = units[ok], first[ok], count[ok], at[ok]
    lookup = np.vectorize(lambda s: names.get(int(s), str(s)), otypes=[object])
    sys_name = lookup(rows["system"]) if rows.size else rows["system"].astype(object)
    one, two = count == 1, count == 2
    prompt[at[one]] = rows["prompt"][first[one]]
    systems[at[one]] = sys_name[first[one]]
    output[at[one]] = rows["prompt"][first[one]] + ":" + sys_name[first[one]]
    prompt[at[two]] = rows["prompt"][first[two]]
    systems[at[two]] = sys_name[first[two]] + " | " + sys_name[first[two] + 1]
    for i in np.flatnonzero(count > 2).tolist():  # SPA batches: a handful per study
        lo, hi = first[i], first[i] + count[i]
        prompts = list(dict.fromkeys(rows["prompt"][lo:hi].tolist()))
        prompt[at[i]] = " ".join(prompts)
        systems[at[i]] = " | ".join(dict.fromkeys(sys_name[lo:hi].tolist()))
    return prompt, systems, output


def _days(seconds: np.ndarray, label_id: np.ndarray, annotator: np.ndarray) -> list:
    """[(iso day, labels, last label id, annotators)] of the counted labels, by local day.

    Integer keys throughout (day index, annotator code): no object or row-wise unique."""
    if seconds.size == 0:
        return []
    day_index, calendar = local_days(seconds)
    present, idx = np.unique(day_index, return_inverse=True)
    idx = idx.reshape(-1)
    n = np.bincount(idx, minlength=present.size)
    last = np.zeros(present.size, dtype=np.int64)
    np.maximum.at(last, idx, label_id)
    people_ids, person = np.unique(annotator, return_inverse=True)
    pairs = np.unique(idx.astype(np.int64) * people_ids.size + person.reshape(-1))
    people = np.bincount(pairs // people_ids.size, minlength=present.size)
    return [
        (calendar[d].isoformat(), int(c), int(lst), int(a))
        for d, c, lst, a in zip(
            present.tolist(), n.tolist(), last.tolist(), people.tolist(), strict=True
        )
    ]


def _load(study: Study) -> Snapshot:
    label_count, newest = label_counts(study.id)
    counted = Label.objects.filter(_cut(study), study_id=study.id, purpose__in=COUNTED_PURPOSES)
    labels = stream_raw(
        counted.order_by("id").values_list(
            "id",
            "unit_id",
            "annotator_id",
            "choice",
            Coalesce("score", Value(-1.0)),
            Coalesce("winner_id", Value(0)),
            ExpressionWrapper(Q(purpose=Assignment.Purpose.GOLD), output_field=BooleanField()),
            epoch_seconds(),
        ),
        np.dtype(
            [
                ("id", "i8"),
                ("unit", "i8"),
                ("annotator", "i8"),
                ("choice", "O"),
                ("score", "f8"),
                ("winner", "i8"),
                ("gold", "?"),
                ("created", "f8"),
            ]
        ),
    )
    keep = first_labels(labels["id"], labels["annotator"], labels["unit"])
    later_duplicates = int(labels.size - keep.sum())
    labels = labels[keep]
    score = labels["score"].copy()
    score[score < 0] = np.nan  # scores live in [0, 100]; -1 stood for "none"
    units = stream_raw(
        Unit.objects.filter(study_id=study.id, role__in=COUNTED_ROLES)
        .order_by("id")
        .values_list("id", "overlap", "token", "role"),
        np.dtype([("id", "i8"), ("overlap", "i8"), ("token", "O"), ("role", "O")]),
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
    since = timezone.now() - timedelta(days=7)
    active = counted.filter(created_at__gte=since).values("annotator_id").distinct().count()
    purposes = {
        row["purpose"]: row["n"]
        for row in Label.objects.filter(study_id=study.id)
        .values("purpose")
        .annotate(n=Count("id"))
        .order_by("purpose")
    }

    unit_systems = stream_raw(
        UnitOutput.objects.filter(unit__study_id=study.id)
        .order_by("unit_id", "output__system_id")
        .values_list("unit_id", "output__system_id")
        .distinct(),
        np.dtype([("unit", "i8"), ("system", "i8")]),
    )
    user = get_user_model()
    annotator_ids = np.unique(labels["annotator"]).tolist()
    names = dict(user.objects.filter(id__in=annotator_ids).values_list("id", user.USERNAME_FIELD))
    system_names = dict(study.systems.values_list("id", "name"))
    prompt, systems, output = _unit_external_ids(study, units["id"], system_names)
    gold_rows = [
        (unit_id, gold_value(study.task_kind, value, system_names))
        for unit_id, value in GoldAnswer.objects.filter(
            unit__study_id=study.id, unit__role=Unit.Role.GOLD
        )
        .order_by("unit_id")
        .values_list("unit_id", "value")
    ]
    gold_rows = [(u, v) for u, v in gold_rows if v is not None]

    extra: dict = {}
    if study.task_kind == Study.TaskKind.PAIRWISE:
        members = _stream(
            UnitOutput.objects.filter(unit__study_id=study.id, unit__role__in=COUNTED_ROLES)
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
        answers = _stream(
            SpaAnswer.objects.filter(label__study_id=study.id, label__purpose__in=COUNTED_PURPOSES)
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
        )
        ratings = _stream(
            OutputRating.objects.filter(
                label__study_id=study.id, label__purpose__in=COUNTED_PURPOSES
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
        )
        # only the counted (first) labels' answers
        extra["spa"] = {
            "answers": answers[np.isin(answers["label"], labels["id"])],
            "ratings": ratings[np.isin(ratings["label"], labels["id"])],
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
        days=_days(labels["created"], labels["id"], labels["annotator"]),
        annotators_total=len(annotator_ids),
        annotators_active_7d=active,
        member_unit=unit_systems["unit"].copy(),
        member_system=unit_systems["system"].copy(),
        annotator_names=names,
        unit_gold=units["role"] == Unit.Role.GOLD,
        unit_prompt=prompt,
        unit_systems=systems,
        unit_output=output,
        label_gold=labels["gold"].copy(),
        gold_units=np.array([u for u, _ in gold_rows], dtype="i8"),
        gold_values=np.array([v for _, v in gold_rows] + [None], dtype=object)[:-1],
        label_purposes=purposes,
        later_duplicates=later_duplicates,
        system_names=system_names,
        **extra,
    )
