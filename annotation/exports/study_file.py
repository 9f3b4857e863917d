"""A study as one versioned JSON file (schema: static/schemas/concord-study-1.schema.json).

`study_document` writes it; `read_study_file` validates one against the published schema and
the study rules; `diff_study` says what applying it to an existing study would change, before
anything changes; `create_study_from_file` and `apply_study_file` write. Applying never deletes
and never overwrites a published guide version: the guide is append-only, and settings that
would change the meaning of collected labels (task kind, scheme) are refused once a study has
labels.
"""

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from annotation.models import Comparison, GuideVersion, Ruling, Study, System

FORMAT, VERSION = "concord-study", 1
SCHEMA_PATH = Path(settings.BASE_DIR) / "static" / "schemas" / "concord-study-1.schema.json"
SETTINGS = [
    "name",
    "task_kind",
    "label_scheme",
    "question",
    "instructions",
    "overlap",
    "gold_rate",
    "repeat_rate",
    "attention_rate",
    "repeat_min_gap_units",
    "repeat_min_gap_minutes",
    "lease_seconds",
    "quota_per_annotator",
    "requires_qualification",
    "qualification_pass_score",
    "spa_exposure_m",
    "spa_fixed_sample",
    "spa_both_directions",
    "spa_tau",
    "spa_collect_likert",
    "crowd_platform",
    "crowd_completion_code",
    "crowd_completion_url",
]
# Changing these after labels exist would change what the labels mean.
MEANING = ("task_kind", "label_scheme")


class StudyFileError(ValueError):
    """A study file that cannot be used; `problems` lists each (where, what)."""

    def __init__(self, problems: list[tuple[str, str]]):
        super().__init__("; ".join(f"{where}: {what}" for where, what in problems))
        self.problems = problems


def study_document(study: Study) -> dict:
    guides = []
    for g in study.guide_versions.order_by("number").prefetch_related("rulings_introduced"):
        guides.append(
            {
                "number": g.number,
                "body": g.body,
                "changes": g.changes,
                "requires_recalibration": g.requires_recalibration,
                "rulings": [
                    {"title": r.title, "text": r.text, "example": r.example}
                    for r in g.rulings_introduced.order_by("id")
                ],
            }
        )
    return {
        "format": FORMAT,
        "version": VERSION,
        "exported_at": timezone.now().isoformat(),
        "study": {name: getattr(study, name) for name in SETTINGS},
        "systems": [
            {"name": s.name, "description": s.description} for s in study.systems.order_by("name")
        ],
        "comparisons": [
            {"system_x": c.system_x.name, "system_y": c.system_y.name, "expected": c.expected}
            for c in study.comparisons.select_related("system_x", "system_y")
        ],
        "guide": guides,
    }


def dumps(study: Study) -> str:
    return json.dumps(study_document(study), indent=2, ensure_ascii=False) + "\n"


@cache
def schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text())


def read_study_file(raw: bytes | str) -> dict:
    """Parse and validate a study file; StudyFileError lists every problem found."""
    import jsonschema

    try:
        document = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise StudyFileError([("file", f"not a JSON file: {error}")]) from None
    validator = jsonschema.Draft202012Validator(schema())
    problems = [
        ("/".join(str(p) for p in e.absolute_path) or "file", e.message)
        for e in sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
    ]
    if problems:
        raise StudyFileError(problems)
    names = {s["name"] for s in document["systems"]}
    for i, c in enumerate(document["comparisons"]):
        for side in ("system_x", "system_y"):
            if c[side] not in names:
                problems.append((f"comparisons/{i}/{side}", f"unknown system {c[side]!r}"))
        if c["system_x"] == c["system_y"]:
            problems.append((f"comparisons/{i}", "a system cannot be compared with itself"))
    numbers = [g["number"] for g in document["guide"]]
    if numbers != sorted(set(numbers)):
        problems.append(("guide", "versions must be numbered in increasing order without repeats"))
    probe = Study(**document["study"])
    problems += _scheme_problems(probe)
    if problems:
        raise StudyFileError(problems)
    return document


def _scheme_problems(study: Study) -> list[tuple[str, str]]:
    """A scheme the workbench can render: the study builder's check (annotation.schemes)."""
    try:
        from annotation.schemes import validate_scheme
    except ImportError:  # before the builder's validation landed: the minimum the workbench needs
        scheme, kind = study.label_scheme, study.task_kind
        if kind == Study.TaskKind.LIKERT and len(scheme.get("points") or []) < 2:
            return [("study/label_scheme", "a Likert scheme needs at least two points")]
        if kind in (Study.TaskKind.CATEGORICAL, Study.TaskKind.ORDINAL) and (
            len(scheme.get("labels") or []) < 2
        ):
            return [("study/label_scheme", "a categorical or ordinal scheme needs two labels")]
        return []
    problems = validate_scheme(
        study.task_kind, study.label_scheme, collect_likert=study.spa_collect_likert
    )
    return [("study/label_scheme", str(p)) for p in problems]


@dataclass(frozen=True)
class Change:
    where: str
    kind: str  # "changed" | "added" | "refused" | "kept"
    old: str
    new: str


def _show(value) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def diff_study(study: Study, document: dict) -> list[Change]:
    """What applying the file to this study would do, setting by setting, row by row."""
    changes = []
    has_labels = study.labels.exists()
    for name in SETTINGS:
        if name not in document["study"]:
            continue
        old, new = getattr(study, name), document["study"][name]
        if old == new:
            continue
        kind = "refused" if (name in MEANING and has_labels) else "changed"
        changes.append(Change(f"study.{name}", kind, _show(old), _show(new)))
    systems = dict(study.systems.values_list("name", "description"))
    for s in document["systems"]:
        if s["name"] not in systems:
            changes.append(Change(f"system {s['name']}", "added", "", s.get("description", "")))
        elif systems[s["name"]] != s.get("description", ""):
            old = systems[s["name"]]
            changes.append(Change(f"system {s['name']}", "changed", old, s.get("description", "")))
    for name in sorted(set(systems) - {s["name"] for s in document["systems"]}):
        changes.append(Change(f"system {name}", "kept", "not in the file; never deleted", ""))
    pairs = {
        (c.system_x.name, c.system_y.name): c.expected
        for c in study.comparisons.select_related("system_x", "system_y")
    }
    for c in document["comparisons"]:
        key = (c["system_x"], c["system_y"])
        expected = c.get("expected", "")
        if key not in pairs:
            changes.append(Change(f"comparison {key[0]} vs {key[1]}", "added", "", expected))
        elif pairs[key] != expected:
            changes.append(
                Change(f"comparison {key[0]} vs {key[1]}", "changed", pairs[key], expected)
            )
    guides = dict(study.guide_versions.values_list("number", "body"))
    for g in document["guide"]:
        if g["number"] not in guides:
            changes.append(Change(f"guide v{g['number']}", "added", "", g["body"][:200]))
        elif guides[g["number"]] != g["body"]:
            changes.append(
                Change(
                    f"guide v{g['number']}",
                    "refused",
                    "published versions never change",
                    "publish a new version instead",
                )
            )
    return changes


@transaction.atomic
def apply_study_file(study: Study, document: dict) -> list[Change]:
    """Apply the file's changes (the ones `diff_study` lists, except refused and kept)."""
    study = Study.objects.select_for_update().get(pk=study.pk)
    changes = diff_study(study, document)
    fields = []
    for name in SETTINGS:
        if any(c.where == f"study.{name}" and c.kind == "changed" for c in changes):
            setattr(study, name, document["study"][name])
            fields.append(name)
    if fields:
        study.full_clean(exclude=["workspace", "created_by"])
        study.save(update_fields=fields)
    _add_content(study, document)
    return changes


def _add_content(study: Study, document: dict) -> None:
    systems = {s.name: s for s in study.systems.all()}
    for s in document["systems"]:
        if s["name"] in systems:
            if systems[s["name"]].description != s.get("description", ""):
                systems[s["name"]].description = s.get("description", "")
                systems[s["name"]].save(update_fields=["description"])
            continue
        systems[s["name"]] = System.objects.create(
            study=study, name=s["name"], description=s.get("description", "")
        )
    existing = {
        (c.system_x.name, c.system_y.name): c
        for c in study.comparisons.select_related("system_x", "system_y")
    }
    for position, c in enumerate(document["comparisons"]):
        key = (c["system_x"], c["system_y"])
        if key in existing:
            if existing[key].expected != c.get("expected", ""):
                existing[key].expected = c.get("expected", "")
                existing[key].save(update_fields=["expected"])
            continue
        Comparison.objects.create(
            study=study,
            system_x=systems[key[0]],
            system_y=systems[key[1]],
            expected=c.get("expected", ""),
            position=position,
        )
    published = set(study.guide_versions.values_list("number", flat=True))
    for g in document["guide"]:
        if g["number"] in published:
            continue
        version = GuideVersion.objects.create(
            study=study,
            number=g["number"],
            body=g["body"],
            changes=g.get("changes", ""),
            requires_recalibration=g.get("requires_recalibration", False),
        )
        for r in g.get("rulings", []):
            Ruling.objects.create(
                study=study,
                guide_version=version,
                title=r["title"],
                text=r["text"],
                example=r.get("example", ""),
            )


@transaction.atomic
def create_study_from_file(workspace, document: dict, user=None) -> Study:
    """A new draft study in the workspace, recreated from the file."""
    values = {k: v for k, v in document["study"].items() if k in SETTINGS}
    study = Study(workspace=workspace, created_by=user, status=Study.Status.DRAFT, **values)
    study.full_clean(exclude=["created_by"])
    study.save()
    _add_content(study, document)
    return study
