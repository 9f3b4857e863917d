"""The aggregated export says which items an expert adjudicated (decision, reference, who, when),
from the separate adjudication record, in CSV and JSON Lines; raw labels are untouched."""

import csv
import io
import json

import pytest
from django.urls import reverse

from annotation.models import Label, Membership, Unit
from qc import services
from qc.raters import services as review
from tests.factories import MembershipFactory, UserFactory
from tests.qc import simulate

pytestmark = pytest.mark.django_db


@pytest.fixture
def adjudicated(settings):
    settings.CONCORD_QC_BOOTSTRAP = 20
    settings.CONCORD_QC_BOOTSTRAP_OVER_TIME = 10
    study, _ = simulate.categorical_study(n_prompts=10, accuracy=0.75, seed=3)
    services.recompute(study.pk)
    # a username that would start a spreadsheet formula: the CSV must still write it as text
    expert = UserFactory(username="@SUM(1+1)")
    MembershipFactory(workspace=study.workspace, user=expert, role=Membership.Role.LEAD)
    unit = Unit.objects.filter(study=study, role="production").order_by("id")[3]
    raw = list(Label.objects.filter(study=study).order_by("id").values_list("id", "choice"))
    made = review.adjudicate(
        study, unit, expert, "rubric_conflict", "reference", "Ruling 4 applies.", "unsafe"
    )
    return study, unit, expert, made, raw


def _csv(client, study, table):
    response = client.get(reverse("study-report-csv", args=[study.token, table]))
    return list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))


def test_the_aggregated_csv_marks_the_adjudicated_item_only(client, adjudicated):
    study, unit, expert, made, raw = adjudicated
    client.force_login(expert)
    header, *rows = _csv(client, study, "soft-labels")
    records = [dict(zip(header, r, strict=True)) for r in rows]
    marked = [r for r in records if r["adjudicated"] == "True"]
    assert [r["unit"] for r in marked] == [unit.token]
    (row,) = marked
    assert row["adjudicated_decision"] == "reference"
    assert row["adjudicated_value"] == "unsafe"
    assert row["adjudicated_by"] == "'@SUM(1+1)"  # formula-escaped, not a formula
    assert row["adjudicated_at"] == made.created_at.isoformat()
    others = [r for r in records if r["unit"] != unit.token]
    assert others and all(r["adjudicated"] == "False" for r in others)
    assert all(r["adjudicated_value"] == r["adjudicated_by"] == "" for r in others)
    # the aggregated labels themselves are the report's, and raw labels are untouched
    assert row["majority"] in ("safe", "unsafe")
    assert header[-2:] == ["soft:safe", "soft:unsafe"]
    after = list(Label.objects.filter(study=study).order_by("id").values_list("id", "choice"))
    assert after == raw


def test_the_aggregated_jsonl_says_the_same(client, adjudicated):
    study, unit, expert, made, _ = adjudicated
    client.force_login(expert)
    response = client.get(reverse("study-aggregated-jsonl", args=[study.token]))
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/x-ndjson")
    lines = b"".join(response.streaming_content).decode().splitlines()
    records = [json.loads(line) for line in lines]
    assert len(records) == len(_csv(client, study, "soft-labels")) - 1
    marked = [r for r in records if r["adjudicated"]]
    assert [r["unit"] for r in marked] == [unit.token]
    assert marked[0]["adjudicated_by"] == "@SUM(1+1)"  # JSON carries the name as it is
    assert marked[0]["adjudicated_value"] == "unsafe"
    assert set(marked[0]["soft"]) == {"safe", "unsafe"}
    assert all(r["adjudicated"] is False for r in records if r["unit"] != unit.token)


def test_a_later_decision_supersedes_the_earlier_one_in_the_export(client, adjudicated):
    study, unit, expert, _, _ = adjudicated
    review.adjudicate(study, unit, expert, "genuine_ambiguity", "distribution", "Both readings.")
    client.force_login(expert)
    header, *rows = _csv(client, study, "soft-labels")
    (row,) = [dict(zip(header, r, strict=True)) for r in rows if r[0] == unit.token]
    assert row["adjudicated"] == "True"
    assert row["adjudicated_decision"] == "distribution" and row["adjudicated_value"] == ""
