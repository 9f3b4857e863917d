"""Load what rater monitoring needs, as arrays: every label of a study with its purpose, timing,
position and guide version; blind repeats joined to their originals; gold answers; slices; pools.

One consistent read (the report's snapshot rules); no model objects on the label path.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from django.contrib.auth import get_user_model
from django.db.models import Value
from django.db.models.functions import Coalesce

from annotation.models import (
    Enrolment,
    GoldAnswer,
    GuideVersion,
    Label,
    SpaAnswer,
    Study,
    Unit,
)
from qc.loaders import _consistent_read, _stream, epoch_seconds, stream_raw


@dataclass(frozen=True)
class RaterData:
    """All labels of one study (every purpose), sorted by id, with their context."""

    study_id: int
    task_kind: str
    label_id: np.ndarray
    assignment_id: np.ndarray
    repeat_of: np.ndarray  # assignment id of the original (repeats), else 0
    unit: np.ndarray
    annotator: np.ndarray
    purpose: np.ndarray  # object
    choice: np.ndarray  # object ("" when unused; pairwise: the side clicked)
    score: np.ndarray  # float, NaN when unused
    winner: np.ndarray  # system id, 0 for a tie / unused
    guide_version: np.ndarray  # GuideVersion id, 0 when none
    created: np.ndarray  # seconds since the epoch
    duration_ms: np.ndarray  # float, NaN when not measured
    active_ms: np.ndarray
    position: np.ndarray  # the assignment's position in the annotator's session
    unit_ids: np.ndarray  # every unit of the study, sorted
    unit_tokens: np.ndarray
    unit_role: np.ndarray
    unit_language: np.ndarray
    unit_topic: np.ndarray
    unit_source: np.ndarray
    gold: dict = field(default_factory=dict)  # unit id -> expert answer (GoldAnswer.value)
    guides: list = field(default_factory=list)  # [(id, number, published_at epoch)] by number
    pools: dict = field(default_factory=dict)  # annotator id -> pool
    names: dict = field(default_factory=dict)  # annotator id -> username
    systems: dict = field(default_factory=dict)  # system id -> name
    spa: np.ndarray | None = None  # SPA answers: label, annotator, comparison, reverse, p


def load_rater_data(study: Study) -> RaterData:
    with _consistent_read():
        return _load(study)


def _load(study: Study) -> RaterData:
    labels = stream_raw(
        Label.objects.filter(study_id=study.id)
        .order_by("id")
        .values_list(
            "id",
            "assignment_id",
            Coalesce("assignment__repeat_of_id", Value(0)),
            "unit_id",
            "annotator_id",
            "purpose",
            "choice",
            Coalesce("score", Value(-1.0)),
            Coalesce("winner_id", Value(0)),
            Coalesce("guide_version_id", Value(0)),
            epoch_seconds(),
            Coalesce("duration_ms", Value(-1)),
            Coalesce("active_ms", Value(-1)),
            "assignment__position",
        ),
        np.dtype(
            [
                ("id", "i8"),
                ("assignment", "i8"),
                ("repeat_of", "i8"),
                ("unit", "i8"),
                ("annotator", "i8"),
                ("purpose", "O"),
                ("choice", "O"),
                ("score", "f8"),
                ("winner", "i8"),
                ("guide", "i8"),
                ("created", "f8"),
                ("duration", "f8"),
                ("active", "f8"),
                ("position", "i8"),
            ]
        ),
    )
    score = labels["score"].copy()
    score[score < 0] = np.nan
    duration = labels["duration"].copy()
    duration[duration < 0] = np.nan
    active = labels["active"].copy()
    active[active < 0] = np.nan
    created = labels["created"].copy()

    units = _stream(
        Unit.objects.filter(study_id=study.id)
        .order_by("id")
        .values_list(
            "id",
            "token",
            "role",
            Coalesce("prompt__language", Value("")),
            Coalesce("prompt__topic", Value("")),
            Coalesce("prompt__source", Value("")),
        ),
        np.dtype(
            [
                ("id", "i8"),
                ("token", "O"),
                ("role", "O"),
                ("language", "O"),
                ("topic", "O"),
                ("source", "O"),
            ]
        ),
    )
    gold = dict(GoldAnswer.objects.filter(unit__study_id=study.id).values_list("unit_id", "value"))
    guides = [
        (g.id, g.number, g.published_at.timestamp())
        for g in GuideVersion.objects.filter(study_id=study.id).order_by("number")
    ]
    pools = dict(Enrolment.objects.filter(study_id=study.id).values_list("user_id", "pool"))
    user = get_user_model()
    ids = set(labels["annotator"].tolist())
    names = dict(user.objects.filter(id__in=ids).values_list("id", user.USERNAME_FIELD))
    spa = None
    if study.task_kind == Study.TaskKind.SPA:
        spa = _stream(
            SpaAnswer.objects.filter(label__study_id=study.id, label__purpose="production")
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
    return RaterData(
        study_id=study.id,
        task_kind=study.task_kind,
        label_id=labels["id"].copy(),
        assignment_id=labels["assignment"].copy(),
        repeat_of=labels["repeat_of"].copy(),
        unit=labels["unit"].copy(),
        annotator=labels["annotator"].copy(),
        purpose=labels["purpose"].copy(),
        choice=labels["choice"].copy(),
        score=score,
        winner=labels["winner"].copy(),
        guide_version=labels["guide"].copy(),
        created=created,
        duration_ms=duration,
        active_ms=active,
        position=labels["position"].copy(),
        unit_ids=units["id"].copy(),
        unit_tokens=units["token"].copy(),
        unit_role=units["role"].copy(),
        unit_language=units["language"].copy(),
        unit_topic=units["topic"].copy(),
        unit_source=units["source"].copy(),
        gold=gold,
        guides=guides,
        pools=pools,
        names=names,
        systems=dict(study.systems.values_list("id", "name")),
        spa=spa,
    )
