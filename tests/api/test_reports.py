"""Reports through the API: the stored summary, each table as JSON, aggregated labels, and a
recompute request; nothing is computed inside the request."""

import csv
import io

import pytest
from django.urls import reverse

from annotation.models import Membership
from qc import exports, services
from tests.api.conftest import token_client
from tests.factories import MembershipFactory
from tests.qc import simulate

pytestmark = pytest.mark.django_db


def lead_of(study):
    return token_client(
        MembershipFactory(workspace=study.workspace, role=Membership.Role.LEAD).user
    )


@pytest.fixture
def reported(settings):
    settings.CONCORD_QC_BOOTSTRAP = 100
    study, _ = simulate.categorical_study(n_prompts=12)
    services.recompute(study.pk)
    return study


def test_report_is_null_until_a_worker_stored_one(world):
    body = token_client(world.lead).get(reverse("api-report", args=[world.study.token])).json()
    assert body["report"] is None and body["fingerprint"] is None
    table = reverse("api-report-table", args=[world.study.token, "agreement"])
    assert token_client(world.lead).get(table).status_code == 404


def test_report_is_the_stored_payload(reported):
    from qc.selectors import latest_report

    body = lead_of(reported).get(reverse("api-report", args=[reported.token])).json()
    stored = latest_report(reported)
    assert body["fingerprint"] == stored.fingerprint
    assert body["label_count"] == stored.label_count
    assert body["report"]["agreement"] == stored.payload["agreement"]


@pytest.mark.parametrize("table", list(exports.TABLES))
def test_each_table_matches_the_csv_download(client, reported, table):
    lead = MembershipFactory(workspace=reported.workspace, role=Membership.Role.LEAD).user
    client.force_login(lead)
    download = client.get(reverse("study-report-csv", args=[reported.token, table]))
    rows = list(csv.reader(io.StringIO(b"".join(download.streaming_content).decode())))
    body = token_client(lead).get(reverse("api-report-table", args=[reported.token, table])).json()
    assert body["columns"] == rows[0]
    as_text = [["" if c is None else str(c) for c in row] for row in body["rows"]]
    assert as_text == rows[1:]


def test_an_unknown_table_is_404(reported):
    url = reverse("api-report-table", args=[reported.token, "nope"])
    assert lead_of(reported).get(url).status_code == 404


def test_aggregated_labels_page_through_every_unit(reported):
    from qc.selectors import latest_items, latest_report

    items = latest_items(reported, latest_report(reported).fingerprint).payload
    client = lead_of(reported)
    url = reverse("api-aggregated-labels", args=[reported.token])
    seen, page = [], client.get(url, {"limit": 5}).json()
    assert page["count"] == len(items["unit"])
    while True:
        seen += page["results"]
        if not page["next"]:
            break
        page = client.get(page["next"]).json()
    assert [r["unit"] for r in seen] == items["unit"]
    first = seen[0]
    assert first["majority"] == items["majority"][0]
    assert first["soft"] == dict(zip(items["classes"], items["soft"][0], strict=True))
    assert abs(sum(first["soft"].values()) - 1) < 1e-6


def test_recompute_is_requested_by_the_lead_only(world):
    url = reverse("api-report-recompute", args=[world.study.token])
    response = token_client(world.lead).post(url)
    assert response.status_code == 202 and isinstance(response.json()["queued"], bool)
    assert token_client(world.annotator).post(url).status_code == 404
