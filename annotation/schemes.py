"""Label schemes, presentations and answers: what each task kind asks and what counts as an answer.

`clean_answer` turns a submitted form (field -> string) into a `CleanAnswer` in canonical terms,
undoing the presentation (sides, letters, order), or raises `AnswerError` naming the field.

Label scheme (Study.label_scheme) per task kind:
  likert       {"points": [{"value": 1, "text": "Very poor"}, ..., {"value": 5, "text": "Great"}]}
  continuous   {"min_text": "Worst imaginable", "max_text": "Best imaginable",
                "best_reference": "<text>", "worst_reference": "<text>"}   (references optional)
  categorical  {"labels": [{"value": "safe", "text": "Safe", "key": "s"}, ...]}
  ordinal      same as categorical; the list order is the scale order
  pairwise     {"tie_allowed": true}
  spa          {"likert_points": [...]} when Study.spa_collect_likert is on (same shape as points)

Presentation (Assignment.presentation), drawn by the assignment engine per assignment; never sent
to the browser as such (only texts and letters are rendered):
  output       {"kind": "output", "output": <output id>}
  pair         {"kind": "pair", "left": <output id>, "right": <output id>}
  spa_batch    {"kind": "spa_batch",
                "letters": {"A": <system id>, "B": ...},        # per-annotator writer letters
                "prompts": [<prompt id>, ...],                  # reading order of the prompts
                "writers": ["C", "A", ...],                     # order of writers within a prompt
                "outputs": [<output id>, ...],                  # every output shown, display order
                "questions": [{"comparison": <id>, "reverse": false, "x": "A", "y": "C"}, ...]}
                # a reverse question asks P[Y>X] with x/y letters swapped; reverse questions come
                # after all forward ones, in a shuffled order, never next to their twin

Submitted form fields (names the workbench posts):
  likert, continuous, categorical, ordinal: "choice" (label value) or "score" (number)
  pairwise: "choice" in {"left", "right", "tie"}
  spa: "p_<i>" for question i of the presentation (0..100, percent), and, with Likert on,
       "likert_<j>" for the j-th output of presentation["outputs"] (a display index, so no
       internal id reaches the browser)
Only these fields are stored (Label.value); every posted field is bounded (MAX_VALUE_CHARS) and
may hold no control character, or the answer is refused naming the field.
"""

import math
import unicodedata
from dataclasses import dataclass, field

from annotation.models import Study

# Keys the workbench keeps for itself (g opens the guide); mirrored in annotation.workbench.
RESERVED_KEYS = frozenset({"g"})
MIN_OPTIONS, MAX_LIKERT_POINTS, MAX_LABELS = 2, 9, 20
MAX_VALUE_CHARS, MAX_TEXT_CHARS, MAX_REFERENCE_CHARS = 100, 200, 5000
SCHEME_KEYS = {
    "likert": {"points"},
    "continuous": {"min_text", "max_text", "best_reference", "worst_reference"},
    "categorical": {"labels"},
    "ordinal": {"labels"},
    "pairwise": {"tie_allowed"},
    "spa": {"likert_points"},
}


@dataclass(frozen=True)
class SchemeProblem:
    """One reason a label scheme cannot be rendered: `path` locates it, e.g. ("points", 2, "text")
    for the third point's text, ("points",) for the list itself."""

    path: tuple
    message: str

    def __str__(self) -> str:
        return f"{scheme_path(self.path)}: {self.message}"


def scheme_path(path: tuple) -> str:
    """("points", 2, "text") -> "points[2].text"."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def default_scheme(kind: str) -> dict:
    """A valid starting scheme for a new study of `kind`, for the lead to edit."""
    points = [
        {"value": 1, "text": "Very poor"},
        {"value": 2, "text": "Poor"},
        {"value": 3, "text": "Fair"},
        {"value": 4, "text": "Good"},
        {"value": 5, "text": "Excellent"},
    ]
    return {
        "likert": {"points": points},
        "continuous": {"min_text": "Worst imaginable", "max_text": "Best imaginable"},
        "categorical": {
            "labels": [
                {"value": "yes", "text": "Yes", "key": "y"},
                {"value": "no", "text": "No", "key": "n"},
            ]
        },
        "ordinal": {
            "labels": [
                {"value": "low", "text": "Low", "key": "l"},
                {"value": "medium", "text": "Medium", "key": "m"},
                {"value": "high", "text": "High", "key": "h"},
            ]
        },
        "pairwise": {"tie_allowed": True},
        "spa": {"likert_points": points},
    }[kind]


def validate_scheme(kind: str, scheme, *, collect_likert: bool = False) -> list[SchemeProblem]:
    """Every reason the workbench could not render `scheme` for a study of `kind` (empty if it
    can). `collect_likert` is Study.spa_collect_likert: an SPA page with ratings needs points."""
    if kind not in SCHEME_KEYS:
        return [SchemeProblem(("task_kind",), f"unknown task kind {kind!r}")]
    if not isinstance(scheme, dict):
        return [SchemeProblem(("scheme",), "must be an object")]
    problems = [
        SchemeProblem((key,), f"is not a setting of a {kind} scheme")
        for key in sorted(set(scheme) - SCHEME_KEYS[kind])
    ]
    if kind == "likert":
        problems += _points_problems("points", scheme.get("points"))
    elif kind == "continuous":
        for name in ("min_text", "max_text"):
            problems += _text_problems((name,), scheme.get(name), MAX_TEXT_CHARS, required=True)
        for name in ("best_reference", "worst_reference"):
            problems += _text_problems((name,), scheme.get(name), MAX_REFERENCE_CHARS)
    elif kind in ("categorical", "ordinal"):
        problems += _labels_problems(scheme.get("labels"))
    elif kind == "pairwise":
        if not isinstance(scheme.get("tie_allowed", True), bool):
            problems.append(SchemeProblem(("tie_allowed",), "must be true or false"))
    elif kind == "spa" and (collect_likert or "likert_points" in scheme):
        problems += _points_problems("likert_points", scheme.get("likert_points"))
    return problems


def _text_problems(path, value, limit: int, required: bool = False) -> list[SchemeProblem]:
    if value is None or value == "":
        return [SchemeProblem(path, "is required")] if required else []
    if not isinstance(value, str):
        return [SchemeProblem(path, "must be text")]
    if required and not value.strip():
        return [SchemeProblem(path, "is required")]
    if len(value) > limit:
        return [SchemeProblem(path, f"is longer than {limit} characters")]
    return []


def _list_problems(name: str, items, low: int, high: int, what: str) -> list[SchemeProblem]:
    if not isinstance(items, list):
        return [SchemeProblem((name,), f"add at least {low} {what}")]
    if len(items) < low:
        return [SchemeProblem((name,), f"add at least {low} {what} (there are {len(items)})")]
    if len(items) > high:
        return [SchemeProblem((name,), f"at most {high} {what} (there are {len(items)})")]
    return [
        SchemeProblem((name, i), "must be an object")
        for i, x in enumerate(items)
        if not isinstance(x, dict)
    ]


def _points_problems(name: str, points) -> list[SchemeProblem]:
    """Likert points: 2 to 9 (each gets a number key), numeric values 0..100, strictly rising."""
    problems = _list_problems(name, points, MIN_OPTIONS, MAX_LIKERT_POINTS, "points")
    if problems:
        return problems
    previous = None
    for i, point in enumerate(points):
        value = point.get("value")
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            problems.append(SchemeProblem((name, i, "value"), "must be a number"))
            continue
        if not 0 <= value <= 100:
            problems.append(SchemeProblem((name, i, "value"), f"{value:g} is outside 0 to 100"))
        elif previous is not None and value <= previous:
            problems.append(
                SchemeProblem((name, i, "value"), f"must be above the point before ({previous:g})")
            )
        previous = value
        problems += _text_problems((name, i, "text"), point.get("text"), MAX_TEXT_CHARS)
        problems += [
            SchemeProblem((name, i, key), "is not a setting of a point")
            for key in sorted(set(point) - {"value", "text"})
        ]
    return problems


def _labels_problems(labels) -> list[SchemeProblem]:
    """Categories or ordinal levels: 2 to 20, distinct values and keys; past 9 each needs a key."""
    problems = _list_problems("labels", labels, MIN_OPTIONS, MAX_LABELS, "labels")
    if problems:
        return problems
    values: set[str] = set()
    keys: set[str] = set()
    for i, label in enumerate(labels):
        value = label.get("value")
        if not isinstance(value, str) or not value.strip():
            problems.append(SchemeProblem(("labels", i, "value"), "is required"))
        elif value != value.strip():
            problems.append(
                SchemeProblem(("labels", i, "value"), "must not start or end with a space")
            )
        elif len(value) > MAX_VALUE_CHARS:
            problems.append(
                SchemeProblem(
                    ("labels", i, "value"), f"is longer than {MAX_VALUE_CHARS} characters"
                )
            )
        elif value in values:
            problems.append(SchemeProblem(("labels", i, "value"), f"{value!r} is used twice"))
        else:
            values.add(value)
        problems += _text_problems(("labels", i, "text"), label.get("text"), MAX_TEXT_CHARS, True)
        key = label.get("key", "")
        if key in ("", None):
            if len(labels) > 9:
                problems.append(
                    SchemeProblem(("labels", i, "key"), "past 9 labels every label needs a key")
                )
        elif not isinstance(key, str) or len(key) != 1 or not key.isalnum() or not key.isascii():
            problems.append(SchemeProblem(("labels", i, "key"), "must be one letter or digit"))
        elif key.lower() in RESERVED_KEYS:
            problems.append(SchemeProblem(("labels", i, "key"), f"{key!r} opens the guide"))
        elif key.lower() in keys:
            problems.append(SchemeProblem(("labels", i, "key"), f"{key!r} is used twice"))
        else:
            keys.add(key.lower())
        problems += [
            SchemeProblem(("labels", i, k), "is not a setting of a label")
            for k in sorted(set(label) - {"value", "text", "key"})
        ]
    return problems


class AnswerError(ValueError):
    """A submitted answer that cannot be stored; `field` names the offending form field."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class CleanAnswer:
    choice: str = ""
    score: float | None = None
    winner_system_id: int | None = None
    # (comparison id, reverse, probability in percent, position asked)
    spa_answers: tuple[tuple[int, bool, float, int], ...] = ()
    # (output id, score)
    output_ratings: tuple[tuple[int, float], ...] = ()
    raw: dict = field(default_factory=dict)


def choice_values(study: Study) -> list[str]:
    """The allowed `choice` values of a categorical or ordinal study, in scale order."""
    return [str(item["value"]) for item in study.label_scheme.get("labels", [])]


def likert_values(points: list[dict]) -> list[float]:
    return [float(p["value"]) for p in points]


def parse_number(field_name: str, raw, low: float, high: float) -> float:
    """A finite number in [low, high], or AnswerError naming the field."""
    if raw is None or str(raw).strip() == "":
        raise AnswerError(field_name, "an answer is required")
    try:
        value = float(str(raw).strip())
    except ValueError:
        raise AnswerError(field_name, f"{raw!r} is not a number") from None
    if not math.isfinite(value):
        raise AnswerError(field_name, "must be a finite number")
    if not low <= value <= high:
        raise AnswerError(field_name, f"{value:g} is outside {low:g} to {high:g}")
    return value


# Bounds on what a submission may carry: no answer field of any scheme needs more.
MAX_FIELDS = 500
MAX_NAME_CHARS = 64
MAX_VALUE_CHARS = 200


def _shown(name: str) -> str:
    """A field name as an error message can carry it: printable, and short."""
    text = name.encode("unicode_escape").decode("ascii")
    return text if len(text) <= MAX_NAME_CHARS else text[:MAX_NAME_CHARS] + "..."


def _control(text: str) -> str | None:
    """The first control (or lone surrogate) character in `text` as U+XXXX, or None."""
    for char in text:
        if unicodedata.category(char) in ("Cc", "Cs"):
            return f"U+{ord(char):04X}"
    return None


def check_fields(data) -> None:
    """Every posted answer field: a bounded name and value, no control characters.

    Raises AnswerError naming the field (as printable text). The fields themselves are checked
    against the scheme by `clean_answer`, which keeps only the scheme's own.
    """
    names = [name for name in data if not name.startswith(("csrf", "_"))]
    if len(names) > MAX_FIELDS:
        raise AnswerError("body", f"has {len(names)} fields; an answer has at most {MAX_FIELDS}")
    for name in names:
        name = str(name)
        if len(name) > MAX_NAME_CHARS:
            raise AnswerError(_shown(name), f"a field name has at most {MAX_NAME_CHARS} characters")
        if found := _control(name):
            raise AnswerError(_shown(name), f"the field name contains a control character {found}")
        value = data.get(name)
        if value is None:
            continue
        value = str(value)
        if len(value) > MAX_VALUE_CHARS:
            raise AnswerError(
                name, f"is {len(value)} characters long; an answer has at most {MAX_VALUE_CHARS}"
            )
        if found := _control(value):
            raise AnswerError(name, f"contains a control character ({found}); answers are plain")


def answer_field_names(study: Study, presentation: dict) -> list[str]:
    """The names of the answer fields this task's scheme defines."""
    kind = study.task_kind
    if kind == Study.TaskKind.SPA:
        names = [f"p_{i}" for i in range(len(presentation.get("questions", [])))]
        if study.spa_collect_likert:
            names += [f"likert_{j}" for j in range(len(presentation.get("outputs", [])))]
        return names
    if kind in (Study.TaskKind.LIKERT, Study.TaskKind.CONTINUOUS):
        return ["score"]
    return ["choice"]


def clean_answer(study: Study, presentation: dict, data) -> CleanAnswer:
    """Validate a submitted form against the study's scheme and map it to canonical terms.

    Fields are bounded and free of control characters (`check_fields`); only the fields the
    scheme defines are kept in `raw` (what `Label.value` stores), anything else is dropped.
    """
    check_fields(data)
    raw = {
        name: str(data.get(name))
        for name in answer_field_names(study, presentation)
        if data.get(name) is not None
    }
    kind = study.task_kind
    if kind in (Study.TaskKind.CATEGORICAL, Study.TaskKind.ORDINAL):
        allowed = choice_values(study)
        choice = (data.get("choice") or "").strip()
        if not choice:
            raise AnswerError("choice", "choose a label")
        if choice not in allowed:
            raise AnswerError("choice", f"{choice!r} is not one of {', '.join(allowed)}")
        return CleanAnswer(choice=choice, raw=raw)
    if kind == Study.TaskKind.LIKERT:
        allowed = likert_values(study.label_scheme.get("points", []))
        if not allowed:  # a scheme saved before validation existed; refuse, never a 500
            raise AnswerError("score", "this study's scale has no points; tell its lead")
        score = parse_number("score", data.get("score"), min(allowed), max(allowed))
        if score not in allowed:
            raise AnswerError("score", f"{score:g} is not a point on the scale")
        return CleanAnswer(score=score, raw=raw)
    if kind == Study.TaskKind.CONTINUOUS:
        return CleanAnswer(score=parse_number("score", data.get("score"), 0, 100), raw=raw)
    if kind == Study.TaskKind.PAIRWISE:
        return _clean_pairwise(study, presentation, data, raw)
    if kind == Study.TaskKind.SPA:
        return _clean_spa(study, presentation, data, raw)
    raise AnswerError("task", f"unknown task kind {kind!r}")


def _clean_pairwise(study: Study, presentation: dict, data, raw: dict) -> CleanAnswer:
    from annotation.models import Output

    choice = (data.get("choice") or "").strip()
    allowed = ["left", "right"] + (["tie"] if study.label_scheme.get("tie_allowed", True) else [])
    if choice not in allowed:
        raise AnswerError("choice", f"choose one of {', '.join(allowed)}")
    winner = None
    if choice != "tie":
        output_id = presentation[choice]
        winner = Output.objects.filter(pk=output_id).values_list("system_id", flat=True).get()
    return CleanAnswer(choice=choice, winner_system_id=winner, raw=raw)


def _clean_spa(study: Study, presentation: dict, data, raw: dict) -> CleanAnswer:
    answers = []
    for i, question in enumerate(presentation.get("questions", [])):
        name = f"p_{i}"
        probability = parse_number(name, data.get(name), 0, 100)
        answers.append((int(question["comparison"]), bool(question["reverse"]), probability, i))
    ratings = []
    if study.spa_collect_likert:
        points = study.label_scheme.get("likert_points", [])
        allowed = likert_values(points)
        if not allowed and presentation.get("outputs"):
            raise AnswerError("likert_0", "this study's scale has no points; tell its lead")
        for j, output_id in enumerate(presentation.get("outputs", [])):
            name = f"likert_{j}"
            score = parse_number(name, data.get(name), min(allowed), max(allowed))
            if score not in allowed:
                raise AnswerError(name, f"{score:g} is not a point on the scale")
            ratings.append((int(output_id), score))
    return CleanAnswer(spa_answers=tuple(answers), output_ratings=tuple(ratings), raw=raw)
