"""Which labels a report counts: first labels on production and hidden-gold units enter agreement,
label models and votes; blind repeats, attention, qualification and calibration never do. Gold
answers check the aggregation (and clamp it only when the lead asks)."""

import csv
import io

import numpy as np
import pytest
from django.urls import reverse

from analysis import agreement as ag
from analysis import labelmodels as lm
from annotation.models import Label, Membership, Study, Unit
from annotation.services import setup
from qc import loaders, services
from qc.models import QualityReport
from qc.reports import build_report
from tests.factories import MembershipFactory, make_study
from tests.qc import simulate
from tests.qc.labels import add_labels

pytestmark = pytest.mark.django_db

NOT_COUNTED = ("repeat", "attention", "qualification", "calibration")


def report_for(study):
    return build_report(loaders.load_snapshot(study), loaders.report_config(study))


def stat(report, key):
    return next(s for s in report.summary["agreement"]["statistics"] if s["key"] == key)


@pytest.fixture
def mixed(settings):
    """A categorical study with production units, hidden gold units (crowd partly wrong on them),
    an attention unit, and labels of every purpose; repeats say the opposite of the first label.
    """
    settings.CONCORD_QC_BOOTSTRAP = 50
    study = make_study(Study.TaskKind.CATEGORICAL, n_prompts=12, systems=("alpha",), overlap=3)
    people = simulate.annotators(4, prefix=f"m{study.pk}r")
    units = list(Unit.objects.filter(study=study).order_by("id"))
    gold, attention, production = units[:3], units[3], units[4:]
    for unit, answer in zip(gold, ["unsafe", "unsafe", "safe"], strict=True):
        setup.mark_gold(unit, {"choice": answer})
    setup.mark_gold(attention, {"choice": "safe"}, role=Unit.Role.ATTENTION)
    rng = np.random.default_rng(5)
    rows = []
    for i, unit in enumerate(production):
        truth = "unsafe" if i % 3 == 0 else "safe"
        for person in people[:3]:
            flip = rng.random() < 0.2
            rows.append(
                {
                    "unit": unit,
                    "annotator": person,
                    "choice": ("safe" if truth == "unsafe" else "unsafe") if flip else truth,
                }
            )
    add_labels(study, rows)
    # gold: every rater labels every gold item; the crowd misses the first gold item
    gold_rows = [
        {"unit": unit, "annotator": person, "choice": choice}
        for unit, choices in zip(
            gold,
            [["safe", "safe", "safe", "unsafe"], ["unsafe"] * 4, ["safe"] * 3 + ["unsafe"]],
            strict=True,
        )
        for person, choice in zip(people, choices, strict=True)
    ]
    add_labels(study, gold_rows, purpose="gold")
    # a later label by the same person on the same gold item (only the first one counts)
    add_labels(study, [{"unit": gold[0], "annotator": people[0], "choice": "unsafe"}], "gold")
    flipped = [
        {
            "unit": r["unit"],
            "annotator": r["annotator"],
            "choice": "safe" if r["choice"] == "unsafe" else "unsafe",
        }
        for r in rows[:12]
    ]
    add_labels(study, flipped, purpose="repeat")
    add_labels(study, [{"unit": attention, "annotator": p, "choice": "unsafe"} for p in people])
    Label.objects.filter(unit=attention).update(purpose="attention")
    for purpose in ("qualification", "calibration"):
        add_labels(
            study,
            [{"unit": production[0], "annotator": people[3], "choice": "unsafe"}],
            purpose=purpose,
        )
    return study, gold, people


def counted_long_format(study):
    """The labels the report must count, by an independent query: the first label of each
    annotator on each production or gold unit."""
    seen, rows = set(), []
    for unit_id, annotator_id, choice in (
        Label.objects.filter(study=study, purpose__in=["production", "gold"])
        .filter(unit__role__in=["production", "gold"])
        .order_by("id")
        .values_list("unit_id", "annotator_id", "choice")
    ):
        if (unit_id, annotator_id) not in seen:
            seen.add((unit_id, annotator_id))
            rows.append((unit_id, annotator_id, choice))
    return tuple(np.array(col) for col in zip(*rows, strict=True))


def test_gold_labels_enter_agreement_and_repeats_attention_and_gates_do_not(mixed):
    study, gold, _ = mixed
    report = report_for(study)
    items, raters, labels = counted_long_format(study)
    assert {int(g.pk) for g in gold} <= set(items.tolist())
    fleiss = ag.fleiss_kappa(items, raters, labels, categories=("safe", "unsafe"))
    assert stat(report, "chance_corrected")["value"] == pytest.approx(fleiss.value)
    assert stat(report, "chance_corrected")["n_labels"] == items.size
    assert stat(report, "percent")["value"] == pytest.approx(
        ag.percent_agreement(items, raters, labels).value
    )
    # the counts say which labels entered: every gold item, no repeat, attention or gate label
    assert stat(report, "chance_corrected")["n_items"] == np.unique(items).size
    production_only = ~np.isin(items, [g.pk for g in gold])
    assert np.unique(items[production_only]).size < np.unique(items).size
    everything = Label.objects.filter(study=study).count()
    assert stat(report, "percent")["n_labels"] == items.size < everything


def test_gold_labels_enter_the_votes_and_dawid_skene_and_repeats_never_do(mixed):
    study, gold, _ = mixed
    report = report_for(study)
    items, raters, labels = counted_long_format(study)
    agg = report.summary["aggregation"]
    assert agg["n_items"] == np.unique(items).size
    assert agg["n_labels"] == items.size
    assert agg["n_gold_items"] == len(gold)
    mv = lm.majority_vote(items, raters, labels, seed=0)
    ds = lm.dawid_skene(items, raters, labels)
    soft = lm.soft_labels(items, raters, labels)
    assert report.items["majority"] == mv.item_labels.tolist()
    assert report.items["dawid_skene"] == ds.item_labels.tolist()
    assert report.items["soft"] == np.round(soft.proportions, 6).tolist()
    # every label counted once: the per-item label counts equal the independent query's
    assert report.items["labels"] == soft.counts.sum(axis=1).tolist()


def test_label_accounting_adds_up_and_names_every_purpose(mixed):
    study, _, _ = mixed
    acc = report_for(study).summary["progress"]["accounting"]
    by = {r["purpose"]: r["count"] for r in acc["by_purpose"]}
    for purpose in ("production", "gold", *NOT_COUNTED):
        assert by[purpose] == Label.objects.filter(study=study, purpose=purpose).count(), purpose
    assert acc["total"] == Label.objects.filter(study=study).count() == sum(by.values())
    assert acc["later_duplicates"] == 1
    assert acc["counted"] == by["production"] + by["gold"] - acc["later_duplicates"]
    assert acc["counted"] == acc["counted_production"] + acc["counted_gold"]
    assert acc["not_counted"] == sum(by[p] for p in NOT_COUNTED)


def test_dashboard_explains_every_label_count(client, mixed):
    study, _, _ = mixed
    services.recompute(study.pk)
    lead = MembershipFactory(workspace=study.workspace, role=Membership.Role.LEAD).user
    client.force_login(lead)
    html = client.get(reverse("study-dashboard", args=[study.token])).content.decode()
    for text in ("Blind repeats", "Attention checks", "Hidden gold", "Qualification"):
        assert text in html
    assert "feeds rater quality only" in html
    assert "Later labels by the same annotator" in html


def test_accuracy_on_gold_checks_each_aggregation_with_an_interval_in_range(mixed):
    study, gold, _ = mixed
    report = report_for(study)
    check = report.summary["aggregation"]["gold_check"]
    expected = {g.pk: g.gold_answer.value["choice"] for g in gold}
    items = report.items
    for method in ("majority", "dawid_skene"):
        right = sum(
            items[method][i] == expected[u]
            for i, u in enumerate(np.unique(counted_long_format(study)[0]).tolist())
            if u in expected
        )
        assert check[method]["n"] == len(gold)
        assert check[method]["right"] == right
        assert check[method]["value"] == pytest.approx(right / len(gold))
        assert (
            0 <= check[method]["ci_low"] <= check[method]["value"] <= check[method]["ci_high"] <= 1
        )
    assert check["majority"]["right"] < len(gold)  # the crowd missed the first gold item
    assert check["clamped"] is False


def test_aggregated_export_shows_the_expert_answer_beside_the_aggregated_label(client, mixed):
    study, gold, _ = mixed
    services.recompute(study.pk)
    lead = MembershipFactory(workspace=study.workspace, role=Membership.Role.LEAD).user
    client.force_login(lead)
    response = client.get(reverse("study-report-csv", args=[study.token, "soft-labels"]))
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    by_token = {r["unit"]: r for r in rows}
    for g in gold:
        row = by_token[g.token]
        assert row["gold"] == "True"
        assert row["gold_answer"] == g.gold_answer.value["choice"]
        assert row["majority"] in ("safe", "unsafe") and row["dawid_skene"] in ("safe", "unsafe")
        assert row["prompt"] == g.prompt.external_id
        assert row["systems"] == "alpha"
        assert row["output"] == f"{g.prompt.external_id}:alpha"
    others = [r for r in rows if r["gold"] == "False"]
    assert others and all(r["gold_answer"] == "" for r in others)
    assert len(rows) == len(by_token)  # one row per item


def test_clamping_gold_is_off_by_default_and_fixes_gold_items_when_on(mixed):
    study, gold, _ = mixed
    expected = {g.token: g.gold_answer.value["choice"] for g in gold}
    plain = report_for(study)
    assert plain.summary["settings"]["clamp_gold"] is False
    unit_at = {u: i for i, u in enumerate(plain.items["unit"])}
    missed = [t for t, a in expected.items() if plain.items["majority"][unit_at[t]] != a]
    assert missed  # unclamped, the crowd's answer stands on the gold item it got wrong

    services.set_report_options(study, unanimous_view=False, clamp_gold=True)
    clamped = report_for(study)
    assert clamped.summary["settings"]["clamp_gold"] is True
    for token, answer in expected.items():
        i = clamped.items["unit"].index(token)
        assert clamped.items["majority"][i] == answer
        assert clamped.items["dawid_skene"][i] == answer
    check = clamped.summary["aggregation"]["gold_check"]
    assert check["clamped"] is True and "not a check" in check["note"]
    assert clamped.summary["aggregation"]["clamped_gold"] == len(gold)


def _slow_study():
    """A small categorical study whose Dawid-Skene fit needs more than 100 EM iterations (seed
    found by search; the assertion below keeps the premise honest)."""
    study, _ = simulate.categorical_study(
        n_prompts=40, n_annotators=6, overlap=3, accuracy=0.72, prevalence=0.65, seed=4
    )
    items, raters, labels = (
        np.array(c)
        for c in zip(
            *Label.objects.filter(study=study).values_list("unit_id", "annotator_id", "choice"),
            strict=True,
        )
    )
    assert not lm.dawid_skene(items, raters, labels, max_iter=100).converged
    return study, (items, raters, labels)


def test_dawid_skene_runs_to_its_tolerance_on_a_study_that_needs_more_than_100_iterations():
    study, (items, raters, labels) = _slow_study()
    agg = report_for(study).summary["aggregation"]
    full = lm.dawid_skene(items, raters, labels)
    assert full.converged and full.n_iter > 100
    assert agg["dawid_skene_converged"] is True
    assert agg["dawid_skene_iterations"] == full.n_iter > 100
    assert agg["dawid_skene_max_iter"] == lm.iteration_cap(labels.size) == lm.DS_MAX_ITER
    assert agg["dawid_skene_reason"] == ""
    assert abs(agg["dawid_skene_loglik_change"]) < 1e-3
    priors = [p["prior"] for p in agg["dawid_skene_priors"]]
    assert priors == pytest.approx(full.priors.tolist())
    assert sum(priors) == pytest.approx(1.0)


def test_the_page_shows_iterations_loglik_change_and_class_prior(client):
    study, _ = _slow_study()
    services.recompute(study.pk)
    lead = MembershipFactory(workspace=study.workspace, role=Membership.Role.LEAD).user
    client.force_login(lead)
    html = client.get(reverse("study-dashboard", args=[study.token])).content.decode()
    agg = QualityReport.objects.get(study=study, kind="study").payload["aggregation"]
    assert "did not converge" not in html
    assert f'data-fact="ds_iterations">{agg["dawid_skene_iterations"]}<' in html
    assert agg["dawid_skene_loglik_change_text"] in html
    for p in agg["dawid_skene_priors"]:
        assert f'data-prior="{p["label"]}">{p["label"]} {p["prior"]:.3f}<' in html


def test_the_report_shown_always_matches_the_current_settings(client, settings):
    """Toggle a setting on and off: the page shows the report of the current settings."""
    settings.CONCORD_QC_BOOTSTRAP = 50
    study, _ = simulate.categorical_study(n_prompts=20, accuracy=0.8)
    services.recompute(study.pk)
    lead = MembershipFactory(workspace=study.workspace, role=Membership.Role.LEAD).user
    client.force_login(lead)
    url = reverse("study-dashboard", args=[study.token])
    options = reverse("study-report-options", args=[study.token])
    assert 'id="unanimous-view"' not in client.get(url).content.decode()
    for on in (True, False, True, False):
        data = {"unanimous_view": "on"} if on else {}
        client.post(options, data)  # eager tasks: the recomputation runs right away
        html = client.get(url).content.decode()
        assert ('id="unanimous-view"' in html) is on, on
        report = QualityReport.objects.filter(study=study, kind="study")
        shown = client.get(reverse("study-report-json", args=[study.token])).json()
        assert shown["report"]["settings"]["unanimous_view"] is on
        assert report.count() == 2  # "off" found its old report instead of storing a new one


def test_a_report_of_other_settings_is_never_shown_as_current(client, settings):
    settings.CONCORD_QC_BOOTSTRAP = 50
    study, _ = simulate.categorical_study(n_prompts=10)
    services.recompute(study.pk)
    services.set_report_options(study, unanimous_view=True, clamp_gold=False)  # no recompute
    lead = MembershipFactory(workspace=study.workspace, role=Membership.Role.LEAD).user
    client.force_login(lead)
    html = client.get(reverse("study-dashboard", args=[study.token])).content.decode()
    assert "No report has been computed for the current settings yet" in html
    assert 'data-fact="n_disagree"' not in html
    assert client.get(reverse("study-report-json", args=[study.token])).status_code == 404


def test_new_labels_show_the_report_of_the_same_settings_and_say_how_far_behind(client, settings):
    settings.CONCORD_QC_BOOTSTRAP = 50
    study, _ = simulate.categorical_study(n_prompts=10)
    services.recompute(study.pk)
    person = simulate.annotators(1, prefix=f"late{study.pk}")[0]
    add_labels(study, [{"unit": study.units.first(), "annotator": person, "choice": "safe"}])
    lead = MembershipFactory(workspace=study.workspace, role=Membership.Role.LEAD).user
    client.force_login(lead)
    html = client.get(reverse("study-dashboard", args=[study.token])).content.decode()
    assert "1 label arrived after this report was computed" in html


def test_external_ids_reach_the_lead_and_never_an_annotator(client, mixed):
    from tests.factories import enrol

    study, gold, people = mixed
    services.recompute(study.pk)
    annotator = enrol(study).user
    client.force_login(annotator)
    for table in ("soft-labels", "disagreements"):
        url = reverse("study-report-csv", args=[study.token, table])
        assert client.get(url).status_code == 404
    assert client.get(reverse("study-dashboard", args=[study.token])).status_code == 404
    assert client.get(reverse("study-report-json", args=[study.token])).status_code == 404
    page = client.get(reverse("work-task", args=[study.token])).content.decode()
    prompts = set(study.prompts.values_list("external_id", flat=True))
    assert not any(f">{p}<" in page or f'"{p}"' in page for p in prompts)
    assert "gold" not in page.lower()


def test_an_expert_answer_is_read_in_the_reports_label_space_for_every_task_kind():
    names = {7: "alpha", 8: "beta"}
    read = loaders.gold_value
    assert read("categorical", {"choice": "safe"}, names) == "safe"
    assert read("categorical", "safe", names) == "safe"  # a bare value, as an import may store
    assert read("ordinal", {"value": "high"}, names) == "high"
    assert read("likert", {"score": "4"}, names) == 4.0
    assert read("continuous", 62.5, names) == 62.5
    assert read("pairwise", {"winner": 8}, names) == "beta"
    assert read("pairwise", {"winner": "alpha"}, names) == "alpha"
    assert read("pairwise", {"winner": "tie"}, names) == "tie"
    # unreadable answers are left out of the gold check, never guessed
    assert read("likert", {"score": "n/a"}, names) is None
    assert read("pairwise", {"winner": "gamma"}, names) is None
    assert read("pairwise", {"winner": 9}, names) is None
    assert read("categorical", {"choice": ""}, names) is None
    assert read("spa", {"choice": "x"}, names) is None


def test_a_report_stops_dawid_skene_at_its_budget_and_says_how_many_labels_still_moved(
    monkeypatch,
):
    study, (items, raters, labels) = _slow_study()
    # a budget that allows 100 iterations for this study's labels (the floor of the cap)
    monkeypatch.setattr(lm, "DS_BUDGET", 100 * labels.size)
    agg = report_for(study).summary["aggregation"]
    capped = lm.dawid_skene(items, raters, labels, max_iter=100)
    assert agg["dawid_skene_max_iter"] == 100 == agg["dawid_skene_iterations"]
    assert agg["dawid_skene_converged"] is False
    assert agg["dawid_skene_labels_moved"] == capped.labels_moved
    assert agg["dawid_skene_moved_over"] == capped.moved_over == 99
    assert "changed over the last 99 iterations" in agg["dawid_skene_reason"]
    priors = [p["prior"] for p in agg["dawid_skene_priors"]]
    assert priors == pytest.approx(capped.priors.tolist())


def test_the_page_says_a_capped_fit_did_not_converge_and_how_many_labels_still_moved(
    client, monkeypatch
):
    study, (items, raters, labels) = _slow_study()
    monkeypatch.setattr(lm, "DS_BUDGET", 100 * labels.size)
    services.recompute(study.pk)
    lead = MembershipFactory(workspace=study.workspace, role=Membership.Role.LEAD).user
    client.force_login(lead)
    html = client.get(reverse("study-dashboard", args=[study.token])).content.decode()
    moved = lm.dawid_skene(items, raters, labels, max_iter=100).labels_moved
    assert "did not converge" in html
    assert 'data-fact="ds_max_iter">100<' in html
    assert f'data-fact="ds_labels_moved">{moved}<' in html
    assert "still changing over its last 99 iterations" in html
    rater = int(raters[0])
    page = client.get(reverse("rater-page", args=[study.token, rater])).content.decode()
    assert "Dawid-Skene did not converge" in page
    assert f"{moved} item label" in page and "over the last 99 iterations" in page
