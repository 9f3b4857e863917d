"""The lead's dashboard: stored numbers, report age, worker warnings, downloads, chart specs."""

import csv
import io
import json
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.models import Membership
from qc import charts, services
from qc.models import QualityReport, RecomputeState, WorkerHeartbeat
from tests.factories import MembershipFactory, UserFactory
from tests.qc import simulate

pytestmark = pytest.mark.django_db


def lead_of(study):
    return MembershipFactory(workspace=study.workspace, role=Membership.Role.LEAD).user


@pytest.fixture
def reported(settings):
    settings.CONCORD_QC_BOOTSTRAP = 100
    study, _ = simulate.categorical_study(n_prompts=20)
    services.recompute(study.pk)
    return study


def test_dashboard_shows_the_stored_numbers_and_the_report_age(client, reported):
    client.force_login(lead_of(reported))
    response = client.get(reverse("study-dashboard", args=[reported.token]))
    assert response.status_code == 200
    report = QualityReport.objects.get(study=reported, kind="study")
    fleiss = next(
        s for s in report.payload["agreement"]["statistics"] if s["key"] == "chance_corrected"
    )
    html = response.content.decode()
    assert f"{fleiss['value']:.3f}" in html
    assert "Report computed" in html and "ago" in html
    assert 'id="spec-label-distribution"' in html
    assert "<script>" not in html  # CSP: no inline scripts, data blocks only


def test_dashboard_is_read_from_stored_reports_without_computing(client, reported, monkeypatch):
    from qc import loaders, reports

    computed = lambda *a, **k: pytest.fail("computed")  # noqa: E731
    monkeypatch.setattr(reports, "build_report", computed)
    monkeypatch.setattr(services, "build_report", computed)  # the name the worker calls
    monkeypatch.setattr(loaders, "load_snapshot", computed)
    client.force_login(lead_of(reported))
    assert client.get(reverse("study-dashboard", args=[reported.token])).status_code == 200


def test_dashboard_of_another_workspace_answers_404(client, reported):
    client.force_login(UserFactory())
    assert client.get(reverse("study-dashboard", args=[reported.token])).status_code == 404
    assert client.get(reverse("study-report-json", args=[reported.token])).status_code == 404
    url = reverse("study-report-csv", args=[reported.token, "agreement"])
    assert client.get(url).status_code == 404


def test_dashboard_without_a_report_says_so(client):
    study, _ = simulate.categorical_study(n_prompts=2)
    client.force_login(lead_of(study))
    html = client.get(reverse("study-dashboard", args=[study.token])).content.decode()
    assert "No report has been computed yet" in html


def test_dashboard_says_plainly_when_the_broker_has_no_worker(client, reported, broker_mode):
    RecomputeState.objects.filter(study=reported).update(
        pending_since=timezone.now() - timedelta(minutes=5), started_at=None
    )
    client.force_login(lead_of(reported))
    html = client.get(reverse("study-dashboard", args=[reported.token])).content.decode()
    assert "No Celery worker is running" in html
    assert "No worker has been seen yet" in html
    assert "waiting" in html


def test_no_worker_warning_when_a_worker_was_seen_recently(client, reported, broker_mode):
    WorkerHeartbeat.objects.create(hostname="w1@host", seen_at=timezone.now())
    client.force_login(lead_of(reported))
    html = client.get(reverse("study-dashboard", args=[reported.token])).content.decode()
    assert "No Celery worker is running" not in html


def test_recompute_now_queues_a_run_and_shows_progress(client, reported, monkeypatch):
    from qc import tasks

    sent = []
    monkeypatch.setattr(tasks.recompute_study, "apply_async", lambda *a, **kw: sent.append(kw))
    lead = lead_of(reported)
    client.force_login(lead)
    url = reverse("study-recompute", args=[reported.token])
    response = client.post(url, headers={"HX-Request": "true"})
    assert response.status_code == 200
    assert "A recomputation is queued" in response.content.decode()
    assert 'hx-trigger="every 1s"' in response.content.decode()
    state = RecomputeState.objects.get(study=reported)
    assert sent == [{"args": [reported.pk], "countdown": 0, "task_id": state.task_id}]
    assert RecomputeState.objects.get(study=reported).requested_by == lead


def test_unanimous_view_toggle_recomputes_and_shows_both_sets(client, reported):
    client.force_login(lead_of(reported))
    client.post(reverse("study-report-options", args=[reported.token]), {"unanimous_view": "on"})
    html = client.get(reverse("study-dashboard", args=[reported.token])).content.decode()
    assert "Unanimous items only" in html
    assert "Full set" in html


def test_whole_report_downloads_as_strict_json(client, reported):
    client.force_login(lead_of(reported))
    response = client.get(reverse("study-report-json", args=[reported.token]))
    assert response["Content-Disposition"].startswith("attachment")
    body = json.loads(response.content)
    assert body["report"]["agreement"]["statistics"]
    assert len(body["items"]["unit"]) == 20


@pytest.mark.parametrize(
    "table",
    [
        "agreement",
        "label-distribution",
        "agreement-over-time",
        "labels-per-day",
        "design",
        "disagreements",
        "soft-labels",
    ],
)
def test_every_table_downloads_as_csv(client, reported, table):
    client.force_login(lead_of(reported))
    response = client.get(reverse("study-report-csv", args=[reported.token, table]))
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv"
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert rows[0]
    if table == "soft-labels":
        assert rows[0][-2:] == ["soft:safe", "soft:unsafe"]
        assert len(rows) == 21


def test_spa_dashboard_marks_the_preregistered_table_and_flags_reversals(client):
    study, _ = simulate.spa_study(
        [(0.7, "x")], n_annotators=30, tau=1.1, likert={"s0": 3.0, "s1": 3.8}
    )
    services.recompute(study.pk)
    client.force_login(lead_of(study))
    html = client.get(reverse("study-dashboard", args=[study.token])).content.decode()
    assert "pre-registered" in html
    assert 'data-flag="reversal"' in html
    assert 'id="spec-spa"' in html
    url = reverse("study-report-csv", args=[study.token, "spa-filtered"])
    rows = list(csv.reader(io.StringIO(b"".join(client.get(url).streaming_content).decode())))
    assert rows[1][:3] == ["s0", "s1", "x"]


def test_pairwise_dashboard_shows_bradley_terry_and_left_choice(client, settings):
    settings.CONCORD_QC_BOOTSTRAP = 50
    study = simulate.pairwise_study()
    services.recompute(study.pk)
    client.force_login(lead_of(study))
    html = client.get(reverse("study-dashboard", args=[study.token])).content.decode()
    assert "Bradley-Terry strengths" in html and "Left-choice rate" in html
    assert 'id="spec-bradley-terry"' in html


def test_likert_classes_read_as_whole_numbers_on_the_page_in_charts_and_csv(client, settings):
    settings.CONCORD_QC_BOOTSTRAP = 50
    study = simulate.likert_study()
    services.recompute(study.pk)
    client.force_login(lead_of(study))
    html = client.get(reverse("study-dashboard", args=[study.token])).content.decode()
    assert '<th scope="row">3</th>' in html and '<th scope="row">3.0</th>' not in html
    summary = QualityReport.objects.get(study=study, kind="study").payload
    chart = charts.for_report(summary)["label_distribution"]
    assert [v["label"] for v in chart["data"]["values"]] == ["1", "2", "3", "4", "5"]
    url = reverse("study-report-csv", args=[study.token, "soft-labels"])
    rows = list(csv.reader(io.StringIO(b"".join(client.get(url).streaming_content).decode())))
    assert rows[0][-5:] == ["soft:1", "soft:2", "soft:3", "soft:4", "soft:5"]
    majority = rows[0].index("majority")
    assert {r[majority] for r in rows[1:]} <= {"1", "2", "3", "4", "5"}
    body = json.loads(client.get(reverse("study-report-json", args=[study.token])).content)
    assert body["report"]["agreement"]["distribution"][0]["value"] == 1.0
    assert all(isinstance(v, float) for v in body["items"]["majority"])


def test_spa_chart_spec_says_what_the_table_says():
    table = [
        {"x": "a", "y": "b", "spa": {"mean": 0.62, "ci_low": 0.55, "ci_high": 0.69, "stars": "***"}}
    ]
    spec = charts.spa_intervals(table, "unfiltered")
    assert spec["$schema"].endswith("vega-lite/v6.json")
    assert spec["data"]["values"] == [
        {"label": "a vs b", "value": 0.62, "ci_low": 0.55, "ci_high": 0.69, "stars": "***"}
    ]
    reference = spec["layer"][0]
    assert reference["data"]["values"] == [{"ref": 0.5}]
    assert spec["layer"][1]["encoding"]["x2"] == {"field": "ci_high"}
    json.dumps(spec, allow_nan=False)


def test_chart_specs_for_a_report_cover_distribution_and_agreement_over_time(settings):
    settings.CONCORD_QC_BOOTSTRAP = 50
    study, _ = simulate.categorical_study(n_prompts=20)
    # labels on two days, so agreement over time has two points
    first = list(study.labels.order_by("id").values_list("id", flat=True))[:30]
    study.labels.filter(id__in=first).update(created_at=timezone.now() - timedelta(days=1))
    services.recompute(study.pk)
    summary = QualityReport.objects.get(study=study, kind="study").payload
    specs = charts.for_report(summary)
    assert set(specs) >= {"label_distribution", "agreement_over_time", "labels_per_day"}
    assert charts.empty_notes(summary) == {}
    values = specs["label_distribution"]["data"]["values"]
    assert sum(v["count"] for v in values) == summary["progress"]["labels"]
    assert specs["agreement_over_time"]["layer"][0]["encoding"]["y2"] == {"field": "ci_high"}


def test_a_single_day_says_not_enough_data_instead_of_a_single_dot(reported):
    summary = QualityReport.objects.get(study=reported, kind="study").payload
    assert len(summary["agreement_over_time"]["points"]) == 1
    assert "agreement_over_time" not in charts.for_report(summary)
    assert charts.empty_notes(summary)["agreement_over_time"].startswith("Not enough data yet")


def test_dashboard_query_count_does_not_grow_with_labels(
    client, reported, django_assert_max_num_queries
):
    client.force_login(lead_of(reported))
    with django_assert_max_num_queries(12):
        client.get(reverse("study-dashboard", args=[reported.token]))
