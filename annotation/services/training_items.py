"""What qualification, calibration and the guide share: training copies of real items, item
references typed by a lead ("p3", "p3:alpha"), their texts, and expert answer keys.

A training copy shows the same outputs as the real unit under a role the engine never picks, so
labels on it never enter overlap or production statistics.
"""

from dataclasses import dataclass

from django.db import transaction

from annotation.models import Label, Study, Unit, UnitOutput
from annotation.services.setup import random_shuffle_key

# Continuous (0-100) answers within this many points of the key count as correct.
CONTINUOUS_TOLERANCE = 10.0


class TrainingError(ValueError):
    """Input a lead gave that cannot be used; `field` names the form field, the message the row."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@transaction.atomic
def training_copy(unit: Unit, role: str) -> Unit:
    """A new unit of `role` (qualification or calibration) showing the same outputs as `unit`.

    A unit that already has that role is returned as it is.
    """
    if unit.role == role:
        return unit
    if role not in (Unit.Role.QUALIFICATION, Unit.Role.CALIBRATION):
        raise ValueError(f"training copies are qualification or calibration units, not {role}")
    copy = Unit.objects.create(
        study_id=unit.study_id,
        kind=unit.kind,
        role=role,
        prompt_id=unit.prompt_id,
        overlap=1,
        open_slots=0,  # not production: no slots, never picked by the engine
        shuffle_key=random_shuffle_key(),
    )
    UnitOutput.objects.bulk_create(
        UnitOutput(unit=copy, output_id=m.output_id, position=m.position)
        for m in unit.members.all()
    )
    return copy


def resolve_items(study: Study, refs: str, field: str = "examples") -> list[Unit]:
    """Units of the study named by a lead, comma or line separated: "p3" (every production or
    gold unit of prompt p3) or "p3:alpha" (only the one showing system alpha's output).

    Raises TrainingError naming the entry that matches nothing.
    """
    units: list[Unit] = []
    entries = [e.strip() for e in refs.replace("\n", ",").split(",") if e.strip()]
    for n, entry in enumerate(entries, 1):
        prompt_id, _, system = entry.partition(":")
        qs = Unit.objects.filter(
            study=study,
            role__in=[Unit.Role.PRODUCTION, Unit.Role.GOLD],
            members__output__prompt__external_id=prompt_id.strip(),
        )
        if system.strip():
            qs = qs.filter(members__output__system__name=system.strip())
        found = list(qs.distinct().order_by("id"))
        if not found:
            raise TrainingError(field, f"item {n} ({entry!r}) matches no item of this study")
        units += [u for u in found if u not in units]
    return units


@dataclass(frozen=True)
class ItemText:
    """What a person reads of an item: the prompt and the outputs, without system names."""

    unit_id: int
    reference: str  # the lead's reference, e.g. "p3:alpha" (lead pages only)
    prompt: str
    outputs: tuple[str, ...]


def item_texts(units) -> dict[int, ItemText]:
    """Texts of units by unit id, in one query (outputs in canonical order)."""
    ids = [u.pk if isinstance(u, Unit) else int(u) for u in units]
    rows = (
        UnitOutput.objects.filter(unit_id__in=ids)
        .order_by("unit_id", "position")
        .values_list(
            "unit_id",
            "output__prompt__external_id",
            "output__prompt__text",
            "output__text",
            "output__system__name",
        )
    )
    grouped: dict[int, list] = {}
    for row in rows:
        grouped.setdefault(row[0], []).append(row[1:])
    out = {}
    for unit_id, members in grouped.items():
        prompts = sorted({m[0] for m in members})
        systems = "+".join(m[3] for m in members)
        reference = f"{prompts[0]}:{systems}" if len(prompts) == 1 else f"{len(prompts)} prompts"
        out[unit_id] = ItemText(
            unit_id=unit_id,
            reference=reference,
            prompt=members[0][1] if len(prompts) == 1 else "",
            outputs=tuple(m[2] for m in members),
        )
    return out


def shared_output_units(units, roles=None):
    """Ids of units (optionally of `roles`) that show any output one of `units` shows."""
    outputs = UnitOutput.objects.filter(unit__in=units).values("output_id")
    qs = UnitOutput.objects.filter(output_id__in=outputs)
    if roles:
        qs = qs.filter(unit__role__in=roles)
    return set(qs.values_list("unit_id", flat=True))


# --- answer keys -------------------------------------------------------------------------------


def answer_options(study: Study) -> list[tuple[str, str]]:
    """The answers a lead can give as an item's key, as (form value, text)."""
    scheme = study.label_scheme or {}
    kind = study.task_kind
    if kind in (Study.TaskKind.CATEGORICAL, Study.TaskKind.ORDINAL):
        return [(str(x["value"]), str(x.get("text") or x["value"])) for x in scheme["labels"]]
    if kind == Study.TaskKind.LIKERT:
        return [
            (_fmt(p["value"]), f"{_fmt(p['value'])} {p.get('text', '')}".strip())
            for p in scheme.get("points", [])
        ]
    if kind == Study.TaskKind.PAIRWISE:
        options = [("first", "The first response is better"), ("second", "The second is better")]
        if scheme.get("tie_allowed", True):
            options.append(("tie", "Tie"))
        return options
    if kind == Study.TaskKind.CONTINUOUS:
        return [(str(v), str(v)) for v in range(0, 101, 10)]
    return []  # SPA batches have no single expert answer


def answer_value(study: Study, key: str) -> dict:
    """The stored key for a form value of `answer_options`; TrainingError if it is not one."""
    allowed = dict(answer_options(study))
    if key not in allowed:
        raise TrainingError("answer", f"{key!r} is not one of this study's answers")
    if study.task_kind in (Study.TaskKind.LIKERT, Study.TaskKind.CONTINUOUS):
        return {"score": float(key)}
    return {"choice": key}


def normalise_key(value) -> dict:
    """A stored key as a dict: older gold answers were stored as a bare value."""
    if isinstance(value, dict):
        return value
    if isinstance(value, int | float):
        return {"score": float(value)}
    return {"choice": str(value)}


def answer_text(study: Study, value) -> str:
    key = normalise_key(value)
    texts = dict(answer_options(study))
    if "score" in key:
        return texts.get(_fmt(key["score"]), _fmt(key["score"]))
    return texts.get(str(key.get("choice", "")), str(key.get("choice", "")))


def label_key(study: Study, label: Label, first_system_id: int | None = None) -> dict:
    """A label in the terms of `answer_value` (pairwise: which canonical side won)."""
    if study.task_kind == Study.TaskKind.PAIRWISE:
        if label.winner_id is None:
            return {"choice": "tie"}
        return {"choice": "first" if label.winner_id == first_system_id else "second"}
    if label.score is not None:
        return {"score": float(label.score)}
    return {"choice": label.choice}


def answer_matches(study: Study, expected, given: dict) -> bool:
    """Whether an answer (as `label_key` gives it) matches the key."""
    expected = normalise_key(expected)
    if "score" in expected:
        if given.get("score") is None:
            return False
        tolerance = CONTINUOUS_TOLERANCE if study.task_kind == Study.TaskKind.CONTINUOUS else 0
        return abs(float(given["score"]) - float(expected["score"])) <= tolerance
    return str(given.get("choice", "")) == str(expected.get("choice", ""))


def first_systems(unit_ids) -> dict[int, int]:
    """Unit id -> the system of its first (canonical) output, for pairwise keys."""
    return dict(
        UnitOutput.objects.filter(unit_id__in=list(unit_ids), position=0).values_list(
            "unit_id", "output__system_id"
        )
    )


def _fmt(value) -> str:
    number = float(value)
    return str(int(number)) if number.is_integer() else repr(number)
