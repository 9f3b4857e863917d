"""The raw label export: every label of a study with the context it was given in, streamed.

One row per label (per question for SPA: the batch's shared columns repeat on each row), a tuple
in the order of COLUMNS. PostgreSQL does the joins and streams plain values through a server-side
cursor in chunks; the outputs shown and SPA answers are read once per chunk. No model instance is
built and memory stays flat however many labels the study has.
"""

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC

from django.contrib.auth import get_user_model
from django.db import connection

from annotation.models import Comparison, Enrolment, GuideVersion, Output, SpaAnswer, Study, System

CHUNK = 10_000

COLUMNS = [
    "label_id",
    "label_external_id",
    "annotator",
    "pool",
    "purpose",
    "repeat_of",
    "unit",
    "unit_kind",
    "unit_role",
    "prompt",
    "outputs_shown",
    "systems_shown",
    "choice",
    "score",
    "winner",
    "comparison",
    "direction",
    "probability",
    "question_position",
    "presentation",
    "exposure",
    "guide_version",
    "position",
    "rendered_at",
    "created_at",
    "duration_ms",
    "active_ms",
]
# The columns whose text came from people or files (ids, pseudonyms, names, answers): the only
# ones a CSV has to escape; the rest are numbers, fixed words, JSON objects and ISO dates.
FREE_TEXT = (
    "label_external_id",
    "annotator",
    "repeat_of",
    "unit",
    "prompt",
    "outputs_shown",
    "systems_shown",
    "choice",
    "winner",
    "comparison",
)

_SQL = """
SELECT l.id, l.external_id, l.annotator_id, l.purpose,
       COALESCE(NULLIF(rl.external_id, ''), CAST(rl.id AS TEXT)),
       COALESCE(NULLIF(u.external_id, ''), u.token), u.kind, u.role, p.external_id,
       CAST(a.presentation AS TEXT), l.choice, l.score, l.winner_id, CAST(l.exposure AS TEXT),
       l.guide_version_id, a.position, {rendered_at}, {created_at}, l.duration_ms, l.active_ms
FROM annotation_label l
JOIN annotation_assignment a ON a.id = l.assignment_id
JOIN annotation_unit u ON u.id = l.unit_id
LEFT JOIN annotation_prompt p ON p.id = u.prompt_id
LEFT JOIN annotation_label rl ON rl.assignment_id = a.repeat_of_id
WHERE l.study_id = %s
ORDER BY l.id
"""
# On PostgreSQL the times come as text already in Python's isoformat() of a UTC datetime
# (microseconds only when not zero): loading a million timestamps into datetime objects and
# formatting them again was a fifth of the export's time.
_PG_ISO = (
    "to_char({0} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS') || CASE WHEN"
    " to_char({0}, 'US') = '000000' THEN '' ELSE '.' || to_char({0}, 'US') END || '+00:00'"
)
# One encoder made once: json.dumps with arguments builds a new one on every call.
_compact = json.JSONEncoder(separators=(",", ":")).encode


def _json(value):
    if isinstance(value, (str, bytes)):
        return json.loads(value) if value else {}
    return value or {}


def _iso(value) -> str:
    if value is None:
        return ""
    if value.__class__ is str:  # PostgreSQL formats them (_PG_ISO)
        return value
    if value.tzinfo is None:  # SQLite's raw rows: naive, in UTC
        value = value.replace(tzinfo=UTC)
    return value.isoformat()


@contextmanager
def _without_jit():
    """PostgreSQL would JIT-compile this long plan (seconds) for work that is all index look-ups."""
    if connection.vendor != "postgresql":
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("SET jit = off")
        try:
            yield
        finally:
            cursor.execute("RESET jit")


class _Lookup(dict):
    """A small table read once per export (annotators, systems, guide versions), so the big
    query joins only what grows with the labels; a key not in it is fetched once (`fetch`)."""

    def __init__(self, pairs, fetch):
        super().__init__(pairs)
        self.fetch = fetch

    def __missing__(self, key):
        self[key] = value = self.fetch(key)
        return value


def _people(study: Study) -> _Lookup:
    """annotator id -> (the name the export shows: the enrolment's pseudonym, else the
    username; the pool, "" without an enrolment)."""
    enrolled = Enrolment.objects.filter(study=study).values_list(
        "user_id", "external_id", "pool", "user__username"
    )
    users = get_user_model().objects
    return _Lookup(
        ((uid, (ext or name, pool or "")) for uid, ext, pool, name in enrolled),
        lambda uid: (users.filter(pk=uid).values_list("username", flat=True).first(), ""),
    )


def label_text(study: Study, fmt: str) -> Iterator[str]:
    """The raw label export as streamed text, `csv` (free-text cells formula-escaped) or
    `jsonl`: what the export page, the API and `manage.py export_labels` all serve."""
    from annotation.exports.writers import csv_text, jsonl_text

    rows = label_tuples(study)
    if fmt == "csv":
        return csv_text(rows, COLUMNS, FREE_TEXT)
    if fmt == "jsonl":
        return jsonl_text(rows, COLUMNS)
    raise ValueError(f"fmt: expected csv or jsonl, got {fmt!r}")


def label_rows(study: Study) -> Iterator[dict]:
    """Every label of the study as export rows (dicts keyed by COLUMNS), in label id order."""
    for row in label_tuples(study):
        yield dict(zip(COLUMNS, row, strict=True))


def label_tuples(study: Study) -> Iterator[tuple]:
    """The rows of `label_rows` as tuples in the order of COLUMNS: what the big exports use."""
    systems = dict(study.systems.values_list("id", "name"))
    names = _Lookup(
        {**systems, None: ""},
        lambda sid: System.objects.filter(pk=sid).values_list("name", flat=True).first() or "",
    )
    guides = _Lookup(
        {**dict(study.guide_versions.values_list("id", "number")), None: None},
        lambda gid: GuideVersion.objects.filter(pk=gid).values_list("number", flat=True).first(),
    )
    people = _people(study)
    comparisons = {
        c.id: f"{c.system_x.name} vs {c.system_y.name}"
        for c in Comparison.objects.filter(study=study).select_related("system_x", "system_y")
    }
    if connection.vendor == "postgresql":
        sql = _SQL.format(
            rendered_at=_PG_ISO.format("l.rendered_at"), created_at=_PG_ISO.format("l.created_at")
        )
    else:
        sql = _SQL.format(rendered_at="l.rendered_at", created_at="l.created_at")
    cursor = connection.chunked_cursor()
    try:
        with _without_jit():
            cursor.execute(sql, [study.pk])
        while chunk := cursor.fetchmany(CHUNK):
            yield from _chunk_rows(chunk, systems, comparisons, people, names, guides)
    finally:
        cursor.close()


def _shown(presentation: dict) -> list:
    """The output ids a presentation shows, in display order (annotation.presentation's rule)."""
    kind = presentation.get("kind")
    if kind == "output":
        return [presentation["output"]]
    if kind == "pair":
        return [presentation["left"], presentation["right"]]
    return list(presentation.get("outputs", []))


def _outputs(ids: set) -> dict:
    """output id -> (external id, system id), for one chunk's outputs."""
    if not ids:
        return {}
    if connection.vendor != "postgresql":
        found = Output.objects.filter(id__in=ids).values_list("id", "external_id", "system_id")
        return {oid: (ext, sid) for oid, ext, sid in found}
    # One array parameter: an IN list of 10 000 placeholders costs more to build than to run.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id, external_id, system_id FROM annotation_output WHERE id = ANY(%s)",
            [[i for i in ids if isinstance(i, int)]],
        )
        return {oid: (ext, sid) for oid, ext, sid in cursor.fetchall()}


def _answers(label_ids: list) -> dict[int, list]:
    """label id -> its SPA answers (comparison, reverse, probability, position) in order."""
    answers: dict[int, list] = {}
    if label_ids:
        for label_id, *answer in (
            SpaAnswer.objects.filter(label_id__in=label_ids)
            .order_by("label_id", "position")
            .values_list("label_id", "comparison_id", "reverse", "probability", "position")
        ):
            answers.setdefault(label_id, []).append(answer)
    return answers


def _chunk_rows(chunk, systems, comparisons, people, names, guides) -> Iterator[tuple]:
    presentations = [_json(row[9]) for row in chunk]
    shown_ids = [[o for o in _shown(p) if o is not None] for p in presentations]
    outputs = _outputs({o for ids in shown_ids for o in ids})
    answers = _answers(
        [
            row[0]
            for row, p in zip(chunk, presentations, strict=True)
            if p.get("kind") == "spa_batch"
        ]
    )
    for row, presentation, shown in zip(chunk, presentations, shown_ids, strict=True):
        kind = presentation.get("kind")
        found = [outputs[o] for o in shown if o in outputs]
        if kind == "pair":
            systems_shown = ";".join(
                f"{side}={systems.get(outputs[oid][1], '')}"
                for side, oid in (
                    ("left", presentation.get("left")),
                    ("right", presentation.get("right")),
                )
                if oid in outputs
            )
        elif kind == "spa_batch":
            letters = presentation.get("letters", {})
            systems_shown = ";".join(f"{k}={systems.get(v, '')}" for k, v in letters.items())
        else:
            systems_shown = ";".join(systems.get(sid, "") for _, sid in found)
        exposure = row[13]
        annotator, pool = people[row[2]]
        base = (
            row[0],
            row[1],
            annotator,
            pool,
            row[3],
            row[4] or "",
            row[5],
            row[6],
            row[7],
            row[8] or "",
            ";".join(ext for ext, _ in found),
            systems_shown,
            row[10],
            row[11],
            names[row[12]],
        )
        tail = (
            _compact(presentation),
            "{}" if exposure == "{}" else _compact(_json(exposure)),
            guides[row[14]],
            row[15],
            _iso(row[16]),
            _iso(row[17]),
            row[18],
            row[19],
        )
        questions = answers.get(row[0])
        if not questions:
            yield (*base, "", "", None, None, *tail)
            continue
        for comparison_id, reverse, probability, position in questions:
            yield (
                *base,
                comparisons.get(comparison_id, ""),
                "reverse" if reverse else "forward",
                probability,
                position,
                *tail,
            )
