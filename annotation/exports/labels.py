"""The raw label export: every label of a study with the context it was given in, streamed.

One row per label (per question for SPA: the batch's shared columns repeat on each row). Rows
are read with a server-side cursor in chunks; outputs, systems and SPA answers are looked up per
chunk, so memory stays flat however many labels the study has. Columns: see COLUMNS.
"""

import json
from collections.abc import Iterator

from django.db import connection

from annotation.models import Comparison, SpaAnswer, Study

CHUNK = 5000

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

_SQL = """
SELECT l.id, l.external_id, COALESCE(NULLIF(e.external_id, ''), au.username), e.pool,
       l.purpose, COALESCE(NULLIF(rl.external_id, ''), CAST(rl.id AS TEXT)),
       COALESCE(NULLIF(u.external_id, ''), u.token), u.kind, u.role, p.external_id,
       a.presentation, l.choice, l.score, ws.name, l.exposure, g.number, a.position,
       l.rendered_at, l.created_at, l.duration_ms, l.active_ms
FROM annotation_label l
JOIN annotation_assignment a ON a.id = l.assignment_id
JOIN annotation_unit u ON u.id = l.unit_id
JOIN auth_user au ON au.id = l.annotator_id
LEFT JOIN annotation_enrolment e ON e.study_id = l.study_id AND e.user_id = l.annotator_id
LEFT JOIN annotation_prompt p ON p.id = u.prompt_id
LEFT JOIN annotation_system ws ON ws.id = l.winner_id
LEFT JOIN annotation_guideversion g ON g.id = l.guide_version_id
LEFT JOIN annotation_label rl ON rl.assignment_id = a.repeat_of_id
WHERE l.study_id = %s
ORDER BY l.id
"""


def _json(value):
    if isinstance(value, (str, bytes)):
        return json.loads(value) if value else {}
    return value or {}


def _iso(value) -> str:
    if value is None:
        return ""
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


def label_rows(study: Study) -> Iterator[dict]:
    """Every label of the study as export rows (dicts keyed by COLUMNS), in label id order."""
    systems = dict(study.systems.values_list("id", "name"))
    comparisons = {
        c.id: f"{c.system_x.name} vs {c.system_y.name}"
        for c in Comparison.objects.filter(study=study).select_related("system_x", "system_y")
    }
    cursor = connection.chunked_cursor()
    try:
        cursor.execute(_SQL, [study.pk])
        while True:
            chunk = cursor.fetchmany(CHUNK)
            if not chunk:
                break
            yield from _chunk_rows(chunk, systems, comparisons)
    finally:
        cursor.close()


def _chunk_rows(chunk, systems: dict, comparisons: dict) -> Iterator[dict]:
    from annotation.models import Output
    from annotation.presentation import output_ids

    presentations = [_json(row[10]) for row in chunk]
    wanted = {oid for p in presentations for oid in output_ids(p) if oid is not None}
    outputs = {
        oid: (ext, sid)
        for oid, ext, sid in Output.objects.filter(id__in=wanted).values_list(
            "id", "external_id", "system_id"
        )
    }
    spa_ids = [
        row[0] for row, p in zip(chunk, presentations, strict=True) if p.get("kind") == "spa_batch"
    ]
    answers: dict[int, list] = {}
    if spa_ids:
        for label_id, comparison_id, reverse, probability, position in (
            SpaAnswer.objects.filter(label_id__in=spa_ids)
            .order_by("label_id", "position")
            .values_list("label_id", "comparison_id", "reverse", "probability", "position")
        ):
            answers.setdefault(label_id, []).append((comparison_id, reverse, probability, position))
    for row, presentation in zip(chunk, presentations, strict=True):
        shown = [oid for oid in output_ids(presentation) if oid is not None]
        kind = presentation.get("kind")
        if kind == "pair":
            sides = []
            for side in ("left", "right"):
                oid = presentation.get(side)
                if oid in outputs:
                    sides.append(f"{side}={systems.get(outputs[oid][1], '')}")
            systems_shown = ";".join(sides)
        elif kind == "spa_batch":
            letters = presentation.get("letters", {})
            systems_shown = ";".join(f"{k}={systems.get(v, '')}" for k, v in letters.items())
        else:
            systems_shown = ";".join(systems.get(outputs[o][1], "") for o in shown if o in outputs)
        base = {
            "label_id": row[0],
            "label_external_id": row[1],
            "annotator": row[2],
            "pool": row[3] or "",
            "purpose": row[4],
            "repeat_of": row[5] or "",
            "unit": row[6],
            "unit_kind": row[7],
            "unit_role": row[8],
            "prompt": row[9] or "",
            "outputs_shown": ";".join(outputs[o][0] for o in shown if o in outputs),
            "systems_shown": systems_shown,
            "choice": row[11],
            "score": row[12],
            "winner": row[13] or "",
            "comparison": "",
            "direction": "",
            "probability": None,
            "question_position": None,
            "presentation": json.dumps(presentation, separators=(",", ":")),
            "exposure": json.dumps(_json(row[14]), separators=(",", ":")),
            "guide_version": row[15],
            "position": row[16],
            "rendered_at": _iso(row[17]),
            "created_at": _iso(row[18]),
            "duration_ms": row[19],
            "active_ms": row[20],
        }
        questions = answers.get(row[0])
        if not questions:
            yield base
            continue
        for comparison_id, reverse, probability, position in questions:
            yield {
                **base,
                "comparison": comparisons.get(comparison_id, ""),
                "direction": "reverse" if reverse else "forward",
                "probability": probability,
                "question_position": position,
            }
