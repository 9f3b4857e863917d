"""The report's numbers: each equals the analysis function called directly on the same labels."""

import json
import math

import numpy as np
import pytest

from analysis import agreement as ag
from analysis import labelmodels as lm
from analysis import preference as pref
from annotation.models import Comparison, Label, Study
from qc import loaders
from qc.reports import build_report, category_label, clean, stars
from tests.factories import make_study
from tests.qc import simulate
from tests.qc.labels import add_labels

pytestmark = pytest.mark.django_db


def report_for(study):
    config = loaders.report_config(study)
    return build_report(loaders.load_snapshot(study), config)


def long_format(study):
    rows = list(
        Label.objects.filter(study=study, purpose="production")
        .order_by("id")
        .values_list("unit_id", "annotator_id", "choice")
    )
    items, raters, labels = (np.array(col) for col in zip(*rows, strict=True))
    return items, raters, labels


def stat(report, key):
    return next(s for s in report.summary["agreement"]["statistics"] if s["key"] == key)


def test_report_numbers_equal_the_analysis_functions_on_the_same_labels(settings):
    settings.CONCORD_QC_BOOTSTRAP = 200
    study, _ = simulate.categorical_study(n_prompts=40, n_annotators=6)
    report = report_for(study)
    items, raters, labels = long_format(study)
    cats = ("safe", "unsafe")

    percent = ag.percent_agreement(items, raters, labels)
    fleiss = ag.fleiss_kappa(items, raters, labels, categories=cats)
    boot = ag.bootstrap("fleiss_kappa", items, raters, labels, n_boot=200, seed=0, categories=cats)
    assert stat(report, "percent")["value"] == pytest.approx(percent.value)
    assert stat(report, "chance_corrected")["label"] == "Fleiss' kappa"
    assert stat(report, "chance_corrected")["value"] == pytest.approx(fleiss.value)
    assert stat(report, "chance_corrected")["ci_low"] == pytest.approx(boot.ci_low)
    assert stat(report, "chance_corrected")["ci_high"] == pytest.approx(boot.ci_high)

    per_class = ag.specific_agreement(items, raters, labels, categories=cats).per_category
    dist = {d["value"]: d for d in report.summary["agreement"]["distribution"]}
    assert dist["unsafe"]["specific_agreement"] == pytest.approx(per_class["unsafe"])
    assert dist["safe"]["count"] == int((labels == "safe").sum())

    mv = lm.majority_vote(items, raters, labels, tie_break="random", seed=0)
    ds = lm.dawid_skene(items, raters, labels)
    agg = report.summary["aggregation"]
    assert agg["n_disagree"] == int((mv.item_labels != ds.item_labels).sum())
    assert {m["value"]: m["count"] for m in agg["majority"]}["safe"] == int(
        (mv.item_labels == "safe").sum()
    )
    soft = lm.soft_labels(items, raters, labels)
    assert report.items["soft"] == np.round(soft.proportions, 6).tolist()


def test_a_report_is_a_deterministic_function_of_its_labels(settings):
    settings.CONCORD_QC_BOOTSTRAP = 50
    study, _ = simulate.categorical_study(n_prompts=15)
    first, second = report_for(study), report_for(study)
    first.summary["snapshot"].pop("taken_at")
    second.summary["snapshot"].pop("taken_at")
    assert first.summary == second.summary
    assert first.items == second.items


def test_ordinal_study_uses_ordinal_alpha_in_scale_order():
    study, _ = simulate.categorical_study(task_kind=Study.TaskKind.ORDINAL, n_prompts=20)
    report = report_for(study)
    items, raters, labels = long_format(study)
    order = ("fully", "partially", "not")
    alpha = ag.krippendorff_alpha(items, raters, labels, level="ordinal", categories=order)
    row = stat(report, "chance_corrected")
    assert row["label"] == "Krippendorff's alpha (ordinal)"
    assert row["value"] == pytest.approx(alpha.value)
    assert [d["value"] for d in report.summary["agreement"]["distribution"]] == list(order)
    # the page reads the scheme's display text, in scale order
    texts = [d["label"] for d in report.summary["agreement"]["distribution"]]
    assert texts == ["Fully", "Partially", "Does not answer"]


def test_two_raters_on_a_nominal_scale_get_cohens_kappa():
    study, _ = simulate.categorical_study(n_prompts=20, n_annotators=2, overlap=2)
    report = report_for(study)
    items, raters, labels = long_format(study)
    kappa = ag.cohen_kappa(items, raters, labels, categories=("safe", "unsafe"))
    assert stat(report, "chance_corrected")["label"] == "Cohen's kappa"
    assert stat(report, "chance_corrected")["value"] == pytest.approx(kappa.value)


def test_continuous_scores_get_interval_alpha_and_icc_not_percent_agreement():
    study = make_study(Study.TaskKind.CONTINUOUS, n_prompts=10, systems=("a",))
    people = simulate.annotators(3, prefix="cont")
    rng = np.random.default_rng(0)
    rows = [
        {"unit": u, "annotator": p, "score": float(np.clip(10 * i + rng.normal(0, 3), 0, 100))}
        for i, u in enumerate(study.units.order_by("id"))
        for p in people
    ]
    add_labels(study, rows)
    report = report_for(study)
    assert stat(report, "percent")["value"] is None
    assert "continuous" in stat(report, "percent")["reason"]
    items = np.array([r["unit"].pk for r in rows])
    raters = np.array([r["annotator"].pk for r in rows])
    scores = np.array([r["score"] for r in rows])
    alpha = ag.krippendorff_alpha(items, raters, scores, level="interval")
    assert stat(report, "chance_corrected")["value"] == pytest.approx(alpha.value)
    icc = ag.icc(items, raters, scores, form="ICC(2,1)")
    assert stat(report, "icc")["value"] == pytest.approx(icc.value)
    assert stat(report, "icc")["ci_low"] == pytest.approx(icc.ci_low)


def test_undefined_statistics_are_null_with_a_reason_and_the_payload_is_strict_json():
    study = make_study(Study.TaskKind.CATEGORICAL, n_prompts=4, systems=("a",))
    (person,) = simulate.annotators(1, prefix="solo")
    add_labels(
        study, [{"unit": u, "annotator": person, "choice": "safe"} for u in study.units.all()]
    )
    report = report_for(study)
    row = stat(report, "chance_corrected")
    assert row["value"] is None
    assert row["reason"]
    json.dumps(report.summary, allow_nan=False)
    json.dumps(report.items, allow_nan=False)


def test_clean_turns_nan_and_numpy_values_into_json():
    assert clean({"a": np.float64("nan"), "b": np.int64(3), "c": (1.0, float("inf"))}) == {
        "a": None,
        "b": 3,
        "c": [1.0, None],
    }


def test_clean_of_long_lists_of_plain_values_keeps_types_and_drops_non_finite_floats():
    mixed = [1, True, "x", None, 2.5, float("nan"), -float("inf"), np.float64(np.nan)]
    mixed += [np.float32(1.5), np.int64(4), np.bool_(False), [0.5, float("inf")], (np.nan,)]
    out = clean(mixed)
    assert out == [1, True, "x", None, 2.5, None, None, None, 1.5, 4, False, [0.5, None], [None]]
    assert [type(v) for v in out[:5]] == [int, bool, str, type(None), float]
    assert type(out[8]) is float and type(out[9]) is int and type(out[10]) is bool


def test_prevalence_paradox_is_flagged_beside_the_distribution():
    # 95% "safe": raters agree mostly by prevalence, and disagree on the rare class.
    study, _ = simulate.categorical_study(n_prompts=60, prevalence=0.95, accuracy=0.9, seed=7)
    report = report_for(study)
    agreement = report.summary["agreement"]
    percent, kappa = stat(report, "percent")["value"], stat(report, "chance_corrected")["value"]
    assert percent >= 0.8 and kappa < 0.4
    assert "prevalence paradox" in agreement["prevalence_warning"]
    assert agreement["majority_class_share"] > 0.85


def test_unanimous_view_is_labelled_and_keeps_the_full_set_beside_it():
    study, _ = simulate.categorical_study(n_prompts=30, accuracy=0.8)
    from qc.services import set_unanimous_view

    set_unanimous_view(study, True)
    report = report_for(study)
    view = report.summary["aggregation"]["unanimous"]
    assert "Unanimous items only" in view["note"]
    assert view["n_items"] < view["n_items_full"]
    assert view["value_full"] is not None
    assert report.summary["settings"]["unanimous_view"] is True


def test_spa_table_recovers_simulated_preferences():
    prefs = [(0.70, "x"), (0.32, "y"), (0.66, "x"), (0.5, "indifferent")]
    study, comparisons = simulate.spa_study(prefs, n_annotators=40, seed=11)
    report = report_for(study)
    spa = report.summary["spa"]
    table = spa["tables"]["unfiltered"]
    assert [r["comparison"] for r in table] == [c.pk for c in comparisons]
    for row, (p, expected) in zip(table, prefs, strict=True):
        assert row["spa"]["mean"] == pytest.approx(p, abs=0.06)
        assert row["spa_matches_expected"] is True, row
        if expected != "indifferent":
            assert row["spa"]["stars"] == "***"
            assert row["spa"]["ci_low"] < p < row["spa"]["ci_high"]
    assert spa["preregistered_variant"] == "unfiltered"
    assert spa["tables"]["filtered"]  # the exploratory tau = 1.1 table is beside it


def test_spa_numbers_equal_preference_spa_on_the_same_answers():
    prefs = [(0.65, "x"), (0.45, "")]
    study, comparisons = simulate.spa_study(prefs, n_annotators=25, seed=5, tau=1.1, sloppy=3)
    report = report_for(study)
    from annotation.models import SpaAnswer

    rows = list(
        SpaAnswer.objects.filter(label__study=study)
        .order_by("label__annotator_id", "comparison_id")
        .values_list("label__annotator_id", "comparison_id", "reverse", "probability")
    )
    fwd = [(a, c, p / 100) for a, c, r, p in rows if not r]
    rev = {(a, c): p / 100 for a, c, r, p in rows if r}
    ann, comp, p_xy = (np.array(x) for x in zip(*fwd, strict=True))
    p_yx = np.array([rev[(a, c)] for a, c, _ in fwd])
    direct = pref.spa(ann, comp, p_xy, p_yx=p_yx, tau=1.1)
    spa = report.summary["spa"]
    assert spa["preregistered_variant"] == "filtered"
    assert spa["dropped_annotators"] == direct.n_dropped == 3
    for row, drow in zip(spa["tables"]["filtered"], direct.rows, strict=True):
        assert row["spa"]["mean"] == pytest.approx(drow.mean)
        assert row["spa"]["p_holm"] == pytest.approx(drow.p_holm)
        assert row["spa"]["n"] == 25
    for row, drow in zip(spa["tables"]["unfiltered"], direct.unfiltered, strict=True):
        assert row["spa"]["mean"] == pytest.approx(drow.mean)
        assert row["spa"]["n"] == 28
    first = spa["tables"]["filtered"][0]["spa"]
    d = direct.rows[0].t / math.sqrt(direct.rows[0].n)
    assert first["n_for_power"] == pref.power(d, 25).n_for_target


def _likert_direct(study, keep=None):
    """The Likert paired test straight from the stored ratings (optionally only `keep`)."""
    from annotation.models import OutputRating

    rows = OutputRating.objects.filter(label__study=study).values_list(
        "label__annotator_id", "output__system__name", "score"
    )
    per: dict = {}
    for a, system, score in rows:
        if keep is None or a in keep:
            per.setdefault((a, system), []).append(score)
    people = sorted({a for a, _ in per})
    x = [np.mean(per[(a, "s0")]) for a in people]
    y = [np.mean(per[(a, "s1")]) for a in people]
    return pref.likert_paired(people, [0] * len(people), x, y).rows[0]


def test_filtered_spa_table_drops_the_filtered_annotators_from_the_likert_test_too():
    # The tau filter drops the 5 sloppy annotators, who also rate s1 far above s0: left in, they
    # pull the Likert difference towards Y; the filtered table must use the kept annotators only.
    study, _ = simulate.spa_study(
        [(0.7, "x")],
        n_annotators=20,
        seed=4,
        tau=1.1,
        sloppy=5,
        likert={"s0": 3.6, "s1": 3.0},
        sloppy_likert={"s0": 1.0, "s1": 5.0},
    )
    from annotation.models import SpaAnswer

    answers = list(
        SpaAnswer.objects.filter(label__study=study)
        .order_by("label__annotator_id", "reverse")
        .values_list("label__annotator_id", "reverse", "probability")
    )
    fwd = {a: p / 100 for a, r, p in answers if not r}
    rev = {a: p / 100 for a, r, p in answers if r}
    people = sorted(fwd)
    direct = pref.spa(
        people, [0] * len(people), [fwd[a] for a in people], [rev[a] for a in people], tau=1.1
    )
    kept = set(people) - set(direct.dropped.tolist())
    assert direct.n_dropped == 5

    spa = report_for(study).summary["spa"]
    filtered = spa["tables"]["filtered"][0]["likert"]
    unfiltered = spa["tables"]["unfiltered"][0]["likert"]
    on_kept, on_everyone = _likert_direct(study, kept), _likert_direct(study)
    assert filtered["n"] == on_kept.n == 20
    assert filtered["mean"] == pytest.approx(on_kept.mean)
    assert filtered["p_holm"] == pytest.approx(on_kept.p_holm)
    assert filtered["verdict"] == on_kept.verdict == "X>Y"
    assert unfiltered["n"] == on_everyone.n == 25
    assert unfiltered["mean"] == pytest.approx(on_everyone.mean)
    assert unfiltered["mean"] < filtered["mean"]


def test_a_preregistered_filter_without_reverse_answers_is_reported_as_not_applied():
    from annotation.models import SpaAnswer

    study, _ = simulate.spa_study([(0.7, "x")], n_annotators=10, tau=1.1)
    SpaAnswer.objects.filter(label__study=study, reverse=True).delete()
    spa = report_for(study).summary["spa"]
    assert spa["preregistered_variant"] == "unfiltered"
    assert set(spa["tables"]) == {"unfiltered"}
    assert spa["tau"] is None
    assert spa["filter_reason"].startswith("the pre-registered tau filter could not be applied")


def test_spa_table_flags_likert_significant_in_the_opposite_direction():
    # SPA says s0 > s1 as expected, while the Likert averages favour s1 (the paper's reversal).
    prefs = [(0.7, "x")]
    study, _ = simulate.spa_study(prefs, n_annotators=40, seed=9, likert={"s0": 3.0, "s1": 3.8})
    row = report_for(study).summary["spa"]["tables"]["unfiltered"][0]
    assert row["spa"]["verdict"] == "X>Y"
    assert row["likert"]["verdict"] == "Y>X"
    assert row["likert"]["mean"] < 0
    assert row["likert_significant_opposite"] is True
    assert row["reversal"] is True
    assert row["both_significant_opposite"] is True
    assert row["protocols_disagree"] is False  # a reversal is flagged apart from a disagreement


def test_pairwise_report_has_preference_agreement_bradley_terry_and_left_choice_rates(settings):
    settings.CONCORD_QC_BOOTSTRAP = 100
    study = simulate.pairwise_study()
    report = report_for(study)
    keys = [s["key"] for s in report.summary["agreement"]["statistics"]]
    # percent agreement with ties as an answer is preference agreement with ties: shown once
    assert keys == ["percent", "preference_without_ties"]
    assert "preference agreement with ties" in stat(report, "percent")["reading"]
    rows = list(
        Label.objects.filter(study=study)
        .order_by("id")
        .values_list("unit_id", "annotator_id", "winner__name", "choice")
    )
    items = np.array([r[0] for r in rows])
    raters = np.array([r[1] for r in rows])
    choices = np.array([r[2] or "tie" for r in rows])
    for ties, key in (("include", "percent"), ("exclude", "preference_without_ties")):
        direct = ag.preference_agreement(items, raters, choices, ties=ties)
        assert stat(report, key)["value"] == pytest.approx(direct.value)
    pairwise = report.summary["pairwise"]
    assert pairwise["strengths"][0]["system"] == "alpha"
    assert pairwise["strengths"][0]["strength"] > 0
    left = np.array([r[3] for r in rows])
    non_tie = left != "tie"
    assert pairwise["left_choice"]["overall_share"] == pytest.approx(
        (left[non_tie] == "left").mean()
    )
    # Leads read their raters by username, as everywhere else on the dashboard.
    names = set(Label.objects.filter(study=study).values_list("annotator__username", flat=True))
    assert {a["annotator"] for a in pairwise["left_choice"]["annotators"]} == names


def test_likert_scores_are_labelled_as_whole_numbers_and_keep_their_numeric_value():
    report = report_for(simulate.likert_study())
    dist = report.summary["agreement"]["distribution"]
    assert [d["label"] for d in dist] == ["1", "2", "3", "4", "5"]
    assert [d["value"] for d in dist] == [1.0, 2.0, 3.0, 4.0, 5.0]
    agg = report.summary["aggregation"]
    assert agg["classes"] == [category_label(v) for v in agg["class_values"]]
    assert all(c["label"] == str(int(c["value"])) for c in agg["class_counts"])
    assert agg["disagreements"]
    for d in agg["disagreements"]:
        assert "." not in d["majority"] + d["dawid_skene"]
        assert sum(v["count"] for v in d["votes"]) == d["labels"]
        assert {v["label"] for v in d["votes"]} <= set(agg["classes"])
    assert all(isinstance(v, float) for v in report.items["majority"] + agg["class_values"])


def test_category_labels_drop_only_a_zero_fraction():
    assert [category_label(v) for v in (3.0, np.float64(2.0), 2.5, 7, "safe", "1.0")] == [
        "3",
        "2",
        "2.5",
        "7",
        "safe",
        "1.0",
    ]


def test_stars_follow_table_1():
    assert [stars(p) for p in (0.005, 0.02, 0.07, 0.2, None)] == ["***", "**", "*", "", ""]


def test_settings_changes_change_the_fingerprint():
    study, comparisons = simulate.spa_study([(0.6, "")], n_annotators=5)
    before = loaders.report_config(study).settings_hash
    Comparison.objects.filter(pk=comparisons[0].pk).update(expected="x")
    assert loaders.report_config(study).settings_hash != before


def test_prevalence_paradox_is_explained_below_80_percent_raw_agreement_too():
    """The issue's case: about 65% raw agreement beside a kappa near zero (random labels, 80%
    of them in one class)."""
    rng = np.random.default_rng(12)
    study = make_study(Study.TaskKind.CATEGORICAL, n_prompts=60, systems=("alpha",))
    people = simulate.annotators(3, prefix=f"p{study.pk}r")
    rows = [
        {"unit": u, "annotator": p, "choice": "safe" if rng.random() < 0.8 else "unsafe"}
        for u in study.units.order_by("id")
        for p in people
    ]
    add_labels(study, rows)
    report = report_for(study)
    percent, kappa = stat(report, "percent")["value"], stat(report, "chance_corrected")["value"]
    assert 0.5 < percent < 0.8 and abs(kappa) < 0.15
    assert "prevalence paradox" in report.summary["agreement"]["prevalence_warning"]
    assert "interval crosses 0" in stat(report, "chance_corrected")["reading"]


def test_no_paradox_note_when_classes_are_balanced():
    study, _ = simulate.categorical_study(n_prompts=40, prevalence=0.5, accuracy=0.62, seed=3)
    report = report_for(study)
    assert "prevalence_warning" not in report.summary["agreement"]
