"""Setting a study up: systems, prompts and outputs in, units built from them, gold marked.

Units get a random shuffle key at creation, so no order (id, import order) leaks into the queue.
"""

import itertools
import secrets
from collections.abc import Iterable
from dataclasses import dataclass

from django.db import transaction

from annotation.models import (
    Comparison,
    GoldAnswer,
    Output,
    Prompt,
    Study,
    System,
    Unit,
    UnitOutput,
)
from annotation.services.assignment import balance_shuffle_keys


def random_shuffle_key() -> int:
    return secrets.randbits(62)


@transaction.atomic
def add_content(study: Study, rows: Iterable[dict]) -> int:
    """Add prompts and outputs from rows {prompt_id, prompt, system, output, language?, topic?,
    source?}; systems and prompts are created on first sight. Returns the number of outputs."""
    systems = {s.name: s for s in study.systems.all()}
    prompts = {p.external_id: p for p in study.prompts.all()}
    n = 0
    for row in rows:
        system = systems.get(row["system"])
        if system is None:
            system = systems[row["system"]] = System.objects.create(study=study, name=row["system"])
        prompt = prompts.get(row["prompt_id"])
        if prompt is None:
            prompt = prompts[row["prompt_id"]] = Prompt.objects.create(
                study=study,
                external_id=row["prompt_id"],
                text=row["prompt"],
                language=row.get("language", ""),
                topic=row.get("topic", ""),
                source=row.get("source", ""),
            )
        Output.objects.create(prompt=prompt, system=system, text=row["output"])
        n += 1
    return n


def _new_unit(
    study: Study, kind: str, prompt: Prompt | None, overlap: int, external_id: str = ""
) -> Unit:
    return Unit(
        study=study,
        kind=kind,
        prompt=prompt,
        overlap=overlap,
        open_slots=overlap,
        shuffle_key=random_shuffle_key(),
        external_id=external_id[:450],
    )


@dataclass(frozen=True)
class PlannedUnit:
    """A unit the study's design asks for: kind, prompt (not for SPA), outputs in canonical
    order, and its external id (an output's id; "<prompt>:<x>~<y>" for a pair; "spa-<n>")."""

    kind: str
    prompt_id: int | None
    output_ids: tuple[int, ...]
    external_id: str


def plan_units(study: Study) -> list[PlannedUnit]:
    """The production units the study's content calls for and that do not exist yet.

    Single-output kinds: one unit per output. Pairwise: one unit per prompt and system pair (the
    study's comparisons if any, else every pair), canonical order (x, y); the sides are
    counterbalanced per annotator by the presentation (x left in exactly 2 of every 4 positions,
    annotation.presentation), and the order in which pairs come by the balanced shuffle keys.
    (Alternating the canonical order as well would only add noise to that exact balance.)
    SPA: one batch of m prompts x the compared systems (a fixed
    sample: the same batch for every annotator, its overlap the number of annotators wanted),
    or, without a fixed sample, consecutive batches of m prompts not yet in a batch.
    """
    existing = set(study.units.exclude(external_id="").values_list("external_id", flat=True))
    outputs = list(
        Output.objects.filter(prompt__study=study)
        .order_by("prompt_id", "system__name")
        .values_list("id", "prompt_id", "system_id", "external_id")
    )
    names = dict(study.systems.values_list("id", "name"))
    prompt_ext = dict(study.prompts.values_list("id", "external_id"))
    by_prompt: dict[int, dict[int, int]] = {}
    for output_id, prompt_id, system_id, _ in outputs:
        by_prompt.setdefault(prompt_id, {})[system_id] = output_id
    planned: list[PlannedUnit] = []

    if study.task_kind == Study.TaskKind.PAIRWISE:
        pairs = [(c.system_x_id, c.system_y_id) for c in study.comparisons.all()]
        if not pairs:
            pairs = list(itertools.combinations(sorted(names), 2))
        for prompt_id, by_system in by_prompt.items():
            for x, y in pairs:
                # As stored (Unit.external_id holds 450 characters), or a long pair is planned
                # again on every build and collides with itself.
                external_id = f"{prompt_ext[prompt_id]}:{names[x]}~{names[y]}"[:450]
                if x in by_system and y in by_system and external_id not in existing:
                    ids = (by_system[x], by_system[y])
                    planned.append(PlannedUnit(Unit.Kind.PAIR, prompt_id, ids, external_id))
    elif study.task_kind == Study.TaskKind.SPA:
        compared = set()
        for c in study.comparisons.all():
            compared.update((c.system_x_id, c.system_y_id))
        in_batches = set(
            UnitOutput.objects.filter(unit__study=study, unit__kind=Unit.Kind.SPA_BATCH)
            .values_list("output__prompt_id", flat=True)
            .distinct()
        )
        complete = [
            pid
            for pid in sorted(by_prompt)
            if compared and compared <= set(by_prompt[pid]) and pid not in in_batches
        ]
        m = study.spa_exposure_m
        n_batches = study.units.filter(kind=Unit.Kind.SPA_BATCH).count()
        if study.spa_fixed_sample:
            batches = [complete[:m]] if n_batches == 0 else []
        else:
            batches = [complete[i : i + m] for i in range(0, len(complete) - m + 1, m)]
        for batch in batches:
            if len(batch) < m:
                continue
            n_batches += 1
            ids = tuple(by_prompt[pid][sid] for pid in batch for sid in sorted(compared))
            planned.append(PlannedUnit(Unit.Kind.SPA_BATCH, None, ids, f"spa-{n_batches}"))
    else:
        for output_id, prompt_id, system_id, external_id in outputs:
            external_id = external_id or f"{prompt_ext[prompt_id]}:{names[system_id]}"
            if external_id not in existing:
                planned.append(PlannedUnit(Unit.Kind.OUTPUT, prompt_id, (output_id,), external_id))
    return planned


@transaction.atomic
def build_units(study: Study, overlap: int | None = None) -> int:
    """Create the production units the content calls for (see `plan_units`), only those not
    built yet, and lay out the shuffle keys; returns how many were made."""
    overlap = overlap or study.overlap
    planned = plan_units(study)
    prompts = {p.id: p for p in study.prompts.all()}
    units = [
        _new_unit(study, p.kind, prompts.get(p.prompt_id), overlap, p.external_id) for p in planned
    ]
    Unit.objects.bulk_create(units, batch_size=5000)
    UnitOutput.objects.bulk_create(
        [
            UnitOutput(unit=unit, output_id=output_id, position=pos)
            for unit, p in zip(units, planned, strict=True)
            for pos, output_id in enumerate(p.output_ids)
        ],
        batch_size=5000,
    )
    # Lay the shuffle keys out so any stretch of the queue carries the study's system mix.
    if units:
        balance_shuffle_keys(study)
    return len(units)


@transaction.atomic
def mark_gold(unit: Unit, value, rationale: str = "", author=None, role: str = Unit.Role.GOLD):
    """Turn a real unit into hidden gold (or an attention check) with its expert answer."""
    unit.role = role
    unit.save(update_fields=["role"])
    guide = unit.study.current_guide()
    return GoldAnswer.objects.update_or_create(
        unit=unit,
        defaults={"value": value, "rationale": rationale, "guide_version": guide, "author": author},
    )[0]


@transaction.atomic
def add_comparisons(study: Study, pairs: Iterable[tuple[str, str, str]]) -> list[Comparison]:
    """Add SPA/pairwise comparisons from (system X name, system Y name, expected) triples."""
    systems = {s.name: s for s in study.systems.all()}
    made = []
    for position, (x, y, expected) in enumerate(pairs):
        made.append(
            Comparison.objects.create(
                study=study,
                system_x=systems[x],
                system_y=systems[y],
                expected=expected,
                position=position,
            )
        )
    return made
