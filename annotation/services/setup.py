"""Setting a study up: systems, prompts and outputs in, units built from them, gold marked.

Units get a random shuffle key at creation, so no order (id, import order) leaks into the queue.
"""

import itertools
import secrets
from collections.abc import Iterable

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


def _new_unit(study: Study, kind: str, prompt: Prompt | None, overlap: int) -> Unit:
    return Unit(
        study=study,
        kind=kind,
        prompt=prompt,
        overlap=overlap,
        open_slots=overlap,
        shuffle_key=random_shuffle_key(),
    )


@transaction.atomic
def build_units(study: Study, overlap: int | None = None) -> int:
    """Create the study's production units from its outputs; returns how many were made.

    Single-output kinds get one unit per output; pairwise one unit per prompt and system pair
    (the study's comparisons if any, else every pair); SPA one batch of m prompts x the compared
    systems (a fixed sample: the same batch for every annotator, its overlap the number of
    annotators wanted), or, without a fixed sample, consecutive batches of m prompts.
    """
    overlap = overlap or study.overlap
    units: list[Unit] = []
    members: list[tuple[int, list[int]]] = []  # (index in units, output ids in canonical order)
    outputs = list(Output.objects.filter(prompt__study=study).order_by("prompt_id", "system__name"))
    by_prompt: dict[int, dict[int, Output]] = {}
    for output in outputs:
        by_prompt.setdefault(output.prompt_id, {})[output.system_id] = output
    prompts = {p.id: p for p in study.prompts.all()}

    if study.task_kind == Study.TaskKind.PAIRWISE:
        pairs = [(c.system_x_id, c.system_y_id) for c in study.comparisons.all()]
        if not pairs:
            system_ids = sorted(study.systems.values_list("id", flat=True))
            pairs = list(itertools.combinations(system_ids, 2))
        for prompt_id, by_system in by_prompt.items():
            for x, y in pairs:
                if x in by_system and y in by_system:
                    units.append(_new_unit(study, Unit.Kind.PAIR, prompts[prompt_id], overlap))
                    members.append((len(units) - 1, [by_system[x].id, by_system[y].id]))
    elif study.task_kind == Study.TaskKind.SPA:
        compared = set()
        for c in study.comparisons.all():
            compared.update((c.system_x_id, c.system_y_id))
        complete = [
            pid for pid in sorted(by_prompt) if compared and compared <= set(by_prompt[pid])
        ]
        m = study.spa_exposure_m
        batches = (
            [complete[:m]]
            if study.spa_fixed_sample
            else [complete[i : i + m] for i in range(0, len(complete) - m + 1, m)]
        )
        for batch in batches:
            if len(batch) < m:
                continue
            units.append(_new_unit(study, Unit.Kind.SPA_BATCH, None, overlap))
            ids = [by_prompt[pid][sid].id for pid in batch for sid in sorted(compared)]
            members.append((len(units) - 1, ids))
    else:
        for output in outputs:
            units.append(_new_unit(study, Unit.Kind.OUTPUT, prompts[output.prompt_id], overlap))
            members.append((len(units) - 1, [output.id]))

    Unit.objects.bulk_create(units, batch_size=5000)
    UnitOutput.objects.bulk_create(
        [
            UnitOutput(unit=units[i], output_id=output_id, position=pos)
            for i, output_ids in members
            for pos, output_id in enumerate(output_ids)
        ],
        batch_size=5000,
    )
    # Lay the shuffle keys out so any stretch of the queue carries the study's system mix.
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
