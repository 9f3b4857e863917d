"""The raw label export: full context per label, one row per SPA question, streamed, escaped."""

import csv
import io
import json

import pytest
from django.urls import reverse

from annotation.exports.labels import COLUMNS
from annotation.models import Membership
from annotation.services import setup
from tests.factories import MembershipFactory, StudyFactory
from tests.imports.helpers import csv_bytes, jsonl_bytes, load_content, run

pytestmark = pytest.mark.django_db


def download(client, study, fmt):
    client.force_login(MembershipFactory(workspace=study.workspace, role=Membership.Role.LEAD).user)
    response = client.get(reverse("studio-export-labels", args=[study.token, fmt]))
    assert response.status_code == 200
    assert response.streaming
    assert "attachment" in response["Content-Disposition"]
    return b"".join(response.streaming_content).decode()


def pairwise_study():
    study = StudyFactory(status="live", task_kind="pairwise", overlap=2)
    load_content(study, n_prompts=2)
    setup.build_units(study)
    run(
        study,
        "systems",
        csv_bytes("name,description", ["alpha,System alpha", "beta,System beta"]),
        "s.csv",
    )
    job = run(
        study,
        "labels",
        csv_bytes(
            "id,annotator,unit,left,right,value,purpose,repeat_of,created_at,duration_ms,pool",
            [
                "P1,@evil,p0:alpha~beta,beta,alpha,left,production,,2025-01-02T03:04:05+00:00,900,expert",
                "P2,+cmd,p0:alpha~beta,alpha,beta,tie,production,,,,",
                "P3,@evil,p0:alpha~beta,alpha,beta,right,repeat,P1,,,",
            ],
        ),
        "l.csv",
    )
    assert job.status == "done", job.errors
    return study


def test_the_csv_export_has_every_label_with_its_context_and_escapes_formulas(client):
    study = pairwise_study()
    rows = list(csv.DictReader(io.StringIO(download(client, study, "csv"))))
    assert list(rows[0]) == COLUMNS
    by_id = {r["label_external_id"]: r for r in rows}
    p1 = by_id["P1"]
    assert p1["annotator"] == "'@evil"  # a formula-like pseudonym is escaped
    assert by_id["P2"]["annotator"] == "'+cmd"
    assert (p1["pool"], p1["purpose"], p1["unit"], p1["prompt"]) == (
        "expert",
        "production",
        "p0:alpha~beta",
        "p0",
    )
    assert p1["systems_shown"] == "left=beta;right=alpha"
    assert p1["outputs_shown"] == "o0beta;o0alpha"
    assert (p1["choice"], p1["winner"]) == ("left", "beta")
    assert p1["created_at"].startswith("2025-01-02T03:04:05")
    assert p1["duration_ms"] == "900"
    assert by_id["P3"]["repeat_of"] == "P1"
    assert by_id["P2"]["winner"] == ""
    assert json.loads(p1["presentation"])["kind"] == "pair"


def test_spa_answers_come_one_row_per_question_in_csv_and_jsonl(client):
    study = StudyFactory(status="live", task_kind="spa", overlap=2, spa_exposure_m=2)
    load_content(study, systems=("alpha", "beta", "gamma"), n_prompts=2)
    run(study, "comparisons", csv_bytes("system_x,system_y", ["alpha,beta", "beta,gamma"]), "c.csv")
    setup.build_units(study)
    base = {"id": "S1", "annotator": "r1", "unit": "spa-1"}
    job = run(
        study,
        "labels",
        jsonl_bytes(
            [
                dict(base, system_x="alpha", system_y="beta", value=80),
                dict(base, system_x="beta", system_y="gamma", value=30),
            ]
        ),
        "spa.jsonl",
    )
    assert job.status == "done", job.errors
    rows = list(csv.DictReader(io.StringIO(download(client, study, "csv"))))
    assert [(r["comparison"], r["direction"], r["probability"]) for r in rows] == [
        ("alpha vs beta", "forward", "80.0"),
        ("beta vs gamma", "forward", "30.0"),
    ]
    lines = [json.loads(line) for line in download(client, study, "jsonl").splitlines()]
    assert [(r["comparison"], r["probability"]) for r in lines] == [
        ("alpha vs beta", 80.0),
        ("beta vs gamma", 30.0),
    ]
    assert all(r["annotator"] == "r1" and r["unit"] == "spa-1" for r in lines)


def test_an_exported_label_file_imports_back_into_a_fresh_copy_of_the_study(client):
    """Export -> import round trip: the columns an import needs are all in the export."""
    study = pairwise_study()
    rows = list(csv.DictReader(io.StringIO(download(client, study, "csv"))))
    copy = StudyFactory(status="draft", task_kind="pairwise", overlap=2, workspace=study.workspace)
    load_content(copy, n_prompts=2)
    setup.build_units(copy)
    lines = []
    for r in rows:
        sides = dict(s.split("=") for s in r["systems_shown"].split(";"))
        original = r["repeat_of"]
        lines.append(
            {
                "id": r["label_external_id"],
                "annotator": r["annotator"].lstrip("'"),
                "unit": r["unit"],
                "left": sides["left"],
                "right": sides["right"],
                "value": r["choice"],
                "purpose": r["purpose"],
                "repeat_of": original,
                "created_at": r["created_at"],
            }
        )
    job = run(copy, "labels", jsonl_bytes(lines), "back.jsonl")
    assert (job.status, job.created) == ("done", 3), job.errors
