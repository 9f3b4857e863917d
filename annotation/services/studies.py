"""A study's life as the lead sees it: create, edit under the lock rules, check, launch, close.

Pages, the admin, the REST API and commands call these; each refuses bad input with a Django
`ValidationError` keyed by field (the scheme's errors name the point or label at fault).
"""

from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import transaction

from annotation.models import Comparison, Enrolment, GoldAnswer, Study, System, Unit, Workspace
from annotation.schemes import default_scheme, validate_scheme

Status = Study.Status

# Settings a lead may give to create_study / update_study (everything else is the engine's).
EDITABLE_FIELDS = (
    "name",
    "task_kind",
    "label_scheme",
    "question",
    "instructions",
    "overlap",
    "gold_rate",
    "repeat_rate",
    "repeat_min_gap_units",
    "repeat_min_gap_minutes",
    "attention_rate",
    "lease_seconds",
    "quota_per_annotator",
    "requires_qualification",
    "qualification_pass_score",
    "spa_exposure_m",
    "spa_fixed_sample",
    "spa_both_directions",
    "spa_tau",
    "spa_collect_likert",
    "allowed_pools",
    "crowd_platform",
    "crowd_completion_code",
    "crowd_completion_url",
)
SPA_FIELDS = (
    "spa_exposure_m",
    "spa_fixed_sample",
    "spa_both_directions",
    "spa_tau",
    "spa_collect_likert",
)

# What stops changing once a study has left draft, and why (shown on the settings page).
LOCKED_ONCE_LAUNCHED = {
    "task_kind": "Labels already collected answer this kind of task; a new kind needs a new study.",
    "label_scheme": "Collected labels use these options; changing them would change what the "
    "labels mean. Start a new study for a new scale.",
    "overlap": "Units were handed out with this many labels each; agreement and votes depend "
    "on it.",
    "spa_exposure_m": "Every SPA judgment so far was made after reading this many prompts.",
    "spa_fixed_sample": "Annotators so far read this sample design; mixing designs breaks the "
    "comparison.",
    "spa_both_directions": "Whether P[Y>X] is asked is part of the protocol the labels came from.",
    "spa_tau": "The filter is pre-registered: it must be fixed before the first label.",
    "spa_collect_likert": "The Likert ratings beside SPA are part of the protocol the labels came "
    "from.",
}
# Locked in draft too once units exist: the units were built for this design.
LOCKED_ONCE_BUILT = {
    "task_kind": "Units are built for this kind of task; rebuild the units to change it.",
    "spa_exposure_m": "SPA batches are built with this many prompts; rebuild the units to change "
    "it.",
    "spa_fixed_sample": "SPA batches are built for this sample design; rebuild the units to "
    "change it.",
}
# Settings that may change while live, and what a change does (shown on the settings page).
LIVE_EDIT_NOTES = {
    "question": "Wording changes apply to the next task shown; record the change in the guide so "
    "labels can be cut by guide version.",
    "instructions": "Shown before the first task; changes reach people who have not started yet.",
    "gold_rate": "Applies to positions handed out from now on.",
}

TRANSITIONS = {
    Status.DRAFT: {Status.QUALIFYING, Status.LIVE, Status.CLOSED},
    Status.QUALIFYING: {Status.LIVE, Status.PAUSED, Status.CLOSED},
    Status.LIVE: {Status.PAUSED, Status.CLOSED},
    Status.PAUSED: {Status.LIVE, Status.CLOSED},
    Status.CLOSED: set(),
}


@dataclass(frozen=True)
class ChecklistItem:
    """One condition for going live: `ok`, a short `title`, and `detail` saying what is missing
    and what to do about it (or what was found, when it passes)."""

    key: str
    ok: bool
    title: str
    detail: str


def _apply(study: Study, changes: dict) -> None:
    unknown = sorted(set(changes) - set(EDITABLE_FIELDS))
    if unknown:
        raise ValidationError(dict.fromkeys(unknown, "is not a setting a lead can change"))
    for name, value in changes.items():
        setattr(study, name, value)


def _full_clean(study: Study) -> None:
    # Constraints are the database's job; clean() gives the same rules as field errors first.
    study.full_clean(exclude=["workspace", "created_by"], validate_constraints=False)


@transaction.atomic
def create_study(
    *, workspace: Workspace, created_by, name: str, task_kind: str, **settings
) -> Study:
    """Create a draft study in `workspace`. Without a `label_scheme`, the kind's default scheme
    (e.g. five labelled Likert points) is used, so a new study is always renderable.

    `settings` are any of EDITABLE_FIELDS. Raises ValidationError keyed by field.
    """
    if task_kind not in Study.TaskKind.values:
        raise ValidationError({"task_kind": f"choose one of {', '.join(Study.TaskKind.values)}"})
    settings.setdefault("label_scheme", default_scheme(task_kind))
    study = Study(workspace=workspace, created_by=created_by, status=Status.DRAFT)
    _apply(study, {"name": name, "task_kind": task_kind, **settings})
    _full_clean(study)
    study.save()
    return study


def locked_fields(study: Study) -> dict[str, str]:
    """Settings that cannot change now, each with the reason shown to the lead."""
    locked: dict[str, str] = {}
    if study.status != Status.DRAFT:
        locked.update(LOCKED_ONCE_LAUNCHED)
    elif study.units.exists():
        locked.update(LOCKED_ONCE_BUILT)
    if study.status == Status.CLOSED:
        locked.update(dict.fromkeys(EDITABLE_FIELDS, "The study is closed."))
    return locked


@transaction.atomic
def update_study(study: Study, **changes) -> Study:
    """Change settings of `study` (any of EDITABLE_FIELDS), all or nothing.

    A change to a locked setting (see `locked_fields`) raises ValidationError naming the field and
    the reason; setting a locked field to its current value is allowed, so a whole form can be
    posted back. A changed SPA tau of a study that has labels is refused even in draft.
    """
    study = Study.objects.select_for_update().get(pk=study.pk)
    locked = locked_fields(study)
    refused = {
        name: locked[name]
        for name, value in changes.items()
        if name in locked and getattr(study, name) != value
    }
    if refused:
        raise ValidationError(refused)
    _apply(study, changes)
    _full_clean(study)
    study.save()
    return study


@transaction.atomic
def set_comparisons(study: Study, pairs: list[tuple[str, str, str]]) -> list[Comparison]:
    """Replace the comparisons of a draft study with (system X name, system Y name, expected)
    triples, in order. Errors name the row: ValidationError({"comparisons": [...]})."""
    if study.status != Status.DRAFT and study.comparisons.exists():
        raise ValidationError({"comparisons": "Comparisons are fixed once the study is launched."})
    systems = {s.name: s for s in System.objects.filter(study=study)}
    problems, seen = [], set()
    for row, (x, y, expected) in enumerate(pairs, 1):
        if x not in systems or y not in systems:
            missing = x if x not in systems else y
            problems.append(f"row {row}: no system named {missing!r} in this study")
        elif x == y:
            problems.append(f"row {row}: a system cannot be compared with itself")
        elif (x, y) in seen or (y, x) in seen:
            problems.append(f"row {row}: {x} vs {y} is listed twice")
        elif expected not in Comparison.Expected.values:
            problems.append(f"row {row}: expected must be one of x, y, indifferent or empty")
        seen.add((x, y))
    if problems:
        raise ValidationError({"comparisons": problems})
    study.comparisons.all().delete()
    return [
        Comparison.objects.create(
            study=study, system_x=systems[x], system_y=systems[y], expected=e, position=i
        )
        for i, (x, y, e) in enumerate(pairs)
    ]


def launch_checklist(study: Study) -> list[ChecklistItem]:
    """What must hold before `study` goes live, each item explained (see ChecklistItem).

    Scheme valid; units built; SPA/pairwise comparisons where needed; gold answers when the gold
    rate is above 0; attention units when the attention rate is; at least `overlap` annotators
    enrolled (SPA fixed sample: as many as the overlap asks); a published guide; a qualification
    test when qualification is required.
    """
    items = []
    problems = validate_scheme(
        study.task_kind, study.label_scheme, collect_likert=study.spa_collect_likert
    )
    items.append(
        ChecklistItem(
            "scheme",
            not problems,
            "Label scheme is complete",
            "; ".join(str(p) for p in problems)
            if problems
            else "The workbench can show every option.",
        )
    )
    if study.task_kind == Study.TaskKind.SPA:
        n = study.comparisons.count()
        items.append(
            ChecklistItem(
                "comparisons",
                n > 0,
                "Comparisons chosen",
                f"{n} comparison(s) of systems X vs Y."
                if n
                else "An SPA study asks about pairs of systems: add at least one comparison "
                "in the settings (after importing the outputs).",
            )
        )
    production = Unit.objects.filter(study=study, role=Unit.Role.PRODUCTION).count()
    items.append(
        ChecklistItem(
            "units",
            production > 0,
            "Units built",
            f"{production} unit(s) to label."
            if production
            else "Import the prompts and outputs, then build the units from them.",
        )
    )
    if study.gold_rate > 0:
        gold = GoldAnswer.objects.filter(unit__study=study, unit__role=Unit.Role.GOLD).count()
        items.append(
            ChecklistItem(
                "gold",
                gold > 0,
                "Gold answers exist",
                f"{gold} gold unit(s) with expert answers."
                if gold
                else f"The gold rate is {study.gold_rate:.0%} but no unit has a gold answer: "
                "import gold answers, or set the gold rate to 0.",
            )
        )
    if study.attention_rate > 0:
        attention = GoldAnswer.objects.filter(
            unit__study=study, unit__role=Unit.Role.ATTENTION
        ).count()
        items.append(
            ChecklistItem(
                "attention",
                attention > 0,
                "Attention checks exist",
                f"{attention} attention unit(s)."
                if attention
                else f"The attention rate is {study.attention_rate:.0%} but there is no "
                "attention unit: add some, or set the attention rate to 0.",
            )
        )
    enrolled = Enrolment.objects.filter(study=study).count()
    crowd = bool(study.crowd_platform)
    items.append(
        ChecklistItem(
            "annotators",
            enrolled >= study.overlap or crowd,
            "Enough annotators",
            (
                f"{enrolled} enrolled; crowd workers join through the platform link."
                if crowd
                else f"{enrolled} enrolled, and each unit needs {study.overlap} different people."
            )
            if enrolled >= study.overlap or crowd
            else f"{enrolled} enrolled, but each unit needs {study.overlap} different people: "
            "invite or add at least {more} more (People page).".format(
                more=study.overlap - enrolled
            ),
        )
    )
    guide = study.current_guide()
    items.append(
        ChecklistItem(
            "guide",
            guide is not None,
            "A guide is published",
            f"Version {guide.number} is current."
            if guide
            else "Annotators need written guidance: publish a first version of the guide.",
        )
    )
    if study.requires_qualification:
        n = Unit.objects.filter(study=study, role=Unit.Role.QUALIFICATION).count()
        items.append(
            ChecklistItem(
                "qualification",
                n > 0,
                "Qualification test has items",
                f"{n} qualification item(s)."
                if n
                else "Qualification is required but the test has no items: build it, or turn "
                "qualification off.",
            )
        )
    return items


class LaunchRefused(ValidationError):
    """Going live was refused; `items` are the checklist items that failed."""

    def __init__(self, items: list[ChecklistItem]):
        super().__init__({"status": [f"{i.title}: {i.detail}" for i in items]})
        self.items = items


@transaction.atomic
def set_status(study: Study, status: str) -> Study:
    """Move `study` to `status` along draft -> (qualifying) -> live <-> paused -> closed.

    Going live (from draft, qualifying or paused) needs every `launch_checklist` item to pass,
    else LaunchRefused lists the failed ones; qualifying needs `requires_qualification`; closed is
    final. Other moves raise ValidationError({"status": ...}).
    """
    study = Study.objects.select_for_update().get(pk=study.pk)
    if status not in Status.values:
        raise ValidationError({"status": f"{status!r} is not a study status"})
    if status == study.status:
        return study
    if status not in TRANSITIONS[study.status]:
        raise ValidationError(
            {"status": f"A {study.get_status_display().lower()} study cannot become {status}."}
        )
    if status == Status.QUALIFYING and not study.requires_qualification:
        raise ValidationError(
            {"status": "The study does not require qualification; launch it live instead."}
        )
    if status == Status.LIVE:
        failed = [item for item in launch_checklist(study) if not item.ok]
        if failed:
            raise LaunchRefused(failed)
    study.status = status
    study.save(update_fields=["status"])
    return study
