"""Triage, adjudication and audits: raw labels stay, decisions are separate records, random and
targeted audits are kept apart and only random ones estimate the pool's error rate."""

import pytest
from django.urls import reverse

from annotation.models import Label, Membership
from qc import services
from qc.models import Adjudication, Audit, AuditItem, QualityReport
from qc.raters import services as review
from qc.raters.services import ReviewError
from tests.factories import MembershipFactory
from tests.qc import simulate

pytestmark = pytest.mark.django_db


@pytest.fixture
def study(settings):
    settings.CONCORD_QC_BOOTSTRAP = 20
    settings.CONCORD_QC_BOOTSTRAP_OVER_TIME = 10
    study, _ = simulate.categorical_study(n_prompts=30, accuracy=0.75, seed=3)
    services.recompute(study.pk)
    return study


@pytest.fixture
def lead(study):
    return MembershipFactory(workspace=study.workspace, role=Membership.Role.LEAD).user


def raters_summary(study) -> dict:
    return QualityReport.objects.filter(study=study, kind="raters").latest("created_at").payload


def test_triage_queue_lists_split_votes_and_ds_disagreements_first(study):
    queue = raters_summary(study)["triage"]
    assert queue["n_listed"] > 0 and queue["rows"]
    whys = [r["why"] for r in queue["rows"]]
    n_ds = queue["n_ds_differs"]
    assert all(w.startswith("Dawid-Skene") for w in whys[:n_ds])
    assert all(w == "split vote" for w in whys[n_ds:])
    for r in queue["rows"]:
        assert sum(v["count"] for v in r["votes"]) == r["labels"]
        assert len(r["votes"]) >= 2 or r["why"].startswith("Dawid-Skene")


def test_adjudication_is_a_separate_record_and_never_deletes_raw_labels(client, study, lead):
    row = raters_summary(study)["triage"]["rows"][0]
    before = list(Label.objects.filter(study=study).order_by("id").values_list("id", "choice"))
    client.force_login(lead)
    url = reverse("triage-item", args=[study.token, row["unit"]])
    page = client.get(url)
    assert page.status_code == 200
    response = client.post(
        url,
        {
            "cause": "rubric_conflict",
            "decision": "reference",
            "reference": "unsafe",
            "rationale": "Counter-stored rice stays unsafe; see the ruling.",
        },
    )
    assert response.status_code == 302
    after = list(Label.objects.filter(study=study).order_by("id").values_list("id", "choice"))
    assert after == before
    adj = Adjudication.objects.get(study=study)
    assert (adj.adjudicator, adj.cause, adj.reference) == (lead, "rubric_conflict", "unsafe")
    assert adj.created_at is not None and "rice" in adj.rationale
    # a second decision is a new row; the queue shows the latest
    client.post(url, {"cause": "genuine_ambiguity", "decision": "distribution", "rationale": "x"})
    assert Adjudication.objects.filter(study=study).count() == 2
    html = client.get(reverse("study-triage", args=[study.token])).content.decode()
    assert "Keep the distribution" in html
    assert Label.objects.filter(study=study).count() == len(before)


def test_adjudication_refuses_incomplete_decisions_and_names_the_field(client, study, lead):
    row = raters_summary(study)["triage"]["rows"][0]
    client.force_login(lead)
    url = reverse("triage-item", args=[study.token, row["unit"]])
    bad = client.post(url, {"cause": "rubric_conflict", "decision": "reference", "rationale": "y"})
    assert bad.status_code == 400 and "choose the reference label" in bad.content.decode()
    bad = client.post(
        url,
        {
            "cause": "rubric_conflict",
            "decision": "reference",
            "reference": "maybe",
            "rationale": "y",
        },
    )
    assert bad.status_code == 400 and "not a label of this study" in bad.content.decode()
    bad = client.post(url, {"cause": "nope", "decision": "distribution", "rationale": "y"})
    assert bad.status_code == 400
    assert not Adjudication.objects.exists()


def test_random_and_targeted_audits_are_kept_apart(study, lead):
    rater = Label.objects.filter(study=study).first().annotator
    random_audit = review.draw_audit(study, "random", 10, lead, seed=1)
    targeted = review.draw_audit(study, "targeted", 8, lead, annotator=rater, seed=2)
    assert random_audit.items.count() == 10 and targeted.items.count() == 8
    assert {i.label.annotator_id for i in targeted.items.all()} == {rater.pk}
    for n, item in enumerate(random_audit.items.all()):
        review.check_audit_item(item, "wrong" if n < 2 else "correct", lead)
    for item in targeted.items.all():
        review.check_audit_item(item, "wrong", lead)
    services.recompute(study.pk)  # labels unchanged: only the rater report is recomputed
    section = raters_summary(study)["audits"]
    pool = section["pool_error"]
    assert (pool["wrong"], pool["checked"]) == (2, 10)
    assert pool["rate"] == pytest.approx(0.2)
    assert pool["ci_low"] < 0.2 < pool["ci_high"]
    assert (section["targeted"]["wrong"], section["targeted"]["checked"]) == (8, 8)
    kinds = {a["kind"] for a in section["audits"]}
    assert kinds == {"random", "targeted"}


def test_random_audit_draws_from_all_production_labels_including_unanimous_items(study, lead):
    audit = review.draw_audit(study, "random", 500, lead, seed=3)
    production = Label.objects.filter(study=study, purpose="production").count()
    assert audit.items.count() == production  # the whole pool when asked for more


def test_audit_size_and_kind_are_validated(study, lead):
    with pytest.raises(ReviewError, match="size"):
        review.draw_audit(study, "random", 0, lead)
    with pytest.raises(ReviewError, match="annotator"):
        review.draw_audit(study, "targeted", 5, lead)
    with pytest.raises(ReviewError, match="kind"):
        review.draw_audit(study, "everything", 5, lead)
    assert not Audit.objects.exists()


def test_send_a_sample_to_audit_from_the_rater_page(client, study, lead):
    rater = Label.objects.filter(study=study).first().annotator
    client.force_login(lead)
    response = client.post(reverse("rater-audit", args=[study.token, rater.pk]), {"size": "5"})
    audit = Audit.objects.get(study=study)
    assert response.status_code == 302
    assert audit.kind == "targeted" and audit.target_annotator == rater
    assert AuditItem.objects.filter(audit=audit).count() == 5
    page = client.get(reverse("audit-detail", args=[study.token, audit.pk]))
    assert "do not estimate the pool" in page.content.decode()


def test_free_text_in_decisions_and_notes_renders_inert(client, study, lead):
    row = raters_summary(study)["triage"]["rows"][0]
    client.force_login(lead)
    url = reverse("triage-item", args=[study.token, row["unit"]])
    evil = '<script>alert("x")</script>'
    client.post(
        url,
        {
            "cause": "missed_evidence",
            "decision": "ruling",
            "rationale": evil,
            "proposed_ruling": evil,
        },
    )
    html = client.get(url).content.decode()
    assert evil not in html and "&lt;script&gt;" in html
    audit = review.draw_audit(study, "random", 2, lead, seed=4)
    item = audit.items.first()
    client.post(
        reverse("audit-detail", args=[study.token, audit.pk]),
        {"item": item.pk, "verdict": "wrong", "note": evil},
    )
    html = client.get(reverse("audit-detail", args=[study.token, audit.pk])).content.decode()
    assert evil not in html and "&lt;script&gt;" in html
