"""What each kind of import file holds: its columns, the check of one row, the checks of the whole
file against the study (as SQL over the staged rows) and how it is published.

Staged columns (annotation.models.ImportRow) per kind:
  systems      key=name, text=description
  prompts      key=id, text=text, a=language, b=topic, c=source, data=metadata
  outputs      key=id, a=prompt_id, b=system, text=text
  comparisons  key="x\\ty", a=system_x, b=system_y, c=expected
  gold         key=unit, a=role, c=source, text=rationale, data=value
  labels       see annotation.imports.labels
Nothing already in the study is ever changed: a row equal to what exists counts as unchanged, a
row that differs from it is an error.
"""

import json
import math
import re
from dataclasses import dataclass, field

from annotation.models import Comparison, Study, Unit
from annotation.schemes import choice_values, likert_values

MAX_ID = 200
LONE_SURROGATE = re.compile("[\ud800-\udfff]")
MAX_NAME = 200


class Bad(ValueError):
    """A bad value in one row: which field and why."""

    def __init__(self, field: str, reason: str):
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


@dataclass
class Context:
    """What row checks need to know of the study, loaded once (small: no per-row look-ups)."""

    study: Study
    systems: dict[str, int] = field(default_factory=dict)

    @classmethod
    def load(cls, study: Study) -> "Context":
        return cls(study=study, systems=dict(study.systems.values_list("name", "id")))


def text(fields: dict, name: str, *, required=False, max_len: int | None = None, default="") -> str:
    """A field as clean text: numbers are taken as written, NUL and over-long values refused."""
    value = fields.get(name)
    if not isinstance(value, str):  # JSON Lines: null, a number, or a value that is no text
        if value is None:
            value = ""
        elif isinstance(value, (bool, dict, list)):
            raise Bad(name, "must be text")
        else:
            value = json.dumps(value)
    if not value or value.isspace():
        if required:
            raise Bad(name, "is required")
        return default
    problem = unstorable(value)
    if problem:
        raise Bad(name, problem)
    if max_len is not None:
        value = value.strip()
        if len(value) > max_len:
            raise Bad(name, f"is longer than {max_len} characters")
    return value


def json_object(fields: dict, name: str) -> dict | None:
    raw = fields.get(name)
    if raw is None or raw == "":
        return None
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError:
            raise Bad(name, 'must be a JSON object like {"domain": "law"}') from None
    if not isinstance(raw, dict):
        raise Bad(name, 'must be a JSON object like {"domain": "law"}')
    problem = unstorable(raw)
    if problem:
        raise Bad(name, problem)
    return raw


def unstorable(value) -> str | None:
    """Why a text or JSON value cannot be stored (PostgreSQL refuses NUL; UTF-8 has no lone
    surrogate, which a JSON escape such as \\ud800 can still produce), or None."""
    if isinstance(value, str):  # first: a million-row file asks this four million times
        if "\x00" in value:
            return "contains a NUL character"
        if not value.isascii() and LONE_SURROGATE.search(value):
            return "contains a lone surrogate (not valid Unicode text)"
        return None
    if isinstance(value, dict):
        value = [*value.keys(), *value.values()]
    if isinstance(value, list):
        return next((p for p in map(unstorable, value) if p), None)
    return None


def number(fields: dict, name: str, low: float, high: float) -> float:
    raw = fields.get(name)
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        raise Bad(name, "is required")
    if isinstance(raw, bool):
        raise Bad(name, "must be a number")
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise Bad(name, f"{raw!r} is not a number") from None
    if not math.isfinite(value):
        raise Bad(name, "must be a finite number")
    if not low <= value <= high:
        raise Bad(name, f"{value:g} is outside {low:g} to {high:g}")
    return value


def system(fields: dict, name: str, ctx: Context) -> str:
    value = text(fields, name, required=True, max_len=MAX_NAME)
    if value not in ctx.systems:
        known = ", ".join(sorted(ctx.systems)[:10]) or "none yet: import systems first"
        raise Bad(name, f"unknown system {value!r} (the study's systems: {known})")
    return value


@dataclass(frozen=True)
class Check:
    """A whole-file check: SQL selecting (line, field, reason) of bad staged rows.

    `needs`, when given, is SQL that finds a row only if the check can find any: without one the
    check is skipped (a study's first outputs cannot clash with outputs it does not have, and
    joining a million staged rows to every output of the database to learn that takes seconds).
    """

    sql: str
    needs: str = ""

    def sql_for(self, vendor: str) -> str:
        return self.sql if vendor == "postgresql" else self.sql.replace(BYTEWISE, "")


@dataclass(frozen=True)
class Kind:
    name: str
    # canonical column -> accepted spellings (the canonical one included)
    columns: dict[str, tuple[str, ...]]
    required: tuple[str, ...]
    checks: tuple[Check, ...]
    publish: tuple[str, ...]  # SQL statements; the first one's row count is what was created

    def canonical(self, fields: dict) -> dict:
        out = {}
        for name, spellings in self.columns.items():
            for spelling in spellings:
                if spelling in fields:
                    out[name] = fields[spelling]
                    break
        return out

    def unknown_columns(self, names) -> list[str]:
        known = {s for spellings in self.columns.values() for s in spellings}
        return [n for n in names if n not in known]

    def missing_columns(self, names) -> list[str]:
        names = set(names)
        return [c for c in self.required if not names & set(self.columns[c])]


# --- whole-file SQL, parameterised by %(job)s and %(study)s -------------------------------------

R = "annotation_importrow r"
STAGED = "r.job_id = %(job)s"


# Sorting text by bytes finds the same equal keys as the database's collation (a deterministic
# one) several times faster: PostgreSQL sorts 1M ids with abbreviated keys under "C" only.
# SQLite has no "C" collation and compares bytes anyway; Check.sql_for drops the clause there.
BYTEWISE = ' COLLATE "C"'


def duplicates(field_name: str, expr: str, what: str) -> Check:
    return Check(
        f"SELECT line, '{field_name}', 'duplicate {what} ' || k || ' (first on line ' ||"
        f" first || ')' FROM (SELECT r.line, {expr} AS k, min(r.line) OVER (PARTITION BY {expr}"
        f"{BYTEWISE}) AS first FROM {R} WHERE {STAGED}) d WHERE line > first"
    )


SYSTEMS = Kind(
    name="systems",
    columns={"name": ("name", "system"), "description": ("description",)},
    required=("name",),
    checks=(
        duplicates("name", "r.key", "system"),
        Check(
            f"SELECT r.line, 'description', 'system ' || r.key || ' already exists with a"
            f" different description' FROM {R} JOIN annotation_system s ON s.study_id = %(study)s"
            f" AND s.name = r.key WHERE {STAGED} AND s.description <> r.text"
        ),
    ),
    publish=(
        f"INSERT INTO annotation_system (study_id, name, description) SELECT %(study)s, r.key,"
        f" r.text FROM {R} WHERE {STAGED} ORDER BY r.line ON CONFLICT (study_id, name) DO NOTHING",
    ),
)


PROMPTS = Kind(
    name="prompts",
    columns={
        "id": ("id", "prompt_id", "external_id"),
        "text": ("text", "prompt"),
        "language": ("language", "lang"),
        "topic": ("topic",),
        "source": ("source",),
        "metadata": ("metadata",),
    },
    required=("id", "text"),
    checks=(
        duplicates("id", "r.key", "prompt id"),
        Check(
            f"SELECT r.line, 'text', 'prompt ' || r.key || ' already exists with different"
            f" text, language, topic, source or metadata' FROM {R} JOIN annotation_prompt p ON"
            f" p.study_id = %(study)s AND p.external_id = r.key WHERE {STAGED} AND"
            f" (p.text <> r.text OR p.language <> r.a OR p.topic <> r.b OR p.source <> r.c"
            f" OR p.metadata <> COALESCE(r.data, %(empty)s))"
        ),
    ),
    publish=(
        f"INSERT INTO annotation_prompt (study_id, external_id, text, language, topic, source,"
        f" metadata) SELECT %(study)s, r.key, r.text, r.a, r.b, r.c, COALESCE(r.data, %(empty)s)"
        f" FROM {R} WHERE {STAGED} ORDER BY r.line ON CONFLICT (study_id, external_id) DO NOTHING",
    ),
)

# A probe of output_unique per prompt of the study, stopping at the first output (a subquery
# with LIMIT is not turned into a join, which PostgreSQL planned as a scan of every output of
# the database: 0.4 s instead of 1-3 s beside 250k prompts).
_STUDY_HAS_OUTPUTS = (
    "SELECT 1 FROM annotation_prompt p WHERE p.study_id = %(study)s AND (SELECT 1 FROM"
    " annotation_output o WHERE o.prompt_id = p.id LIMIT 1) IS NOT NULL LIMIT 1"
)
_OUTPUT_JOIN = (
    f"FROM {R} JOIN annotation_prompt p ON p.study_id = %(study)s AND p.external_id = r.a"
    " JOIN annotation_system s ON s.study_id = %(study)s AND s.name = r.b"
)

OUTPUTS = Kind(
    name="outputs",
    columns={
        "id": ("id", "output_id", "external_id"),
        "prompt_id": ("prompt_id", "prompt"),
        "system": ("system",),
        "text": ("text", "output"),
    },
    required=("prompt_id", "system", "text"),
    checks=(
        duplicates("id", "r.key", "output id"),
        duplicates("system", "r.a || ' / ' || r.b", "output for prompt / system"),
        Check(
            f"SELECT r.line, 'prompt_id', 'unknown prompt id ' || r.a || ' (import prompts"
            f" first)' FROM {R} WHERE {STAGED} AND NOT EXISTS (SELECT 1 FROM annotation_prompt p"
            f" WHERE p.study_id = %(study)s AND p.external_id = r.a)"
        ),
        Check(
            f"SELECT r.line, 'text', 'the output of ' || r.b || ' for prompt ' || r.a || ' already"
            f" exists with different text or id' {_OUTPUT_JOIN} JOIN annotation_output o ON"
            f" o.prompt_id = p.id AND o.system_id = s.id WHERE {STAGED} AND (o.text <> r.text OR"
            f" o.external_id <> r.key)",
            needs=_STUDY_HAS_OUTPUTS,
        ),
        Check(
            f"SELECT r.line, 'id', 'output id ' || r.key || ' is already used by another output"
            f" of this study' {_OUTPUT_JOIN} JOIN annotation_output o ON o.external_id = r.key"
            f" JOIN annotation_prompt op ON op.id = o.prompt_id AND op.study_id = %(study)s"
            f" WHERE {STAGED} AND NOT (o.prompt_id = p.id AND o.system_id = s.id)",
            needs=_STUDY_HAS_OUTPUTS,
        ),
    ),
    publish=(
        f"INSERT INTO annotation_output (prompt_id, system_id, text, external_id) SELECT p.id,"
        f" s.id, r.text, r.key {_OUTPUT_JOIN} WHERE {STAGED} ORDER BY r.line"
        " ON CONFLICT (prompt_id, system_id) DO NOTHING",
    ),
)

_COMPARISON_JOIN = (
    f"FROM {R} JOIN annotation_system sx ON sx.study_id = %(study)s AND sx.name = r.a"
    " JOIN annotation_system sy ON sy.study_id = %(study)s AND sy.name = r.b"
)

COMPARISONS = Kind(
    name="comparisons",
    columns={
        "system_x": ("system_x", "x"),
        "system_y": ("system_y", "y"),
        "expected": ("expected",),
    },
    required=("system_x", "system_y"),
    checks=(
        duplicates("system_y", "r.key", "comparison"),
        Check(
            f"SELECT r.line, 'expected', 'comparison ' || r.a || ' vs ' || r.b || ' already exists"
            f" with a different expected relation' {_COMPARISON_JOIN} JOIN annotation_comparison c"
            f" ON c.study_id = %(study)s AND c.system_x_id = sx.id AND c.system_y_id = sy.id"
            f" WHERE {STAGED} AND c.expected <> r.c"
        ),
    ),
    publish=(
        f"INSERT INTO annotation_comparison (study_id, system_x_id, system_y_id, expected,"
        f" position) SELECT %(study)s, sx.id, sy.id, r.c, (SELECT COALESCE(max(position) + 1, 0)"
        f" FROM annotation_comparison WHERE study_id = %(study)s) + r.line {_COMPARISON_JOIN}"
        f" WHERE {STAGED} ORDER BY r.line ON CONFLICT (study_id, system_x_id, system_y_id)"
        " DO NOTHING",
    ),
)

_GOLD_JOIN = (
    f"FROM {R} JOIN annotation_unit u ON u.study_id = %(study)s AND u.external_id = r.key"
    " AND u.external_id <> ''"
)

GOLD = Kind(
    name="gold",
    columns={
        "unit": ("unit", "unit_id", "output_id", "id"),
        "value": ("value", "answer", "gold"),
        "rationale": ("rationale",),
        "source": ("source",),
        "role": ("role",),
    },
    required=("unit", "value"),
    checks=(
        duplicates("unit", "r.key", "gold unit"),
        Check(
            f"SELECT r.line, 'unit', 'unknown unit ' || r.key || ' (build the units first; a unit"
            f" of one output has the output''s id)' FROM {R} WHERE {STAGED} AND NOT EXISTS"
            f" (SELECT 1 FROM annotation_unit u WHERE u.study_id = %(study)s AND"
            f" u.external_id = r.key AND u.external_id <> '')"
        ),
        Check(
            f"SELECT r.line, 'value', 'unit ' || r.key || ' already has a different gold answer,"
            f" rationale, source or role' {_GOLD_JOIN} JOIN annotation_goldanswer g ON"
            f" g.unit_id = u.id WHERE {STAGED} AND (g.value <> r.data OR g.rationale <> r.text OR"
            f" g.source <> r.c OR u.role <> r.a)"
        ),
        Check(
            f"SELECT r.line, 'unit', 'unit ' || r.key || ' already has production labels; gold"
            f" must be chosen before work starts' {_GOLD_JOIN} WHERE {STAGED} AND u.role ="
            " 'production' AND EXISTS (SELECT 1 FROM annotation_assignment a WHERE a.unit_id ="
            " u.id)"
        ),
    ),
    publish=(
        f"INSERT INTO annotation_goldanswer (unit_id, value, rationale, source, guide_version_id,"
        f" created_at) SELECT u.id, r.data, r.text, r.c, %(guide)s, %(now)s {_GOLD_JOIN}"
        f" WHERE {STAGED} ORDER BY r.line ON CONFLICT (unit_id) DO NOTHING",
        f"UPDATE annotation_unit SET role = (SELECT r.a FROM {R} WHERE {STAGED} AND"
        f" r.key = annotation_unit.external_id) WHERE study_id = %(study)s AND role ="
        f" 'production' AND external_id IN (SELECT r.key FROM {R} WHERE {STAGED})",
    ),
)


# --- row checks -------------------------------------------------------------------------------


def clean_system(f: dict, ctx: Context) -> dict:
    return {"key": text(f, "name", required=True, max_len=MAX_NAME), "text": text(f, "description")}


def clean_prompt(f: dict, ctx: Context) -> dict:
    return {
        "key": text(f, "id", required=True, max_len=MAX_ID),
        "text": text(f, "text", required=True),
        "a": text(f, "language", max_len=32),
        "b": text(f, "topic", max_len=200),
        "c": text(f, "source", max_len=200),
        "data": json_object(f, "metadata"),
    }


def clean_output(f: dict, ctx: Context) -> dict:
    prompt_id = text(f, "prompt_id", required=True, max_len=MAX_ID)
    name = system(f, "system", ctx)
    return {
        "key": text(f, "id", max_len=MAX_ID) or f"{prompt_id}:{name}"[:MAX_ID],
        "a": prompt_id,
        "b": name,
        "text": text(f, "text", required=True),
    }


def clean_comparison(f: dict, ctx: Context) -> dict:
    x = system(f, "system_x", ctx)
    y = system(f, "system_y", ctx)
    if x == y:
        raise Bad("system_y", "a system cannot be compared with itself")
    expected = text(f, "expected", max_len=16).lower()
    allowed = [c.value for c in Comparison.Expected]
    if expected not in allowed:
        raise Bad("expected", f"{expected!r} is not one of x, y, indifferent (or empty)")
    return {"key": f"{x} vs {y}", "a": x, "b": y, "c": expected}


def gold_value(raw, study: Study, field_name: str, ctx: Context) -> dict:
    """A gold answer in the study's label format: {"choice"}, {"score"} or {"winner"} (pairwise:
    a system name or "tie", canonical, since sides differ per presentation)."""
    if isinstance(raw, dict):
        raw = next(iter(raw.values()), None) if len(raw) == 1 else raw
    kind = study.task_kind
    fields = {field_name: raw}
    if kind in (Study.TaskKind.CATEGORICAL, Study.TaskKind.ORDINAL):
        value = text(fields, field_name, required=True)
        allowed = choice_values(study)
        if value not in allowed:
            raise Bad(field_name, f"{value!r} is not one of {', '.join(allowed)}")
        return {"choice": value}
    if kind == Study.TaskKind.LIKERT:
        points = likert_values(study.label_scheme.get("points", []))
        if not points:
            raise Bad(field_name, "the study has no Likert points yet")
        value = number(fields, field_name, min(points), max(points))
        if value not in points:
            raise Bad(field_name, f"{value:g} is not a point on the scale")
        return {"score": value}
    if kind == Study.TaskKind.CONTINUOUS:
        return {"score": number(fields, field_name, 0, 100)}
    if kind == Study.TaskKind.PAIRWISE:
        value = text(fields, field_name, required=True, max_len=MAX_NAME)
        if value == "tie" and study.label_scheme.get("tie_allowed", True):
            return {"winner": "tie"}
        if value not in ctx.systems:
            raise Bad(field_name, f"{value!r} is neither a system of the study nor 'tie'")
        return {"winner": value}
    raise Bad(field_name, "SPA studies take no gold answers")


def clean_gold(f: dict, ctx: Context) -> dict:
    role = text(f, "role", max_len=16, default=Unit.Role.GOLD).lower()
    if role not in (Unit.Role.GOLD, Unit.Role.ATTENTION):
        raise Bad("role", f"{role!r} is not gold or attention")
    return {
        "key": text(f, "unit", required=True, max_len=450),
        "a": role,
        "c": text(f, "source", max_len=200),
        "text": text(f, "rationale"),
        "data": gold_value(f.get("value"), ctx.study, "value", ctx),
    }


CLEANERS = {
    "systems": clean_system,
    "prompts": clean_prompt,
    "outputs": clean_output,
    "comparisons": clean_comparison,
    "gold": clean_gold,
}
KINDS = {k.name: k for k in (SYSTEMS, PROMPTS, OUTPUTS, COMPARISONS, GOLD)}


def _register_labels() -> None:
    # Labels live in their own module (they need more than one INSERT); registered here.
    from annotation.imports.labels import LABELS, clean_label

    KINDS[LABELS.name] = LABELS
    CLEANERS[LABELS.name] = clean_label


_register_labels()
