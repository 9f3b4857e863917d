"""The raw label export, column by column, against the same rows worked out the slow, obvious way
(one label at a time through the ORM): studies of every unit kind, labels from the engine and
from an import, gold, repeats, pools, pseudonyms, guide versions, SPA questions."""

import csv
import io
import json
import uuid

import pytest

from annotation.exports.labels import COLUMNS, FREE_TEXT, label_rows, label_text, label_tuples
from annotation.exports.writers import csv_text, jsonl_text
from annotation.models import Enrolment, GuideVersion, Label, Output, Study, System, Unit
from annotation.presentation import output_ids
from annotation.services import assignment as engine
from annotation.services import setup
from annotation.services.submission import submit_label
from concord.csvsafe import safe_row
from tests.factories import enrol, make_study
from tests.imports.helpers import csv_bytes, run

pytestmark = pytest.mark.django_db


def _iso(value) -> str:
    return "" if value is None else value.isoformat()


def reference_rows(study: Study) -> list[dict]:
    rows = []
    for label in Label.objects.filter(study=study).order_by("id"):
        a = label.assignment
        p = a.presentation
        unit = label.unit
        enrolment = Enrolment.objects.filter(study=study, user=label.annotator).first()
        shown = [o for o in output_ids(p) if o is not None]
        outputs = {o.id: o for o in Output.objects.filter(id__in=shown).select_related("system")}
        if p["kind"] == "pair":
            systems_shown = ";".join(
                f"{side}={outputs[p[side]].system.name}"
                for side in ("left", "right")
                if p.get(side) in outputs
            )
        elif p["kind"] == "spa_batch":
            systems_shown = ";".join(
                f"{letter}={System.objects.get(id=sid).name}"
                for letter, sid in p.get("letters", {}).items()
            )
        else:
            systems_shown = ";".join(outputs[o].system.name for o in shown if o in outputs)
        original = Label.objects.filter(assignment_id=a.repeat_of_id).first()
        base = {
            "label_id": label.id,
            "label_external_id": label.external_id,
            "annotator": (enrolment and enrolment.external_id) or label.annotator.username,
            "pool": enrolment.pool if enrolment else "",
            "purpose": label.purpose,
            "repeat_of": (original.external_id or str(original.id)) if original else "",
            "unit": unit.external_id or unit.token,
            "unit_kind": unit.kind,
            "unit_role": unit.role,
            "prompt": unit.prompt.external_id if unit.prompt else "",
            "outputs_shown": ";".join(outputs[o].external_id for o in shown if o in outputs),
            "systems_shown": systems_shown,
            "choice": label.choice,
            "score": label.score,
            "winner": label.winner.name if label.winner else "",
            "comparison": "",
            "direction": "",
            "probability": None,
            "question_position": None,
            "presentation": json.dumps(p, separators=(",", ":")),
            "exposure": json.dumps(label.exposure or {}, separators=(",", ":")),
            "guide_version": label.guide_version.number if label.guide_version else None,
            "position": a.position,
            "rendered_at": _iso(label.rendered_at),
            "created_at": _iso(label.created_at),
            "duration_ms": label.duration_ms,
            "active_ms": label.active_ms,
        }
        answers = list(label.spa_answers.order_by("position").select_related("comparison"))
        if not answers:
            rows.append(base)
        for q in answers:
            c = q.comparison
            rows.append(
                {
                    **base,
                    "comparison": f"{c.system_x.name} vs {c.system_y.name}",
                    "direction": "reverse" if q.reverse else "forward",
                    "probability": q.probability,
                    "question_position": q.position,
                }
            )
    return rows


def reference_csv(rows: list[dict]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(COLUMNS)
    for row in rows:
        writer.writerow(safe_row(["" if row[c] is None else row[c] for c in COLUMNS]))
    return out.getvalue()


def reference_jsonl(rows: list[dict]) -> str:
    return "".join(
        json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n" for row in rows
    )


def work(study: Study, users, answer, rounds: int) -> int:
    """Each user takes and answers up to `rounds` tasks from the engine; returns labels made."""
    made = 0
    for _ in range(rounds):
        for user in users:
            a = engine.next_assignment(user, study)
            if a is None:
                continue
            result = submit_label(
                annotator=user,
                assignment_token=a.token,
                data=answer(a),
                idempotency_key=uuid.uuid4(),
                timings={"duration_ms": 1500 + made, "active_ms": 900},
            )
            assert result.status == "stored", result
            made += 1
    return made


def check(study: Study) -> None:
    expected = reference_rows(study)
    assert expected, "the study has no labels to export"
    assert list(label_rows(study)) == expected
    assert [dict(zip(COLUMNS, r, strict=True)) for r in label_tuples(study)] == expected
    assert "".join(csv_text(label_tuples(study), COLUMNS, FREE_TEXT)) == reference_csv(expected)
    assert "".join(jsonl_text(label_tuples(study), COLUMNS)) == reference_jsonl(expected)
    # The dict rows through the writers' defaults give the same text.
    assert "".join(csv_text(label_rows(study), COLUMNS)) == reference_csv(expected)
    assert "".join(jsonl_text(label_rows(study))) == reference_jsonl(expected)
    # What the export page, the API and the command serve.
    assert "".join(label_text(study, "csv")) == reference_csv(expected)
    assert "".join(label_text(study, "jsonl")) == reference_jsonl(expected)


def test_output_units_with_gold_repeats_pools_pseudonyms_and_guide_versions():
    study = make_study(
        Study.TaskKind.CATEGORICAL,
        n_prompts=8,
        gold_rate=0.2,
        repeat_rate=0.2,
        repeat_min_gap_units=1,
        repeat_min_gap_minutes=0,
        overlap=2,
        status="live",
        label_scheme={
            "labels": [{"value": "-bad", "text": "Bad"}, {"value": "good", "text": "Good"}]
        },
    )
    for unit in Unit.objects.filter(study=study).order_by("id")[:3]:
        setup.mark_gold(unit, {"choice": "good"})
    GuideVersion.objects.create(study=study, number=1, body="Judge the answer.")
    named = enrol(study, external_id="=rater-one", pool=Enrolment.Pool.EXPERT).user
    plain = enrol(study).user
    made = work(study, [named, plain], lambda a: {"choice": "-bad"}, rounds=10)
    purposes = set(Label.objects.filter(study=study).values_list("purpose", flat=True))
    assert made >= 10 and {"production", "gold", "repeat"} <= purposes
    check(study)


def test_pair_units_from_the_engine_and_from_an_import():
    study = make_study(Study.TaskKind.PAIRWISE, n_prompts=6, overlap=3, status="live")
    users = [enrol(study).user for _ in range(2)]
    work(study, users, lambda a: {"choice": "left"}, rounds=2)
    untouched = study.units.filter(assignments__isnull=True).first().external_id
    job = run(
        study,
        "labels",
        csv_bytes(
            "id,annotator,unit,left,right,value,created_at,rendered_at,duration_ms",
            [
                f"X1,imp-a,{untouched},beta,alpha,right,2025-01-02T03:04:05+00:00,"
                "2025-01-02T03:03:05+00:00,60000",
                f"X2,imp-b,{untouched},alpha,beta,tie,,,",
            ],
        ),
        "l.csv",
    )
    assert job.status == "done", job.errors
    check(study)


def test_spa_batches_one_row_per_question():
    study = make_study(
        Study.TaskKind.SPA,
        n_prompts=4,
        systems=("a", "b", "c"),
        spa_exposure_m=2,
        spa_both_directions=True,
        overlap=2,
        status="live",
    )
    users = [enrol(study).user for _ in range(2)]

    def answer(a):
        return {f"p_{i}": str(30 + 10 * i) for i in range(len(a.presentation["questions"]))}

    work(study, users, answer, rounds=1)
    check(study)
