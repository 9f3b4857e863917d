"""Importing labels from another tool: context kept, engine rules held, all or nothing."""

import pytest

from annotation.models import Assignment, Enrolment, GuideVersion, Label, SpaAnswer, Unit
from annotation.services import setup
from tests.factories import StudyFactory
from tests.imports.helpers import csv_bytes, jsonl_bytes, load_content, run

pytestmark = pytest.mark.django_db

HEADER = "id,annotator,unit,value,purpose,repeat_of,created_at,duration_ms,guide_version,pool"


def categorical_study(**fields):
    study = StudyFactory(status="draft", task_kind="categorical", overlap=2, **fields)
    load_content(study, n_prompts=3)
    setup.build_units(study)
    GuideVersion.objects.create(study=study, number=1, body="Guide")
    return study


def test_labels_are_imported_with_their_context_and_count_against_the_overlap():
    study = categorical_study()
    data = csv_bytes(
        HEADER,
        [
            "L1,rater-a,o0alpha,safe,production,,2025-03-01T10:00:00+00:00,4200,1,expert",
            "L2,rater-b,o0alpha,unsafe,production,,2025-03-01T10:05:00+00:00,,,",
            "L3,rater-a,o1beta,unsafe,gold,,2025-03-01T10:06:00+00:00,,,",
            "L4,rater-a,o0alpha,safe,repeat,L1,2025-03-02T09:00:00+00:00,,,",
        ],
    )
    job = run(study, "labels", data, "labels.csv")
    assert job.status == "done", job.errors
    assert (job.created, job.unchanged) == (4, 0)
    l1 = Label.objects.get(study=study, external_id="L1")
    assert (l1.choice, l1.purpose, l1.duration_ms) == ("safe", "production", 4200)
    assert l1.created_at.isoformat() == "2025-03-01T10:00:00+00:00"
    assert l1.guide_version.number == 1
    assert l1.assignment.status == "submitted"
    repeat = Label.objects.get(external_id="L4")
    assert repeat.assignment.repeat_of == l1.assignment
    e = Enrolment.objects.get(study=study, user=l1.annotator)
    assert (e.external_id, e.pool) == ("rater-a", "expert")
    assert not l1.annotator.has_usable_password()
    assert Unit.objects.get(external_id="o0alpha").open_slots == 0  # overlap 2, two labels
    assert Unit.objects.get(external_id="o1beta").open_slots == 2  # gold holds no slot

    again = run(study, "labels", data, "labels.csv")
    assert (again.status, again.created, again.unchanged) == ("done", 0, 4)
    assert Label.objects.filter(study=study).count() == 4


def test_labels_that_break_the_engine_rules_are_refused_and_nothing_is_written():
    study = categorical_study()
    data = csv_bytes(
        HEADER,
        [
            "L1,rater-a,o0alpha,safe,production,,,,,",
            "L2,rater-b,o0alpha,safe,production,,,,,",
            "L3,rater-c,o0alpha,safe,production,,,,,",  # beyond overlap 2
            "L4,rater-a,o0alpha,unsafe,production,,,,,",  # rater-a twice on one unit
            "L5,rater-a,o9zzz,safe,production,,,,,",  # unknown unit
            "L6,rater-a,o1beta,maybe,production,,,,,",  # not a category
            "L7,rater-a,o1beta,safe,repeat,NOPE,,,,",  # repeats nothing known
            "L8,rater-a,o2beta,safe,production,,yesterday,,,",  # bad time
            "L9,rater-d,o2beta,safe,production,,,,7,",  # no guide version 7
        ],
    )
    job = run(study, "labels", data, "labels.csv")
    assert job.status == "failed"
    got = {(e["line"], e["field"]) for e in job.errors}
    assert got == {
        (4, "unit"),
        (5, "annotator"),
        (5, "unit"),  # also a fourth production label on a unit of overlap 2
        (6, "unit"),
        (7, "value"),
        (8, "repeat_of"),
        (9, "created_at"),
        (10, "guide_version"),
    }, job.errors
    assert not Label.objects.filter(study=study).exists()
    assert not Assignment.objects.filter(study=study).exists()
    assert set(Unit.objects.filter(study=study).values_list("open_slots", flat=True)) == {2}


def spa_study():
    study = StudyFactory(status="draft", task_kind="spa", overlap=3, spa_exposure_m=2)
    load_content(study, systems=("alpha", "beta", "gamma"), n_prompts=2)
    run(study, "comparisons", csv_bytes("system_x,system_y", ["alpha,beta", "beta,gamma"]), "c.csv")
    setup.build_units(study)
    return study


def test_spa_answers_come_one_row_per_question_and_a_probability_of_140_is_refused():
    study = spa_study()
    rows = [
        {
            "id": "S1",
            "annotator": "r1",
            "unit": "spa-1",
            "system_x": "alpha",
            "system_y": "beta",
            "value": 70,
        },
        {
            "id": "S1",
            "annotator": "r1",
            "unit": "spa-1",
            "system_x": "beta",
            "system_y": "gamma",
            "value": 40,
        },
        {
            "id": "S1",
            "annotator": "r1",
            "unit": "spa-1",
            "system_x": "alpha",
            "system_y": "beta",
            "direction": "reverse",
            "value": 35,
        },
    ]
    bad = [*rows[:2], dict(rows[2], value=140)]
    job = run(study, "labels", jsonl_bytes(bad), "spa.jsonl")
    assert job.status == "failed"
    assert job.errors == [{"line": 3, "field": "value", "reason": "140 is outside 0 to 100"}]
    assert not Label.objects.filter(study=study).exists()

    job = run(study, "labels", jsonl_bytes(rows), "spa.jsonl")
    assert (job.status, job.created) == ("done", 1), job.errors
    answers = SpaAnswer.objects.filter(label__external_id="S1").order_by("position")
    got = [(a.comparison.system_x.name, a.reverse, a.probability) for a in answers]
    assert got == [("alpha", False, 70.0), ("beta", False, 40.0), ("alpha", True, 35.0)]


def test_pairwise_labels_keep_the_sides_shown_and_the_canonical_winner():
    study = StudyFactory(status="draft", task_kind="pairwise", overlap=2)
    load_content(study, n_prompts=2)
    setup.build_units(study)
    data = csv_bytes(
        "id,annotator,unit,left,right,value",
        [
            "P1,r1,p0:alpha~beta,beta,alpha,left",
            "P2,r2,p0:alpha~beta,alpha,beta,tie",
            "P3,r1,p1:alpha~beta,alpha,gamma,left",
        ],
    )
    job = run(study, "labels", data, "pairs.csv")
    assert job.status == "failed"
    assert [(e["line"], e["field"]) for e in job.errors] == [(4, "right")]  # unknown system
    job = run(
        study,
        "labels",
        csv_bytes(
            "id,annotator,unit,left,right,value",
            ["P1,r1,p0:alpha~beta,beta,alpha,left", "P2,r2,p0:alpha~beta,alpha,beta,tie"],
        ),
        "p.csv",
    )
    assert job.status == "done", job.errors
    p1 = Label.objects.get(external_id="P1")
    assert (p1.choice, p1.winner.name) == ("left", "beta")
    left = p1.assignment.presentation["left"]
    assert p1.unit.members.get(output_id=left).output.system.name == "beta"
    assert Label.objects.get(external_id="P2").winner is None


@pytest.mark.postgres
def test_copied_rows_get_the_fields_defaults_and_keep_what_they_give():
    """copy_rows: a left-out field takes its default (a token drawn per row, "" for the skip
    reason, {} for JSON), an auto_now_add time is written as given, nothing else is invented."""
    from datetime import UTC, datetime

    from annotation.imports.labels import _next_ids, copy_rows
    from annotation.models import Assignment
    from tests.factories import enrol, make_study

    study = make_study(n_prompts=2)
    unit = study.units.first()
    user = enrol(study).user
    moment = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    ids = _next_ids(Assignment, 2)
    rows = [
        {
            "id": pk,
            "study_id": study.pk,
            "unit_id": unit.pk,
            "annotator_id": user.pk,
            "purpose": "gold" if n else "production",
            "status": "submitted",
            "position": n + 1,
            "presentation": {"kind": "output", "output": None},
            "leased_at": moment,
            "expires_at": moment,
        }
        for n, pk in enumerate(ids)
    ]
    copy_rows(Assignment, rows)
    made = list(Assignment.objects.filter(pk__in=ids).order_by("pk"))
    assert [a.pk for a in made] == ids
    assert len({a.token for a in made}) == 2 and all(len(a.token) == 22 for a in made)
    assert [a.skip_reason for a in made] == ["", ""]
    assert [a.closed_at for a in made] == [None, None]
    assert made[0].presentation == {"kind": "output", "output": None}
    assert made[1].leased_at == moment
