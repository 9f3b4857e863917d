"""What building the units would give, before anything is built: the lead's preview.

Reads only; `annotation.services.setup.build_units` makes the units the preview describes.
"""

import statistics
from dataclasses import dataclass

from annotation.models import GoldAnswer, Label, Study, Unit
from annotation.services.setup import plan_units


@dataclass(frozen=True)
class UnitPreview:
    new_units: int
    new_by_kind: dict[str, int]
    existing_production: int
    production_units: int  # after the build
    overlap: int
    labels_needed: int  # production units x overlap
    gold_units: int
    gold_answers: int
    gold_rate: float
    # Share of all tasks that are not production (gold, repeats, attention), as set on the study.
    injected_rate: float
    tasks: int  # production labels plus the injected tasks they bring along
    median_seconds: float | None  # median render-to-submit time of the study's labels so far
    annotator_hours: float | None
    problems: tuple[str, ...]

    @property
    def gold_share(self) -> float:
        total = self.production_units + self.gold_units
        return self.gold_units / total if total else 0.0


def preview_units(study: Study) -> UnitPreview:
    planned = plan_units(study)
    by_kind: dict[str, int] = {}
    for p in planned:
        by_kind[p.kind] = by_kind.get(p.kind, 0) + 1
    roles = _roles(study)
    existing = roles.get(Unit.Role.PRODUCTION, 0)
    production = existing + len(planned)
    labels_needed = production * study.overlap
    injected = study.gold_rate + study.repeat_rate + study.attention_rate
    tasks = round(labels_needed / (1 - injected)) if injected < 1 else labels_needed
    durations = list(
        Label.objects.filter(study=study, duration_ms__isnull=False)
        .order_by("-id")
        .values_list("duration_ms", flat=True)[:10_000]
    )
    median = statistics.median(durations) / 1000 if durations else None
    hours = tasks * median / 3600 if median is not None else None
    return UnitPreview(
        new_units=len(planned),
        new_by_kind=by_kind,
        existing_production=existing,
        production_units=production,
        overlap=study.overlap,
        labels_needed=labels_needed,
        gold_units=roles.get(Unit.Role.GOLD, 0),
        gold_answers=GoldAnswer.objects.filter(unit__study=study).count(),
        gold_rate=study.gold_rate,
        injected_rate=injected,
        tasks=tasks,
        median_seconds=median,
        annotator_hours=hours,
        problems=tuple(_problems(study, production)),
    )


def _roles(study: Study) -> dict[str, int]:
    from django.db.models import Count

    return dict(
        Unit.objects.filter(study=study)
        .values_list("role")
        .order_by()
        .annotate(n=Count("id"))
        .values_list("role", "n")
    )


def _problems(study: Study, production: int) -> list[str]:
    out = []
    if not study.systems.exists():
        out.append("No systems yet: import systems first.")
    elif production == 0:
        out.append("No units can be built yet: import prompts and outputs.")
    if study.task_kind == Study.TaskKind.SPA and not study.comparisons.exists():
        out.append("An SPA study needs comparisons (X vs Y) before its batches can be built.")
    if study.task_kind == Study.TaskKind.SPA and production == 0 and study.comparisons.exists():
        out.append(
            f"An SPA batch needs {study.spa_exposure_m} prompts with an output of every"
            " compared system."
        )
    if study.gold_rate > 0 and not GoldAnswer.objects.filter(unit__study=study).exists():
        out.append("The gold rate is above 0 but no gold answers are imported yet.")
    return out
