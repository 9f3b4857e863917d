"""Per-system means with CI and n, raw, for Likert, continuous, ordinal and SPA-page ratings:
each equals analysis.summaries.group_means over item means computed independently here."""

import numpy as np
import pytest

from analysis import summaries
from annotation.models import OutputRating, Study, Unit
from qc import loaders
from qc.reports import build_report
from tests.factories import make_study
from tests.qc import simulate
from tests.qc.labels import add_labels

pytestmark = pytest.mark.django_db


def report_for(study):
    return build_report(loaders.load_snapshot(study), loaders.report_config(study))


def rated_study(kind, values, seed=8):
    rng = np.random.default_rng(seed)
    study = make_study(kind, n_prompts=9, systems=("alpha", "beta", "gamma"))
    people = simulate.annotators(4, prefix=f"m{study.pk}r")
    field = "choice" if kind == Study.TaskKind.ORDINAL else "score"
    rows = []
    for unit in Unit.objects.filter(study=study).order_by("id"):
        for person in people[: int(rng.integers(2, 5))]:
            rows.append({"unit": unit, "annotator": person, field: values(rng)})
    add_labels(study, rows)
    return study


def expected_means(study, to_number):
    """Independent computation: item means per unit (ORM), then the group means per system."""
    per_unit = {}
    for unit in Unit.objects.filter(study=study).prefetch_related("outputs", "labels"):
        vals = [to_number(label) for label in unit.labels.all()]
        if vals:
            per_unit[unit.pk] = (unit.outputs.get().system.name, float(np.mean(vals)), len(vals))
    systems = [v[0] for v in per_unit.values()]
    means = summaries.group_means(systems, [v[1] for v in per_unit.values()])
    ratings = {s: sum(v[2] for v in per_unit.values() if v[0] == s) for s in set(systems)}
    return means, ratings


@pytest.mark.parametrize(
    "kind, values, to_number",
    [
        (Study.TaskKind.LIKERT, lambda rng: float(rng.integers(1, 6)), lambda lab: lab.score),
        (Study.TaskKind.CONTINUOUS, lambda rng: float(rng.uniform(0, 100)), lambda lab: lab.score),
        (
            Study.TaskKind.ORDINAL,
            lambda rng: ["fully", "partially", "not"][int(rng.integers(0, 3))],
            lambda lab: ["fully", "partially", "not"].index(lab.choice) + 1,
        ),
    ],
)
def test_per_system_means_equal_the_analysis_function(kind, values, to_number):
    study = rated_study(kind, values)
    section = report_for(study).summary["systems"]
    means, ratings = expected_means(study, to_number)
    rows = {r["system"]: r for r in section["systems"]}
    assert [r["system"] for r in section["systems"]] == ["alpha", "beta", "gamma"]
    for i, name in enumerate(means.groups.tolist()):
        row = rows[name]
        assert row["mean"] == pytest.approx(means.mean[i])
        assert row["ci_low"] == pytest.approx(means.ci_low[i])
        assert row["ci_high"] == pytest.approx(means.ci_high[i])
        assert row["n_items"] == means.n[i] == 9
        assert row["n_ratings"] == ratings[name]
        assert row["ci_low"] < row["mean"] < row["ci_high"]
    if kind == Study.TaskKind.ORDINAL:
        assert "1 = fully" in section["scale"]


def test_group_means_match_scipy_t_intervals():
    from scipy import stats

    rng = np.random.default_rng(2)
    groups = rng.choice(["a", "b", "c"], size=60)
    values = rng.normal(3, 1, size=60)
    res = summaries.group_means(groups, values)
    for i, g in enumerate(res.groups.tolist()):
        v = values[groups == g]
        low, high = stats.t.interval(0.95, v.size - 1, loc=v.mean(), scale=stats.sem(v))
        assert res.mean[i] == pytest.approx(v.mean())
        assert (res.ci_low[i], res.ci_high[i]) == pytest.approx((low, high))
        assert res.n[i] == v.size


def test_spa_page_ratings_get_per_system_means():
    prefs = [(0.7, "x"), (0.4, "y")]
    likert = {"s0": 4.2, "s1": 3.0, "s2": 3.5}
    study, _ = simulate.spa_study(prefs, n_annotators=12, seed=4, likert=likert)
    section = report_for(study).summary["systems"]
    rows = {r["system"]: r for r in section["systems"]}
    ratings = OutputRating.objects.filter(label__study=study).select_related("output__system")
    per_output = {}
    for r in ratings:
        per_output.setdefault(r.output_id, (r.output.system.name, []))[1].append(r.score)
    names = [v[0] for v in per_output.values()]
    means = summaries.group_means(names, [np.mean(v[1]) for v in per_output.values()])
    for i, name in enumerate(means.groups.tolist()):
        assert rows[name]["mean"] == pytest.approx(means.mean[i])
        assert rows[name]["n_items"] == 5  # five outputs per writer
        assert rows[name]["n_ratings"] == 5 * 12
    assert rows["s0"]["mean"] > rows["s1"]["mean"]


def test_categorical_studies_have_no_means_section():
    study, _ = simulate.categorical_study(n_prompts=5)
    assert "systems" not in report_for(study).summary


def test_wilson_interval_stays_in_range_and_matches_statsmodels():
    from statsmodels.stats.proportion import proportion_confint

    for k, n in [(0, 5), (5, 5), (3, 7), (40, 41)]:
        res = summaries.proportion(k, n)
        low, high = proportion_confint(k, n, alpha=0.05, method="wilson")
        assert (res.ci_low, res.ci_high) == pytest.approx((low, high))
        assert 0 <= res.ci_low <= res.value <= res.ci_high <= 1
    assert np.isnan(summaries.proportion(0, 0).value)
