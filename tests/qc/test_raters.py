"""Rater pages from stored rater reports: gold accuracy and the decline alert, blind repeats,
Dawid-Skene confusion, screening signals, the overview's ranking, and who may see them."""

import numpy as np
import pytest
from django.urls import reverse

from analysis import labelmodels as lm
from analysis import monitoring as mon
from annotation.models import Label, Membership
from qc import services
from qc.models import QualityReport, RaterReport
from tests.factories import MembershipFactory, UserFactory, enrol
from tests.qc.rater_sim import monitored_study

pytestmark = pytest.mark.django_db

DECLINE = [0.92] * 10 + [0.81] * 14


@pytest.fixture(autouse=True)
def small_bootstrap(settings):
    settings.CONCORD_QC_BOOTSTRAP = 20
    settings.CONCORD_QC_BOOTSTRAP_OVER_TIME = 10


def page_of(study, user) -> dict:
    report = QualityReport.objects.filter(study=study, kind="raters").latest("created_at")
    return RaterReport.objects.get(
        study=study, annotator=user, fingerprint=report.fingerprint
    ).payload


def report_labels(study):
    """The long-format labels the study report aggregates (the aggregation section's input)."""
    from qc.loaders import load_snapshot, report_config
    from qc.reports.labels import task_labels

    return task_labels(load_snapshot(study), report_config(study))


def lead_of(study):
    return MembershipFactory(workspace=study.workspace, role=Membership.Role.LEAD).user


@pytest.fixture
def declining():
    study, watched, peers, planted = monitored_study(
        DECLINE, guide_change_week=10, repeats={"n": 12, "flip": 3}, seed=5
    )
    services.recompute(study.pk)
    return study, watched, peers, planted


def test_gold_accuracy_per_week_counts_what_was_planted(declining):
    study, watched, _, planted = declining
    gold = page_of(study, watched)["gold"]
    assert gold["n"] == planted["gold_n"] == 20 * len(DECLINE)
    assert gold["k"] == planted["gold_right"]
    assert sum(w["n"] for w in gold["weeks"]) == gold["n"]
    assert sum(w["correct"] for w in gold["weeks"]) == gold["k"]
    low, high = mon.wilson_interval(gold["k"], gold["n"])
    assert (gold["ci_low"], gold["ci_high"]) == pytest.approx((float(low), float(high)))


def test_decline_from_92_to_81_after_a_guide_change_raises_the_alert(declining):
    study, watched, peers, _ = declining
    page = page_of(study, watched)
    assert page["gold"]["alert"]["active"]
    first = page["gold"]["alert"]["first_week"]
    weeks = [w["week"] for w in page["gold"]["weeks"]]
    assert weeks.index(first) >= 10  # never before the guide change
    assert page["concern"] >= 4
    # the steady 90% peers, on the same weeks and guide change, raise none
    for peer in peers:
        assert not page_of(study, peer)["gold"]["alert"]["active"]
        assert not any(w["flagged"] for w in page_of(study, peer)["gold"]["weeks"])
    summary = QualityReport.objects.filter(study=study, kind="raters").latest("created_at")
    assert summary.payload["ranking"][0]["annotator"] == watched.username
    assert [g["label"] for g in summary.payload["guide_changes"]] == ["guide v2"]


def test_a_steady_rater_over_a_simulated_year_raises_no_alert():
    study, watched, _, _ = monitored_study([0.9] * 52, gold_per_week=20, seed=21, n_peers=1)
    services.recompute(study.pk)
    gold = page_of(study, watched)["gold"]
    assert len(gold["weeks"]) >= 52
    assert not gold["alert"]["active"] and gold["alert"]["first_week"] is None


def test_repeat_flips_are_counted_and_listed(declining):
    study, watched, _, planted = declining
    reps = page_of(study, watched)["repeats"]
    assert (reps["k"], reps["n"]) == (3, 12)
    assert sorted(i["unit"] for i in reps["items"]) == sorted(planted["flipped_units"])
    assert sum(g["n"] for g in reps["groups"]) == 12
    assert sum(g["flipped"] for g in reps["groups"]) == 3


def test_repeats_never_reach_dawid_skene_votes_or_agreement(declining):
    study, watched, _, _ = declining
    summary = QualityReport.objects.get(study=study, kind="study").payload
    counted = report_labels(study).labels.size  # production and first gold labels
    assert summary["agreement"]["statistics"][0]["n_labels"] <= counted
    votes = sum(c["majority"] for c in summary["aggregation"]["class_counts"])
    assert votes == summary["aggregation"]["n_items"]
    # the rater's DS confusion is estimated from the report's labels: first labels on production
    # and gold units, never a repeat
    t = report_labels(study)
    conf = page_of(study, watched)["confusion"]
    assert conf["n"] == int((t.raters == watched.pk).sum())
    assert conf["n"] < Label.objects.filter(study=study, annotator=watched).count()
    assert not np.isin(
        t.label_ids, Label.objects.filter(purpose="repeat").values_list("id", flat=True)
    ).any()


def test_rater_confusion_and_rates_equal_analysis_labelmodels(declining):
    study, watched, peers, _ = declining
    t = report_labels(study)
    fit = lm.dawid_skene(t.items, t.raters, t.labels)
    sens, spec = mon.dawid_skene_rater_rates(fit.error_rates, fit.priors)
    classes = fit.classes.tolist()
    for person in [watched, *peers]:
        j = fit.raters.tolist().index(person.pk)
        conf = page_of(study, person)["confusion"]
        got = {(c["true"], c["given"]): c["rate"] for c in conf["cells"]}
        for x, t in enumerate(classes):
            for y, g in enumerate(classes):
                assert got[(t, g)] == pytest.approx(fit.error_rates[j, x, y])
        for c, row in enumerate(conf["per_class"]):
            assert row["sensitivity"] == pytest.approx(sens[j, c])
            assert row["specificity"] == pytest.approx(spec[j, c])


def test_screening_signals_fire_on_a_fast_and_a_one_answer_rater():
    study, _, peers, _ = monitored_study(
        [0.9] * 6, seed=8, n_prompts=80, fast_rater=True, run_rater=True
    )
    services.recompute(study.pk)
    run_page, fast_page = page_of(study, peers[0]), page_of(study, peers[1])
    assert run_page["runs"]["flag"] and run_page["screening"]
    assert fast_page["timing"]["flag"] and fast_page["screening"]
    quiet = page_of(study, peers[2])
    assert not quiet["screening"]


def test_counts_by_purpose_add_up(declining):
    study, watched, _, _ = declining
    counts = page_of(study, watched)["counts"]
    assert counts["total"] == sum(v for k, v in counts.items() if k != "total")
    assert counts["total"] == Label.objects.filter(study=study, annotator=watched).count()


def test_rater_page_and_overview_render_stored_numbers(client, declining):
    study, watched, _, _ = declining
    client.force_login(lead_of(study))
    html = client.get(reverse("rater-page", args=[study.token, watched.pk])).content.decode()
    page = page_of(study, watched)
    assert 'data-alert="decline"' in html
    assert f"{page['gold']['k']} of {page['gold']['n']}" in html
    assert 'id="spec-gold"' in html and 'id="spec-confusion"' in html
    assert "Send a sample to audit" in html
    overview = client.get(reverse("raters-overview", args=[study.workspace.slug]))
    text = overview.content.decode()
    assert overview.status_code == 200
    assert "data-overview-alert" in text
    assert text.index(watched.username) < text.index("Raters ranked by concern") or (
        text.index("data-alert-row") < text.index(watched.username) + 400
    )


def test_pages_read_stored_reports_without_computing(client, declining, monkeypatch):
    from qc.raters import report
    from qc.raters import services as rs

    study, watched, _, _ = declining
    boom = lambda *a, **k: pytest.fail("computed in a request")  # noqa: E731
    monkeypatch.setattr(report, "build_rater_reports", boom)
    monkeypatch.setattr(rs, "build_rater_reports", boom)
    monkeypatch.setattr(mon, "decline_alerts", boom)
    monkeypatch.setattr(lm, "dawid_skene", boom)
    client.force_login(lead_of(study))
    for url in (
        reverse("rater-page", args=[study.token, watched.pk]),
        reverse("study-raters", args=[study.token]),
        reverse("raters-overview", args=[study.workspace.slug]),
        reverse("study-triage", args=[study.token]),
        reverse("study-audits", args=[study.token]),
    ):
        assert client.get(url).status_code == 200, url


def test_rater_pages_are_for_leads_of_the_workspace_only(client, declining):
    study, watched, _, _ = declining
    urls = [
        reverse("rater-page", args=[study.token, watched.pk]),
        reverse("study-raters", args=[study.token]),
        reverse("raters-overview", args=[study.workspace.slug]),
        reverse("study-triage", args=[study.token]),
        reverse("study-audits", args=[study.token]),
    ]
    client.force_login(UserFactory())  # a lead elsewhere, or nobody
    assert [client.get(u).status_code for u in urls] == [404] * len(urls)
    enrol(study, watched)
    client.force_login(watched)  # the annotator never sees their own monitoring
    assert [client.get(u).status_code for u in urls] == [404] * len(urls)
    client.force_login(lead_of(study))
    stranger = UserFactory()
    assert client.get(reverse("rater-page", args=[study.token, stranger.pk])).status_code == 404


def test_rater_names_render_inert(client):
    study, watched, _, _ = monitored_study([0.9] * 3, seed=3, n_peers=1)
    watched.username = '<img src=x onerror="alert(1)">'
    watched.save()
    services.request_recompute(study, None)
    client.force_login(lead_of(study))
    for url in (
        reverse("rater-page", args=[study.token, watched.pk]),
        reverse("raters-overview", args=[study.workspace.slug]),
        reverse("study-raters", args=[study.token]),
    ):
        html = client.get(url).content.decode()
        assert "<img src=x" not in html, url
        assert "&lt;img src=x" in html, url


def test_a_study_without_labels_stores_an_empty_rater_report():
    """Before anyone has labelled, the rater report is stored (no raters), not logged as failed."""
    from qc.models import RecomputeState
    from tests.factories import make_study

    study = make_study(n_prompts=3)
    services.recompute(study.pk)
    report = QualityReport.objects.filter(study=study, kind="raters").latest("created_at")
    assert not RaterReport.objects.filter(study=study, fingerprint=report.fingerprint).exists()
    state = RecomputeState.objects.filter(study=study).first()
    assert state is None or not (state.last_error or "").startswith("rater report")


def test_the_run_reading_speaks_of_a_run_only_when_there_is_one():
    from types import SimpleNamespace

    import numpy as np

    from qc.raters.report import _run_row

    runs = SimpleNamespace(
        longest=np.array([1, 7]),
        expected_runs=np.array([0.5, 0.0123456]),
        answer=np.array(["good", "bad"], dtype=object),
        n_labels=np.array([3, 40]),
    )
    assert _run_row(runs, 0)["reading"] == "No answer was given twice in a row."
    reading = _run_row(runs, 1)["reading"]
    assert reading.startswith("Longest run: 7 identical answers ('bad') in a row")
    assert "about 0.012 such runs" in reading
